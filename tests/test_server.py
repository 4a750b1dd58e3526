"""The contract over real HTTP, through waitress, on catalogues the other tests never use;
and a catalogue replaced while several threads read."""

import json
import subprocess
import threading
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from demoserv.loader.sources import load_catalogue
from demoserv.server import launcher

from . import catalogue_factory, installed, oracle
from .conftest import SITE_URL
from .test_records import expected

ROOT = Path(__file__).resolve().parent.parent


def environment(**settings):
    """The environment of a server the tests start: no DEMOSERV_* setting of this one's,
    the suite's site URL, no seed catalogue, and ``settings``."""
    return installed.environment(
        **{"DEMOSERV_SITE_URL": SITE_URL, "DEMOSERV_SEED_DIR": "", **settings}
    )


class Checked:
    """What the tests ask of a server they start (a ``launcher.Server``): answers to
    GET, and a log without a traceback once it has stopped."""

    def get(self, path_or_url):
        address = path_or_url if path_or_url.startswith("http") else self.url + path_or_url
        try:
            with urllib.request.urlopen(address, timeout=30) as response:
                return response.status, dict(response.headers), json.loads(response.read())
        except urllib.error.HTTPError as error:
            with error:
                return error.code, dict(error.headers), json.loads(error.read())

    def __exit__(self, *exc):
        self.stop()
        log = self.log_text()
        assert "Traceback" not in log, log


class Server(Checked, launcher.WaitressServe):
    """``waitress-serve --call demoserv:serving_app`` on a free loopback port."""

    def __init__(self, database, threads=4, options=(), **settings):
        super().__init__(
            f"--threads={threads}",
            *options,
            env=environment(DEMOSERV_DATABASE=str(database), **settings),
        )


@pytest.fixture(scope="module")
def unseen(tmp_path_factory):
    folder = tmp_path_factory.mktemp("unseen")
    catalogue = catalogue_factory.build(
        seed=20261122,
        productions=333,
        parties=212,
        party_series=101,
        bbses=199,
        releasers=120,
        platforms=45,
    )
    catalogue_factory.write(catalogue, folder / "files")
    load_catalogue(folder / "files", folder / "db.sqlite3")
    return catalogue, folder / "db.sqlite3"


def walk_http(server, url):
    records, pages = [], 0
    while url:
        pages += 1
        assert pages < 50
        status, headers, body = server.get(url)
        assert status == 200, body
        assert headers["Content-Type"] == "application/json"
        assert headers["Allow"] == "GET, HEAD, OPTIONS"
        records.extend(body["results"])
        url = body["next"]
    return records


def test_contract_over_http_on_an_unseen_catalogue(unseen):
    catalogue, database = unseen
    with Server(database) as server:
        api = f"{server.url}/api/v1/"
        for resource, keys in oracle.KEYS.items():
            everything = oracle.all_records(catalogue, resource)
            for key in keys:
                for sign in ("", "-"):
                    got = walk_http(server, f"/api/v1/{resource}/?ordering={sign}{key}&format=api")
                    wanted = oracle.ordered(resource, everything, sign + key)
                    assert [r["id"] for r in got] == [r["id"] for r in wanted], (
                        resource,
                        sign + key,
                    )
            got = walk_http(server, f"/api/v1/{resource}/?ordering=id")
            for actual, record in zip(got, sorted(everything, key=lambda r: r["id"])):
                wanted = expected(resource, record)
                wanted = json.loads(json.dumps(wanted).replace("http://localhost/api/v1/", api))
                assert actual == wanted
        status, _, body = server.get("/api/v1/productions/?page=99")
        assert (status, body) == (404, {"detail": "Invalid page."})


def test_replacement_while_threads_read(tmp_path):
    """Every answer during loads is a 200 whose page is wholly one catalogue's."""
    catalogues = {}
    for name, seed, size in (("old", 5, 140), ("new", 6, 260)):
        catalogue = catalogue_factory.build(seed=seed, productions=size)
        for production in catalogue["productions"]:
            production["tags"] = [f"catalogue-{name}"]
            for nick in production["author_nicks"]:
                nick["name"] = f"{name}:{nick['name']}"
        catalogues[size] = name
        catalogue_factory.write(catalogue, tmp_path / name)
    database = tmp_path / "served.sqlite3"
    load_catalogue(tmp_path / "old", database)

    stop = threading.Event()
    seen = {"old": 0, "new": 0}
    failures = []
    lock = threading.Lock()

    started = threading.Barrier(5)  # four readers and the loader

    def read(server, page):
        for count in range(20000):  # bounded; ends far sooner when told to stop
            status, _, body = server.get(
                f"/api/v1/productions/?page={page}&ordering=-release_date_date"
            )
            if status != 200:
                failures.append((status, body))
                return
            name = catalogues.get(body["count"])
            marks = {tag for r in body["results"] for tag in r["tags"]}
            nick_marks = {
                n["name"].split(":")[0] for r in body["results"] for n in r["author_nicks"]
            }
            if name is None or marks != {f"catalogue-{name}"} or nick_marks - {name}:
                failures.append(("mixed", body["count"], marks, nick_marks))
                return
            with lock:
                seen[name] += 1
            if count == 0:
                started.wait(timeout=60)  # every reader has read the old catalogue
            if stop.is_set() and name == "old":
                return

    with Server(database) as server:
        readers = [threading.Thread(target=read, args=(server, page)) for page in (1, 1, 2, 2)]
        for reader in readers:
            reader.start()
        started.wait(timeout=60)
        for name in ("new", "old"):
            load_catalogue(tmp_path / name, database)
        stop.set()
        for reader in readers:
            reader.join(timeout=120)
        assert not any(reader.is_alive() for reader in readers)
    assert failures == []
    assert seen["old"] > 0 and seen["new"] > 0


def test_behind_a_reverse_proxy_with_the_readme_options(unseen):
    """README's waitress options for a proxy: the url fields carry the scheme and host
    that clients used, as the proxy reports them."""
    _, database = unseen
    options = [
        "--trusted-proxy=127.0.0.1",
        "--trusted-proxy-headers=x-forwarded-proto x-forwarded-host x-forwarded-port",
    ]
    with Server(database, options=options) as server:
        request = urllib.request.Request(
            f"{server.url}/api/v1/productions/?page=2",
            headers={
                "X-Forwarded-Proto": "https",
                "X-Forwarded-Host": "api.example.org",
                "X-Forwarded-Port": "443",
            },
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            body = json.loads(response.read())
    assert body["next"] == "https://api.example.org/api/v1/productions/?page=3"
    assert body["results"][0]["url"].startswith("https://api.example.org/api/v1/productions/")


@pytest.mark.parametrize(
    "served",
    [launcher.SERVING_APP, ["wsgi:app"]],
    ids=["waitress-serve --call demoserv:serving_app", "wsgi.py"],
)
def test_a_wsgi_server_refuses_a_named_database_that_does_not_exist(tmp_path, served):
    """It stops at start, exit 2, with one log line saying how to make the database; it
    makes nothing (the folder of the path neither)."""
    typo = tmp_path / "typo" / "x.sqlite3"
    result = subprocess.run(
        [*launcher.WAITRESS_SERVE, "--listen=127.0.0.1:0", *served],
        cwd=ROOT,  # where wsgi.py is
        env=environment(DEMOSERV_DATABASE=str(typo)),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=installed.TIMEOUT,
    )
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    logged = json.loads(line)
    assert (logged["level"], logged["logger"]) == ("ERROR", "demoserv.web.factory")
    assert logged["message"] == (
        f"{typo} does not exist (database from DEMOSERV_DATABASE), and only the default "
        f"database is built from the seed: create it with demoserv load seed --database "
        f"{typo} (or load another catalogue)"
    )
    assert list(tmp_path.iterdir()) == []
