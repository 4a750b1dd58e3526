"""The snapshot (``/api/v1/snapshot/`` and its files): every line the detail answer at
the same address, byte for byte, under either field name; the files served with their
length, ETag, 304 and ranges; an address without one; written at load beside the file,
kept for the previous file and rolled back with it, written over a file that has none,
never half; and the snapshot of a version plus the changes since it the next one."""

import contextlib
import gzip
import hashlib
import io
import json
import shutil

import orjson
import pytest

from demoserv.loader import install
from demoserv.loader import snapshot as writer
from demoserv.loader.install import InstallError
from demoserv.loader.sources import LoadOptions, load_catalogue, load_source
from demoserv.resources import NAMES
from demoserv.store import facts, snapshot

from . import docs_blocks
from .conftest import SITE_URL, TEST_CLIENT_ADDRESS
from .test_history import loads  # noqa: F401 (fixture)
from .test_server import Server
from .test_upstream import SAMPLE

FIELD_NAMES = ("service_url", "demozoo_url")


def files_of(client):
    """{resource: the file's bytes} of the manifest ``client`` is answered, and it."""
    answer = client.get("/api/v1/snapshot/")
    assert answer.status_code == 200, answer.json
    manifest = answer.json
    found = {}
    for name, entry in manifest["resources"].items():
        response = client.get(entry["url"])
        assert response.status_code == 200
        found[name] = response.data
    return found, manifest


def records_of(client):
    """{(resource, id): record} of the snapshot ``client`` is answered, and its version."""
    files, manifest = files_of(client)
    records = {}
    for name, data in files.items():
        for line in gzip.decompress(data).splitlines():
            record = orjson.loads(line)
            records[(name, record["id"])] = record
    return records, manifest["version"]


@pytest.fixture(scope="module")
def both_names(loaded_database, tmp_path_factory):
    """A copy of the suite's database with its snapshot for the test client under
    either field name."""
    path = tmp_path_factory.mktemp("snapshot") / "catalogue.sqlite3"
    shutil.copyfile(loaded_database, path)
    addresses = [
        snapshot.Address(TEST_CLIENT_ADDRESS.api_root, SITE_URL, name) for name in FIELD_NAMES
    ]
    assert writer.write(path, path, addresses) == addresses
    return path


@pytest.mark.parametrize("field_name", FIELD_NAMES)
def test_every_line_is_the_detail_answer_at_the_same_address(make_app, both_names, field_name):
    client = make_app(both_names, SERVICE_URL_FIELD=field_name).test_client()
    files, manifest = files_of(client)
    counts = client.get("/api/v1/status/").json["counts"]
    assert list(manifest["resources"]) == NAMES
    assert manifest["version"] == client.get("/api/v1/").headers["X-Catalogue-Version"]
    for name, data in files.items():
        entry = manifest["resources"][name]
        assert (len(data), hashlib.sha256(data).hexdigest()) == (entry["bytes"], entry["sha256"])
        lines = gzip.decompress(data).split(b"\n")
        assert lines.pop() == b""  # every line ends with a newline
        assert len(lines) == entry["count"] == counts[name]
        ids = [orjson.loads(line)["id"] for line in lines]
        assert ids == sorted(ids)
        for record_id, line in zip(ids, lines):
            assert client.get(f"/api/v1/{name}/{record_id}/").data == line


def test_the_files_are_served_with_validators_and_ranges(client):
    manifest = client.get("/api/v1/snapshot/").json
    entry = manifest["resources"]["productions"]
    whole = client.get(entry["url"])
    assert whole.headers["Content-Type"] == "application/gzip"
    assert int(whole.headers["Content-Length"]) == entry["bytes"] == len(whole.data)
    assert whole.headers["ETag"] == f'"{entry["sha256"]}"'
    assert "Content-Encoding" not in whole.headers
    assert client.head(entry["url"]).headers["Content-Length"] == str(entry["bytes"])
    held = client.get(entry["url"], headers={"If-None-Match": whole.headers["ETag"]})
    assert (held.status_code, held.data) == (304, b"")
    # A cut download resumes: the rest of the bytes from where it stopped.
    cut = entry["bytes"] // 3
    rest = client.get(entry["url"], headers={"Range": f"bytes={cut}-"})
    assert rest.status_code == 206
    assert rest.headers["Content-Range"] == f"bytes {cut}-{entry['bytes'] - 1}/{entry['bytes']}"
    assert whole.data[:cut] + rest.data == whole.data
    beyond = client.get(entry["url"], headers={"Range": f"bytes={entry['bytes'] + 5}-"})
    assert beyond.status_code == 416 and "detail" in beyond.json
    # The manifest is an answer of the API like any other: cached and conditional.
    answer = client.get("/api/v1/snapshot/")
    tag = answer.headers["ETag"]
    assert client.get("/api/v1/snapshot/", headers={"If-None-Match": tag}).status_code == 304


@pytest.mark.parametrize(
    "path",
    [
        "/snapshot/0123/0123456789abcdef/productions.ndjson.gz",
        "/snapshot/" + "0" * 32 + "/0123456789abcdef/productions.ndjson.gz",
        "/snapshot/" + "0" * 32 + "/..%2f..%2f/productions.ndjson.gz",
        "/snapshot/" + "0" * 32 + "/0123456789abcdef/credits.ndjson.gz",
    ],
)
def test_no_other_file_is_served(client, path):
    answer = client.get(path)
    assert answer.status_code == 404 and answer.json == {"detail": "Not found."}


def test_an_address_it_was_not_written_for_is_a_404(client):
    answer = client.get("/api/v1/snapshot/", headers={"Host": "elsewhere.example"})
    assert answer.status_code == 404
    assert "http://elsewhere.example/api/v1/" in answer.json["detail"]


def folders_of(target):
    """{version: [address keys]} of the snapshots beside ``target``."""
    root = snapshot.folder(target)
    if not root.exists():
        return {}
    return {each.name: sorted(key.name for key in each.iterdir()) for each in root.iterdir()}


def test_loads_and_rollbacks_keep_the_served_and_previous_files_snapshots(loads, tmp_path):  # noqa: F811
    folders, _, versions = loads
    target = tmp_path / "served.sqlite3"
    key = [TEST_CLIENT_ADDRESS.key]
    at = [TEST_CLIENT_ADDRESS]
    # A file built without one (as before snapshots): a load of the same records writes it.
    load_catalogue(folders[0], target)
    assert folders_of(target) == {}
    load_catalogue(folders[0], target, snapshot_at=at)
    assert folders_of(target) == {versions[0]: key}
    load_catalogue(folders[1], target, snapshot_at=at)
    assert folders_of(target) == {versions[0]: key, versions[1]: key}
    load_catalogue(folders[2], target, snapshot_at=at)
    assert folders_of(target) == {versions[1]: key, versions[2]: key}  # the oldest removed
    install.rollback(target, snapshot_at=at)
    assert facts.version_and_time(target).version == versions[1]
    assert folders_of(target) == {versions[1]: key, versions[2]: key}
    # A rollback to a file without a snapshot writes it first.
    load_catalogue(folders[3], target)
    shutil.rmtree(snapshot.folder(target))
    install.rollback(target, snapshot_at=at)
    assert folders_of(target) == {versions[1]: key}


def test_an_unchanged_export_gets_the_snapshot_it_lacks(tmp_path):
    target = tmp_path / "served.sqlite3"
    load_source(SAMPLE, target)
    assert folders_of(target) == {}
    outcome = load_source(SAMPLE, target, LoadOptions(snapshot_at=(TEST_CLIENT_ADDRESS,)))
    assert not outcome.changed
    assert folders_of(target) == {outcome.version_after: [TEST_CLIENT_ADDRESS.key]}


def test_a_failed_write_leaves_the_served_catalogue_and_no_half_snapshot(
    loads,  # noqa: F811
    tmp_path,
    monkeypatch,
):
    folders, _, versions = loads
    target = tmp_path / "served.sqlite3"
    load_catalogue(folders[0], target, snapshot_at=[TEST_CLIENT_ADDRESS])
    before = target.read_bytes()

    def full(self, data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.Compressed, "write", full)
    with pytest.raises(InstallError, match="No space left"):
        load_catalogue(folders[1], target, snapshot_at=[TEST_CLIENT_ADDRESS])
    assert target.read_bytes() == before
    assert folders_of(target) == {versions[0]: [TEST_CLIENT_ADDRESS.key]}
    assert [each.name for each in target.parent.iterdir() if "loading" in each.name] == []


@pytest.mark.parametrize("since", [0, 1, 2])
def test_the_snapshot_of_a_version_and_the_changes_since_it_are_the_next_snapshot(
    make_app,
    loads,  # noqa: F811
    tmp_path,
    since,
):
    _, files, versions = loads
    clients = []
    for number in (since, 3):
        path = tmp_path / f"after{number + 1}.sqlite3"
        shutil.copyfile(files[number], path)
        writer.write(path, path, [TEST_CLIENT_ADDRESS])
        clients.append(make_app(path).test_client())
    records, version = records_of(clients[0])
    assert version == versions[since]
    url = f"/api/v1/changes/?since={version}"
    while url:
        page = clients[1].get(url).json
        for change in page["results"]:
            key = (change["resource"], change["id"])
            if change["change"] == "removed":
                del records[key]
            else:
                records[key] = clients[1].get(change["url"]).json
        url = page["next"]
    assert (records, versions[3]) == records_of(clients[1])


def test_the_same_records_give_the_same_bytes(loaded_database, tmp_path):
    """zlib is deterministic and the gzip header holds no time: a snapshot written
    again (a replica, or one of an earlier format) is the same file."""
    path = tmp_path / "copy.sqlite3"
    shutil.copyfile(loaded_database, path)
    version = facts.version_and_time(path).version
    written = snapshot.files_folder(path, version, TEST_CLIENT_ADDRESS.key)
    original = snapshot.files_folder(loaded_database, version, TEST_CLIENT_ADDRESS.key)
    assert writer.write(path, path, [TEST_CLIENT_ADDRESS]) == [TEST_CLIENT_ADDRESS]
    assert writer.write(path, path, [TEST_CLIENT_ADDRESS]) == []  # written already
    manifest = json.loads((written / snapshot.MANIFEST).read_text())
    (written / snapshot.MANIFEST).write_text(json.dumps({**manifest, "format": 0}))
    assert writer.write(path, path, [TEST_CLIENT_ADDRESS]) == [TEST_CLIENT_ADDRESS]
    assert json.loads((written / snapshot.MANIFEST).read_text()) == manifest
    for name in NAMES:
        assert (written / snapshot.file_name(name)).read_bytes() == (
            original / snapshot.file_name(name)
        ).read_bytes()
    assert sorted(each.name for each in written.parent.iterdir()) == [TEST_CLIENT_ADDRESS.key]


def test_the_docs_python_example_reads_every_production(loaded_database, tmp_path):
    """docs/snapshot.md's Python example, as written but for the server's address, run
    against a real server whose snapshot is written for its address."""
    (block,) = docs_blocks.run_by("tests/test_snapshot.py")
    path = tmp_path / "served.sqlite3"
    shutil.copyfile(loaded_database, path)
    with Server(path) as server:
        api_root = f"{server.url}/api/v1/"
        writer.write(path, path, [snapshot.Address(api_root, SITE_URL, "service_url")])
        code = block.text.replace("http://127.0.0.1:8080/api/v1/", api_root)
        assert code != block.text
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            exec(compile(code, block.where, "exec"), {})
    version = facts.version_and_time(path).version
    count = facts.counts(path)["productions"]
    assert printed.getvalue() == f"{count} productions of version {version}\n"
