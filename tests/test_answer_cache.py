"""Answers kept whole (demoserv/web/kept_answers.py): what is kept, what is not, the bound
as a setting, and a new catalogue answered at once (the cache itself:
tests/test_byte_cache.py). The suite's own requests are each compared cold and warm as
well (tests/answers_twice.py)."""

import sqlite3
import threading
import time

import pytest

from demoserv import create_app
from demoserv.loader.install import rollback
from demoserv.loader.sources import load_catalogue
from demoserv.web import kept_answers
from demoserv.web.kept_answers import Answer
from demoserv.web.request_limits import MAX_HEADERS

from . import catalogue_factory
from .test_server import Server

PAGE = "/api/v1/productions/?page=2&ordering=-id"


def test_every_kind_of_answer_is_kept(app, client):
    """Each is kept, so the suite's check (answers_twice) compares it cold and warm."""
    kept = app.extensions["demoserv.web.kept_answers"]
    tag = client.get(PAGE).headers["ETag"]
    requests = [
        ("GET", PAGE, {}),
        ("HEAD", PAGE, {}),
        ("GET", PAGE, {"If-None-Match": tag}),
        ("HEAD", PAGE, {"If-None-Match": tag}),
        ("GET", PAGE, {"If-None-Match": "*"}),
        ("GET", PAGE, {"Accept-Encoding": "gzip"}),
        ("GET", PAGE, {"Accept-Encoding": "br"}),
        ("GET", PAGE, {"Accept": "application/json; indent=4"}),
        ("GET", "/api/v1/platforms/?format=jsonp&callback=app.show", {}),
        ("GET", "/api/v1/platforms/", {"Accept": "application/javascript"}),
        ("GET", "/api/v1/productions.json?fields=id,title", {}),
        ("GET", "/api/v1/platforms/1.api", {}),
        ("GET", "/api/v1/", {}),
        ("GET", "/api/v1/openapi.json", {}),
        ("GET", "/api/v1/docs/", {}),
    ]
    for method, path, headers in requests:
        kept.clear()
        response = client.open(path, method=method, headers=headers)
        assert response.status_code in (200, 304), (path, headers)
        assert len(kept) == 1, (method, path, headers)


def test_the_suites_check_fails_a_kept_answer_unlike_the_built_one(client, monkeypatch):
    """answers_twice compares the kept answer with the one built, byte for byte."""
    monkeypatch.setattr(
        kept_answers,
        "Answer",
        lambda key, status, headers, body: Answer(key, status, headers, body + b" "),
    )
    with pytest.raises(AssertionError, match="productions"):
        client.get(PAGE)


def test_what_is_not_fully_determined_is_not_kept(app, client):
    kept = app.extensions["demoserv.web.kept_answers"]
    for method, path, headers, status in (
        ("GET", "/api/v1/productions/?page=99", {}, 404),
        ("GET", "/api/v1/productions/?format=xml", {}, 400),
        ("GET", "/api/v1/platforms/", {"Accept": "text/csv"}, 406),
        ("GET", "/api/v1/platforms", {}, 308),
        ("GET", "/api/v1/nothing/", {}, 404),
        ("OPTIONS", "/api/v1/platforms/", {}, 200),
        ("GET", "/api/v1/status/", {}, 200),
        ("POST", "/api/v1/platforms/", {}, 405),
    ):
        response = client.open(path, method=method, headers=headers)
        assert response.status_code == status, (path, response.data)
        assert len(kept) == 0, (method, path, headers)


def test_a_repeated_request_is_not_built_again(kept_app, monkeypatch):
    from demoserv.web.views.resources import Serving

    client = kept_app.test_client()
    first = client.get("/api/v1/platforms/")

    def broken(*args):
        raise RuntimeError("built again")

    monkeypatch.setattr(Serving, "fetch_page", broken)
    again = client.get("/api/v1/platforms/")
    assert (again.status_code, again.headers, again.data) == (
        first.status_code,
        first.headers,
        first.data,
    )
    # Another form of the same page is another answer: built (here, failing).
    assert client.get("/api/v1/platforms/", headers={"Accept-Encoding": "gzip"}).status_code == 500


def test_headers_too_large_are_refused_though_the_page_is_kept(kept_app):
    client = kept_app.test_client()
    assert client.get(PAGE).status_code == 200
    response = client.get(PAGE, headers={"X-Large": "x" * MAX_HEADERS})
    assert response.status_code == 431


@pytest.mark.parametrize(
    "body", [{"data": b"abc"}, {"data": b"x", "headers": {"Transfer-Encoding": "chunked"}}]
)
def test_a_body_is_refused_though_the_page_is_kept(kept_app, body):
    """Under any server: the kept answer is not given to a request the app refuses."""
    client = kept_app.test_client()
    assert client.get(PAGE).status_code == 200
    response = client.get(PAGE, **body)
    assert response.status_code == 400
    assert "takes no body" in response.json["detail"]


def test_no_budget_keeps_nothing(make_app, loaded_database):
    app = make_app(loaded_database, ANSWER_CACHE_BYTES=0)
    assert app.test_client().get(PAGE).status_code == 200
    assert "demoserv.web.kept_answers" not in app.extensions


def test_the_budget_is_a_setting(loaded_database, monkeypatch):
    monkeypatch.setenv("DEMOSERV_DATABASE", str(loaded_database))
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    monkeypatch.setenv("DEMOSERV_ANSWER_CACHE_BYTES", "1000000")
    assert create_app().extensions["demoserv.web.kept_answers"].budget == 1_000_000


def _version(database):
    connection = sqlite3.connect(database)
    try:
        return connection.execute("SELECT version FROM catalogue_info").fetchone()[0]
    finally:
        connection.close()


def test_a_switched_catalogue_is_answered_at_once(tmp_path):
    """Readers repeat the same pages (kept answers) while loads and rollbacks switch the
    file: every answer's X-Catalogue-Version is its body's catalogue, and every request
    sent after a switch returned (and answered before the next began) is answered from
    the catalogue switched to."""
    names = {}
    for name, seed, size in (("old", 5, 140), ("new", 6, 260)):
        catalogue = catalogue_factory.build(seed=seed, productions=size)
        catalogue_factory.write(catalogue, tmp_path / name)
        load_catalogue(tmp_path / name, tmp_path / f"{name}.sqlite3")
        names[_version(tmp_path / f"{name}.sqlite3")] = (name, size)
    database = tmp_path / "served.sqlite3"
    load_catalogue(tmp_path / "old", database)
    answers, failures, stop = [], [], threading.Event()
    started = threading.Barrier(5)
    answered = threading.Condition()

    def read(server, path):
        for count in range(20000):  # bounded; ends far sooner when told to stop
            sent = time.monotonic()
            status, headers, body = server.get(path)
            if status != 200 or headers.get("X-Catalogue-Version") not in names:
                failures.append((status, headers))
                return
            name, size = names[headers["X-Catalogue-Version"]]
            if body["count"] != size:
                failures.append(("mixed", name, body["count"]))
                return
            with answered:
                answers.append((sent, time.monotonic(), name))
                answered.notify_all()
            if count == 0:
                started.wait(timeout=60)
            if stop.is_set():
                return

    switches = []  # (started, returned, name served after it)
    with Server(database) as server:
        readers = [
            threading.Thread(target=read, args=(server, path))
            for path in ("/api/v1/productions/", "/api/v1/productions/") * 2
        ]
        for reader in readers:
            reader.start()
        started.wait(timeout=60)
        for name, switch in (
            ("new", lambda: load_catalogue(tmp_path / "new", database)),
            ("old", lambda: rollback(database)),
            ("new", lambda: rollback(database)),
            ("old", lambda: load_catalogue(tmp_path / "old", database)),
        ):
            before = time.monotonic()
            switch()
            switches.append((before, time.monotonic(), name))
            with answered:  # kept answers of this catalogue served before the next switch
                seen = len(answers)
                answered.wait_for(lambda: len(answers) >= seen + 20 or failures, timeout=60)
        stop.set()
        for reader in readers:
            reader.join(timeout=120)
        assert not any(reader.is_alive() for reader in readers)
    assert failures == []
    for (_, returned, name), following in zip(switches, [*switches[1:], (float("inf"),)]):
        # Answers to requests sent after the switch returned and answered before the next
        during = {answer for sent, got, answer in answers if returned < sent and got < following[0]}
        assert during == {name}
