"""``/api/v1/changes/``: net changes over spans of one, two and three loads, each equal to
the difference of the detail records the two files serve; the last load's changes;
``since`` the served version; pages; bad input; an unknown version after a rollback; and
the example client kept in step with a real server over three loads."""

import http.server
import importlib.util
import json
import shutil
import socket
import threading
import urllib.error
from pathlib import Path

import pytest

from demoserv.catalogue import install
from demoserv.catalogue.sources import load_catalogue

from .conftest import walk
from .test_history import ADDED, UNTOUCHED, expected_changes, loads  # noqa: F401 (fixture)
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


def test_the_example_client_stays_in_step_over_three_loads(loads, tmp_path):  # noqa: F811
    folders, files, versions = loads
    example = _example()
    target = tmp_path / "served.sqlite3"
    copy = tmp_path / "copy.json"
    shutil.copyfile(files[0], target)
    with Server(target) as server:
        api_root = f"{server.base}/api/v1/"
        assert example.follow(api_root, copy)["version"] == versions[0]
        for number in (1, 2, 3):
            load_catalogue(folders[number], target)
            kept = example.follow(api_root, copy)
            assert kept["version"] == versions[number]
            assert kept == json.loads(copy.read_text())
            assert kept["records"] == _served(server)
        # After a rollback its version is gone (410): it fetches everything again.
        install.rollback(target)
        kept = example.follow(api_root, copy)
        assert kept["version"] == versions[2]
        assert kept["records"] == _served(server)


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
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))  # a port that nothing listens on
    try:
        with pytest.raises(urllib.error.URLError):
            example.Session().get(f"http://127.0.0.1:{closed.getsockname()[1]}/")
    finally:
        closed.close()


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
