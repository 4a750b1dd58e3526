"""``/api/v1/changes/``: net changes over spans of one, two and three loads, each equal to
the difference of the detail records the two files serve; the last load's changes;
``since`` the served version; pages; bad input; an unknown version after a rollback; and
the example client kept in step with a real server over three loads."""

import http.server
import importlib.util
import json
import os
import random
import shutil
import sqlite3
import threading
import urllib.error
from pathlib import Path

import pytest

from demoserv.loader import install
from demoserv.loader.feed import build as build_feed
from demoserv.loader.sources import load_catalogue
from demoserv.resources import BY_NAME
from demoserv.store import facts, snapshot
from demoserv.store.snapshot import Address
from demoserv.web.db import get_database
from demoserv.web.kept_answers import KeptAnswers
from demoserv.web.views import changes as changes_module

from .conftest import SITE_URL, TEST_CLIENT_ADDRESS, refusing_url, walk
from .test_history import ADDED, UNTOUCHED, expected_changes, loads  # noqa: F401 (fixture)
from .test_query_plans import catch_statements
from .test_server import Server

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "follow_changes.py"


@pytest.fixture
def client(make_app, loads):  # noqa: F811 (the fixture)
    _, files, _ = loads
    return make_app(files[3]).test_client()


def feed(client, url):
    """{(resource, id): entry} of every page from ``url``, in the order served."""
    entries = {}
    for page in walk(client, url):
        for entry in page["results"]:
            key = (entry["resource"], entry["id"])
            assert key not in entries
            entries[key] = entry
    return entries


def changes_of(entries):
    return {key: entry["change"] for key, entry in entries.items()}


@pytest.mark.parametrize("since", [1, 2, 3])
def test_the_net_change_since_each_version(client, loads, since):  # noqa: F811
    _, files, versions = loads
    entries = feed(client, f"/api/v1/changes/?since={versions[since - 1]}")
    assert changes_of(entries) == expected_changes(files[since - 1], files[3])
    # Ordered by the load that last changed each record, then resource and id.
    number = {version: position for position, version in enumerate(versions, 1)}
    order = [(number[entry["version"]], *key) for key, entry in entries.items()]
    assert order == sorted(order)


def test_a_record_added_then_removed_or_removed_then_restored_does_not_appear(
    client,
    loads,  # noqa: F811
):
    _, _, versions = loads
    over_all = feed(client, f"/api/v1/changes/?since={versions[0]}")
    assert ("productions", ADDED) not in over_all
    assert ("productions", UNTOUCHED) not in over_all
    # Renamed by the second load, unchanged since: that load's version and time.
    renamed = over_all[("releasers", 357)]
    assert renamed["change"] == "changed" and renamed["version"] == versions[1]
    since_second = changes_of(feed(client, f"/api/v1/changes/?since={versions[1]}"))
    assert since_second[("productions", ADDED)] == "removed"
    assert since_second[("productions", UNTOUCHED)] == "added"


def test_entries_link_the_records_served(client, loads):  # noqa: F811
    _, _, versions = loads
    entries = feed(client, f"/api/v1/changes/?since={versions[1]}&format=json")
    removed = entries[("productions", ADDED)]
    assert removed["url"] is None
    present = [item for item in entries.items() if item[1]["change"] != "removed"]
    for (resource, record_id), entry in present[:20]:
        assert entry["url"] == f"http://localhost/api/v1/{resource}/{record_id}/?format=json"
        assert client.get(entry["url"]).json["id"] == record_id


def test_without_since_the_changes_of_the_last_load(client, loads):  # noqa: F811
    _, files, _ = loads
    entries = feed(client, "/api/v1/changes/")
    assert changes_of(entries) == expected_changes(files[2], files[3])
    assert len(entries) > 100  # more than a page: the walk followed next


def test_since_the_served_version_is_an_empty_page(client, loads):  # noqa: F811
    _, _, versions = loads
    response = client.get(f"/api/v1/changes/?since={versions[3]}")
    assert response.json == {"count": 0, "next": None, "previous": None, "results": []}
    assert response.headers["X-Catalogue-Version"] == versions[3]


def test_a_resource_filter(client, loads):  # noqa: F811
    _, files, versions = loads
    entries = feed(client, f"/api/v1/changes/?since={versions[0]}&resource=releasers")
    expected = expected_changes(files[0], files[3])
    assert changes_of(entries) == {key: c for key, c in expected.items() if key[0] == "releasers"}


def test_pages_are_linked_as_every_list(client):
    first = client.get("/api/v1/changes/").json
    assert first["next"] == "http://localhost/api/v1/changes/?page=2"
    last = client.get("/api/v1/changes/?page=last").json
    assert last["next"] is None and last["previous"] is not None
    assert len(first["results"]) == 100


@pytest.mark.parametrize(
    "query, status, words",
    [
        ("since=xyz", 400, 'Invalid value for "since"'),
        ("since=" + "A" * 32, 400, 'Invalid value for "since"'),
        ("resource=nothing", 400, 'Invalid value for "resource"'),
        ("page=100000000000000000000", 404, "Invalid page."),
        ("since=" + "0" * 32, 410, "fetch the lists again"),
    ],
)
def test_bad_input(client, query, status, words):
    response = client.get(f"/api/v1/changes/?{query}")
    assert response.status_code == status
    assert words in response.json["detail"]


def test_an_unknown_version_after_a_rollback_is_gone(make_app, loads, tmp_path):  # noqa: F811
    folders, files, versions = loads
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[1], target)
    load_catalogue(folders[2], target)
    install.rollback(target)
    client = make_app(target).test_client()
    gone = client.get(f"/api/v1/changes/?since={versions[2]}")
    assert gone.status_code == 410
    assert "fetch the lists again" in gone.json["detail"]
    assert client.get(f"/api/v1/changes/?since={versions[0]}").json["count"] > 0


def test_cached_and_conditional_like_every_answer(client):
    response = client.get("/api/v1/changes/")
    assert response.headers["ETag"]
    again = client.get("/api/v1/changes/", headers={"If-None-Match": response.headers["ETag"]})
    assert again.status_code == 304


def test_described_but_not_in_the_api_root(client):
    assert "changes" not in client.get("/api/v1/").json
    described = client.options("/api/v1/changes/").json
    assert {"since", "resource", "page"} <= set(described["parameters"])
    spec = client.get("/api/v1/openapi.json").json
    assert "410" in spec["paths"]["/api/v1/changes/"]["get"]["responses"]


def test_status_answers_the_history(client, loads):  # noqa: F811
    _, _, versions = loads
    changes = client.get("/api/v1/status/").json["changes"]
    assert changes["last_load"]["version"] == versions[3]
    assert changes["since"]["version"] == versions[0]


def _example():
    spec = importlib.util.spec_from_file_location("follow_changes", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _served(server):
    """{resource/id: detail record} of every record the server serves."""
    records = {}
    _, _, root = server.get("/api/v1/")
    for resource, url in root.items():
        while url:
            _, _, page = server.get(url)
            for record in page["results"]:
                records[f"{resource}/{record['id']}"] = server.get(record["url"])[2]
            url = page["next"]
    return records


def _requests_of(example, monkeypatch):
    """The requests the example client makes from now on (a URL or a Request each)."""
    requests = []
    urlopen = example.urllib.request.urlopen
    monkeypatch.setattr(
        example.urllib.request,
        "urlopen",
        lambda request, **options: requests.append(request) or urlopen(request, **options),
    )
    return requests


def test_the_example_client_stays_in_step_over_three_loads(loads, tmp_path, monkeypatch):  # noqa: F811
    """From the snapshot where the mirror writes one for its address (else every list
    and record), then the changes since its version after each load: the copy is the
    next load's snapshot and every record served; after a rollback (its version gone)
    from the snapshot of the catalogue rolled back to."""
    folders, files, versions = loads
    example = _example()
    requests = _requests_of(example, monkeypatch)
    target = tmp_path / "served.sqlite3"
    copy = tmp_path / "copy.json"
    shutil.copyfile(files[0], target)
    with Server(target) as server:
        api_root = f"{server.url}/api/v1/"
        at = [Address(api_root, SITE_URL, "service_url")]
        assert example.fetch_snapshot(api_root) is None  # a file built without one
        assert example.follow(api_root, copy)["version"] == versions[0]
        load_catalogue(folders[0], target, snapshot_at=at)  # the same records: written
        assert example.fetch_snapshot(api_root) == json.loads(copy.read_text())
        copy.unlink()
        requests.clear()
        assert example.follow(api_root, copy)["version"] == versions[0]
        assert len(requests) == 1 + len(BY_NAME)  # the manifest and each resource's file
        for number in (1, 2, 3):
            load_catalogue(folders[number], target, snapshot_at=at)
            kept = example.follow(api_root, copy)
            assert kept["version"] == versions[number]
            assert kept == json.loads(copy.read_text())
            assert kept == example.fetch_snapshot(api_root)
        # Each load's changes applied in turn give every record the server serves.
        assert kept["records"] == _served(server)
        # After a rollback its version is gone (410): it fetches everything again.
        install.rollback(target, snapshot_at=at)
        kept = example.follow(api_root, copy)
        assert kept["version"] == versions[2]
        assert kept["records"] == _served(server)


def test_the_example_client_resumes_a_cut_download(loaded_database, tmp_path, monkeypatch):
    """A file it has part of is asked for from there (Range); one whose bytes are not
    the manifest's is fetched whole again."""
    example = _example()
    requests = _requests_of(example, monkeypatch)
    version = facts.version_and_time(loaded_database).version
    key = TEST_CLIENT_ADDRESS.key
    entry = snapshot.read_manifest(loaded_database, version, key)["resources"]["productions"]
    whole = (
        snapshot.files_folder(loaded_database, version, key) / "productions.ndjson.gz"
    ).read_bytes()
    path = tmp_path / "productions.ndjson.gz"
    with Server(loaded_database) as server:
        entry["url"] = f"{server.url}/snapshot/{snapshot.file_path(version, key, 'productions')}"
        path.write_bytes(whole[:100])
        assert example.download(entry, path).read_bytes() == whole
        path.write_bytes(b"x" * 100)
        assert example.download(entry, path).read_bytes() == whole
    ranges = [request.get_header("Range") for request in requests]
    assert ranges == ["bytes=100-", "bytes=100-", None]


class Scripted(http.server.BaseHTTPRequestHandler):
    """Answers each path with the next of its scripted (status, version) answers (the
    last one again once they run out); "hold" answers nothing until the test ends."""

    def do_GET(self):
        answers = self.server.script[self.path]
        status, version = answers.pop(0) if len(answers) > 1 else answers[0]
        self.server.requests.append(self.path)
        if status == "hold":
            self.server.release.wait(timeout=30)
            return
        body = json.dumps({"path": self.path}).encode()
        self.send_response(status)
        self.send_header("X-Catalogue-Version", version)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted(monkeypatch):
    """A server on 127.0.0.1 answering as the test scripts it; the example client
    patient for 0.5 s and retrying at once."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.daemon_threads = True
    server.script, server.requests, server.release = {}, [], threading.Event()
    thread = threading.Thread(target=server.serve_forever)
    thread.start()
    example = _example()
    monkeypatch.setattr(example, "TIMEOUT", 0.5)
    monkeypatch.setattr(example, "PAUSE", 0)
    yield server, example, f"http://127.0.0.1:{server.server_address[1]}"
    server.release.set()
    server.shutdown()
    thread.join()
    server.server_close()


def test_the_example_client_retries_a_5xx(scripted):
    server, example, base = scripted
    server.script["/a"] = [(503, "v1"), (200, "v1")]
    assert example.Session().get(base + "/a") == {"path": "/a"}
    assert server.requests == ["/a", "/a"]
    server.script["/b"] = [(500, "v1")]
    with pytest.raises(urllib.error.HTTPError):
        example.Session().get(base + "/b")
    assert server.requests.count("/b") == example.ATTEMPTS


def test_the_example_client_gives_up_on_a_silent_server(scripted):
    server, example, base = scripted
    server.script["/silent"] = [("hold", None)]
    with pytest.raises(TimeoutError):
        example.Session().get(base + "/silent")
    assert server.requests.count("/silent") == example.ATTEMPTS


def test_the_example_client_gives_up_without_a_server(scripted):
    _, example, _ = scripted
    with refusing_url() as url, pytest.raises(urllib.error.URLError):
        example.Session().get(url)


def test_the_example_client_notices_gone_and_moved(scripted):
    server, example, base = scripted
    server.script["/gone"] = [(410, "v1")]
    with pytest.raises(example.Gone):
        example.Session().get(base + "/gone")
    server.script["/one"] = [(200, "v1")]
    server.script["/two"] = [(200, "v2")]
    session = example.Session()
    session.get(base + "/one")
    with pytest.raises(example.Moved):
        session.get(base + "/two")


# The feed's answers built at load (loader/feed.py), against the history itself.

# What the feed answered before its answers were built at load: the net change of each
# record, grouped from the stored change rows of the span at request time.
REFERENCE = """
WITH span AS (
  SELECT resource, id, min(load_number) AS first, max(load_number) AS last
  FROM catalogue_changes WHERE load_number > :since
  AND (:resource IS NULL OR resource = :resource) GROUP BY resource, id)
SELECT span.resource, span.id, first_change.digest_before, last_change.digest_after,
  loads.version, loads.loaded_at
FROM span
JOIN catalogue_changes AS first_change ON first_change.resource = span.resource
  AND first_change.id = span.id AND first_change.load_number = span.first
JOIN catalogue_changes AS last_change ON last_change.resource = span.resource
  AND last_change.id = span.id AND last_change.load_number = span.last
JOIN catalogue_loads AS loads ON loads.load_number = span.last
WHERE first_change.digest_before IS NOT last_change.digest_after
ORDER BY span.last, span.resource, span.id
"""


def reference_feed(path, since, resource):
    """[(resource, id, change, version, loaded_at)] since load ``since``, from the rows."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(REFERENCE, {"since": since, "resource": resource}).fetchall()
    finally:
        connection.close()
    return [
        (name, record_id, "added" if before is None else "removed" if after is None else "changed",
         version, loaded_at)
        for name, record_id, before, after, version, loaded_at in rows
    ]  # fmt: skip


def served_feed(client, query):
    """[(resource, id, change, version, loaded_at)] of every page the feed answers."""
    pages = walk(client, f"/api/v1/changes/?{query}", limit=1000)
    if len(pages) > 1:  # page=last is the page that next leads to
        assert client.get(f"/api/v1/changes/?{query}&page=last").json == pages[-1]
    assert {page["count"] for page in pages} == {sum(len(page["results"]) for page in pages)}
    return [
        (e["resource"], e["id"], e["change"], e["version"], e["loaded_at"])
        for page in pages
        for e in page["results"]
    ]


def history_loads(path):
    """[(load number, version)] of the history in the file at ``path``."""
    connection = sqlite3.connect(path)
    try:
        return connection.execute(
            "SELECT load_number, version FROM catalogue_loads ORDER BY load_number"
        ).fetchall()
    finally:
        connection.close()


def assert_feed_is_the_reference(client, path):
    """Every page of the feed since each load, of all resources and of each, equals the
    reference; without ``since``, the one since the load before the last."""
    numbered = history_loads(path)
    scopes = [None, *sorted(BY_NAME)]
    for number, version in numbered:
        for resource in scopes:
            query = f"since={version}" + (f"&resource={resource}" if resource else "")
            expected = reference_feed(path, number, resource)
            assert served_feed(client, query) == expected, (number, resource)
    last_but_one = numbered[-2][0] if len(numbered) > 1 else 0
    assert served_feed(client, "") == reference_feed(path, last_but_one, None)


def random_history(path, seed, numbers=range(3, 10)):
    """Replace the history of the catalogue file at ``path`` with a random one of the
    loads ``numbers`` (the oldest with changes of its own, as once older loads are
    dropped): records of three resources added, changed, changed back, removed,
    restored, added then removed; then build the feed's tables again from it."""
    chance = random.Random(seed)
    keys = [(name, record_id) for name in ("parties", "productions", "releasers")
            for record_id in range(1, 16)]  # fmt: skip
    state = {key: chance.choice([None, 1, 2]) for key in keys}
    seen = {key: [state[key]] for key in keys}
    changes = []
    for number in numbers:
        for key in chance.sample(keys, 12):
            before = state[key]
            after = chance.choice([None, chance.randrange(1, 1000), *seen[key]])
            if after != before:
                changes.append((*key, number, before, after))
                state[key] = after
                seen[key].append(after)
    connection = sqlite3.connect(path)
    with connection:
        for table in ("catalogue_loads", "catalogue_changes", "record_digests",
                      "feed_changes", "feed_records", "feed_skips", "feed_spans"):  # fmt: skip
            connection.execute(f"DELETE FROM {table}")
        connection.executemany(
            "INSERT INTO catalogue_loads VALUES (?, ?, ?, '{}')",
            [(n, f"{n:032x}", f"2026-01-{n:02}T00:00:00Z") for n in numbers],
        )
        connection.executemany("INSERT INTO catalogue_changes VALUES (?, ?, ?, ?, ?)", changes)
        connection.executemany(
            "INSERT INTO record_digests VALUES (?, ?, ?)",
            [(*key, digest) for key, digest in state.items() if digest is not None],
        )
        build_feed(connection)
    connection.close()
    return changes


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_every_page_of_a_random_history_is_the_net_change(
    make_app, loaded_database, tmp_path, monkeypatch, seed
):
    path = tmp_path / "served.sqlite3"
    shutil.copyfile(loaded_database, path)
    changes = random_history(path, seed)
    # The history holds records left out of some spans: added then removed, changed back.
    finals = {}
    for resource, record_id, _, before, after in changes:
        finals.setdefault((resource, record_id), [before])[1:] = [after]
    assert any(first == last for first, last in finals.values())
    connection = sqlite3.connect(path)
    assert connection.execute("SELECT count(*) FROM feed_skips").fetchone()[0] > 0
    connection.close()
    monkeypatch.setattr(changes_module, "PAGE_SIZE", 3)
    assert_feed_is_the_reference(make_app(path).test_client(), path)


def test_every_page_of_the_loads_is_the_net_change(make_app, loads, monkeypatch):  # noqa: F811
    _, files, _ = loads
    monkeypatch.setattr(changes_module, "PAGE_SIZE", 40)
    for path in files[1:]:
        assert_feed_is_the_reference(make_app(path).test_client(), path)


def test_no_feed_answer_scans_or_sorts(client, loads):  # noqa: F811
    _, _, versions = loads
    client.get("/api/v1/changes/")  # the catalogue opened
    engine = get_database(client.application).current().engine
    stop = catch_statements(engine)
    try:
        for since in ["", *(f"since={version}" for version in versions)]:
            for resource in ("", "&resource=productions", "&resource=bbses"):
                for page in ("", "&page=2", "&page=last"):
                    client.get(f"/api/v1/changes/?{since}{resource}{page}")
        assert client.get("/api/v1/changes/?since=" + "0" * 32).status_code == 410
    finally:
        statements = stop()
    assert len({statement for statement, _ in statements}) >= 5
    with engine.connect() as connection:
        for statement, parameters in statements:
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            details = [row[-1] for row in plan.all()]
            assert not any(d.startswith("SCAN") or "TEMP B-TREE" in d for d in details), (
                statement,
                details,
            )


def test_the_feed_validators_follow_the_history(make_app, loads, tmp_path, monkeypatch):  # noqa: F811
    """One version with two histories (the first stage loaded first, and loaded again
    after the second): the feed's ETags differ, and the kept answers of one file are not
    the other's; a record's ETag follows the version alone."""
    folders, files, versions = loads
    again = tmp_path / "again.sqlite3"
    shutil.copyfile(files[1], again)
    load_catalogue(folders[0], again)
    assert facts.version_and_time(again).version == versions[0]
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files[0], target)
    client = make_app(target, kept_answers_class=KeptAnswers).test_client()
    first = client.get("/api/v1/changes/")
    record = client.get("/api/v1/productions/108/")
    assert first.json["count"] == 0
    os.replace(shutil.copyfile(again, tmp_path / "next.sqlite3"), target)
    second = client.get("/api/v1/changes/")  # not the answer kept from the other file
    assert second.headers["X-Catalogue-Version"] == first.headers["X-Catalogue-Version"]
    assert second.json["count"] > 0
    tag = first.headers["ETag"]
    assert second.headers["ETag"] != tag
    held = client.get("/api/v1/changes/", headers={"If-None-Match": tag})
    assert held.status_code == 200 and held.json == second.json
    same = client.get("/api/v1/productions/108/", headers={"If-None-Match": record.headers["ETag"]})
    assert same.status_code == 304


def test_a_file_without_the_feed_is_503_load_again(make_app, loaded_database, tmp_path):
    """A file built before the feed's tables were (its history kept, as once) is refused,
    never answered with a 500."""
    path = tmp_path / "served.sqlite3"
    shutil.copyfile(loaded_database, path)
    connection = sqlite3.connect(path)
    for table in ("feed_changes", "feed_records", "feed_skips", "feed_spans"):
        connection.execute(f"DROP TABLE {table}")
    connection.execute("DROP INDEX catalogue_loads_by_version")
    connection.execute("ALTER TABLE catalogue_info DROP COLUMN history")
    connection.commit()
    connection.close()
    client = make_app(path).test_client()
    for url in ("/api/v1/changes/", "/api/v1/productions/"):
        response = client.get(url)
        assert response.status_code == 503
        assert response.json["detail"].endswith("load the catalogue again.")
