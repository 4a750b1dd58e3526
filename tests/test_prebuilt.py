"""``flask load built.sqlite3``: a catalogue file built by this service, checked and
switched in like any load; anything else is refused in one line, nothing replaced."""

import os
import sqlite3
import stat

import pytest
import zstandard

from demoserv.loader.install import previous_path
from demoserv.loader.prebuilt import install_built
from demoserv.loader.sources import load_catalogue

from . import catalogue_factory


def built_catalogues(folder, sizes):
    """Catalogue files built in ``folder`` from generated catalogues: {seed: productions}."""
    files = []
    for seed, size in sizes.items():
        source = catalogue_factory.write(
            catalogue_factory.build(seed=seed, productions=size), folder / f"files-{seed}"
        )
        load_catalogue(source, folder / f"built-{seed}.sqlite3")
        files.append(folder / f"built-{seed}.sqlite3")
    return files


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two built catalogue files (30 and 50 productions) in a staging folder."""
    return tuple(built_catalogues(tmp_path_factory.mktemp("staging"), {21: 30, 22: 50}))


@pytest.fixture
def served(tmp_path, built, make_app):
    """An app serving a copy of the first built file, mode 0640, and its CLI runner."""
    database = tmp_path / "serve" / "demoserv.sqlite3"
    database.parent.mkdir()
    install_built(built[0], database)
    os.chmod(database, 0o640)
    app = make_app(database)
    return database, app.test_client(), app.test_cli_runner()


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".loading" in p.name)


def version(client):
    response = client.get("/api/v1/productions/")
    assert response.status_code == 200
    return response.headers["X-Catalogue-Version"], response.json["count"]


def test_a_built_file_switches_the_running_app(served, built):
    database, client, runner = served
    old_version, count = version(client)
    assert count == 30
    old_bytes = database.read_bytes()
    result = runner.invoke(args=["load", str(built[1])])
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Loaded ") and "productions 30 → 50" in result.output
    new_version, count = version(client)
    assert count == 50 and new_version != old_version
    # The very file that was built, with the mode of the file it replaced.
    assert database.read_bytes() == built[1].read_bytes()
    assert stat.S_IMODE(database.stat().st_mode) == 0o640
    assert previous_path(database).read_bytes() == old_bytes
    assert leftovers(database.parent) == []
    # The same file gives the same version wherever it is served.
    assert runner.invoke(args=["rollback"]).exit_code == 0
    assert version(client) == (old_version, 30)


def test_a_built_file_that_would_empty_a_resource_stops(served, tmp_path):
    database, client, runner = served
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "platforms.jsonl").write_text('{"id": 1, "name": "Amiga"}\n')
    load_catalogue(empty, tmp_path / "empty.sqlite3")
    before = database.read_bytes()
    result = runner.invoke(args=["load", str(tmp_path / "empty.sqlite3")])
    assert result.exit_code == 1
    assert "the new catalogue has no party_series" in result.output
    assert database.read_bytes() == before
    result = runner.invoke(args=["load", "--allow-empty", str(tmp_path / "empty.sqlite3")])
    assert result.exit_code == 0, result.output
    assert version(client)[1] == 0


def foreign(path, built):
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    connection.execute("INSERT INTO notes VALUES (1, 'not a catalogue')")
    connection.commit()
    connection.close()


def not_sqlite(path, built):
    path.write_text("id,name\n1,Amiga\n")


def empty_file(path, built):
    path.write_bytes(b"")


def altered(statement):
    """A copy of the built file changed by one SQL statement."""

    def make(path, built):
        path.write_bytes(built.read_bytes())
        connection = sqlite3.connect(path)
        connection.execute(statement)
        connection.commit()
        connection.close()

    return make


older_schema = altered("UPDATE catalogue_info SET schema_version = 'older'")
other_columns = altered("ALTER TABLE productions DROP COLUMN tags")
unfinished = altered("DELETE FROM productions WHERE id = (SELECT max(id) FROM productions)")
without_an_index = altered("DROP INDEX productions_by_title_key")


# (table, column, SQL value, what the refusal says)
DAMAGED_FACTS = [
    ("catalogue_info", "loaded_at", "'not a time'", "catalogue_info: loaded_at: 'not a time'"),
    (
        "catalogue_info",
        "version",
        "version || char(13, 10) || 'Set-Cookie: a=b'",
        "catalogue_info: version: '",
    ),
    ("catalogue_info", "features", "'[\"creation_times'", "catalogue_info: features: '[\""),
    ("catalogue_info", "features", "'[\"everything\"]'", "catalogue_info: features: "),
    ("catalogue_info", "history", "'not a digest'", "catalogue_info: history: 'not a digest'"),
    ("catalogue_loads", "counts", "'{\"productions\": 1}'", "catalogue_loads 1: counts: "),
    ("catalogue_loads", "loaded_at", "'2026-13-01T00:00:00Z'", "catalogue_loads 1: loaded_at: "),
]


def changed_record(table, template):
    """A copy of the built file with the first record of ``table`` stored as the raw
    ``template`` (compressed with its dictionary, as the build stores records)."""

    def make(path, built):
        path.write_bytes(built.read_bytes())
        connection = sqlite3.connect(path)
        resource = table.removesuffix("_details")
        kind = "list" if resource == table else "detail"
        (dictionary,) = connection.execute(
            "SELECT data FROM dictionaries WHERE resource = ? AND kind = ?", (resource, kind)
        ).fetchone()
        data = zstandard.ZstdCompressionDict(dictionary)
        stored = zstandard.ZstdCompressor(dict_data=data).compress(template)
        if template == b"not zstd":
            stored = template
        connection.execute(
            f"UPDATE {table} SET doc = ? WHERE id = (SELECT min(id) FROM {table})", (stored,)
        )
        connection.commit()
        connection.close()

    return make


def truncated(path, built):
    data = built.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def truncated_mid_page(path, built):
    data = built.read_bytes()
    path.write_bytes(data[:-1000])


def damaged(path, built):
    data = bytearray(built.read_bytes())
    page = 4096
    for offset in range(page * 3, len(data) - page, page * 5):  # scribble over pages
        data[offset + 8 : offset + 200] = b"\xa5" * 192
    path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    "make, message",
    [
        (foreign, "not a catalogue built by this version of the service (no table "),
        (not_sqlite, "not an SQLite database; expected a catalogue file built by this service"),
        (empty_file, "an empty file; expected a catalogue file built by this service"),
        (older_schema, "built for schema version "),
        (other_columns, "not a catalogue built by this version of the service (table productions"),
        (truncated, "truncated or damaged: "),
        (truncated_mid_page, "truncated or damaged: "),
        (damaged, "damaged: "),
        (unfinished, "an unfinished catalogue: productions holds 49 records, its count says 50"),
        (without_an_index, "an unfinished catalogue: no index productions_by_title_key"),
        # Facts a server shows: damaged, each answered 500 or 503 once served.
        *(
            (altered(f"UPDATE {table} SET {column} = {value}"), f"damaged: {message}")
            for table, column, value, message in DAMAGED_FACTS
        ),
        (
            altered("INSERT OR REPLACE INTO catalogue_source VALUES ('size', '12 bytes')"),
            "damaged: catalogue_source: size: '12 bytes' is not a number of bytes",
        ),
        (
            changed_record("productions_details", b'{"id": %(N)b, "title": "100%"}'),
            "damaged: the detail record of productions id ",
        ),
        (
            changed_record("parties", b"not zstd"),
            "damaged: the list record of parties id ",
        ),
        (
            changed_record("platforms", b'{"id": 0, "name": "another record"}'),
            "damaged: the list record of platforms id ",
        ),
    ],
)
def test_a_file_that_is_not_a_sound_catalogue_is_refused(served, built, tmp_path, make, message):
    database, client, runner = served
    served_version = version(client)
    before = database.read_bytes()
    previous = previous_path(database)
    bad = tmp_path / "incoming" / "catalogue.sqlite3"
    bad.parent.mkdir()
    make(bad, built[1])
    result = runner.invoke(args=["load", str(bad)])
    assert result.exit_code == 1
    lines = result.output.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{bad}: "), result.output
    assert message in lines[0], lines[0]
    assert database.read_bytes() == before and not previous.exists()
    assert leftovers(database.parent) == []
    assert version(client) == served_version


def test_a_sqlite_file_under_any_name_is_taken_as_a_built_catalogue(served, built, tmp_path):
    database, client, runner = served
    renamed = tmp_path / "catalogue-2026-11-23"
    renamed.write_bytes(built[1].read_bytes())
    result = runner.invoke(args=["load", str(renamed)])
    assert result.exit_code == 0, result.output
    assert version(client)[1] == 50


def test_a_missing_or_special_file_is_named(served, tmp_path):
    database, _, runner = served
    before = database.read_bytes()
    missing = tmp_path / "nothing.sqlite3"
    result = runner.invoke(args=["load", str(missing)])
    assert result.exit_code == 2
    assert result.output.startswith(f"{missing} does not exist: give a catalogue folder")
    fifo = tmp_path / "fifo.sqlite3"
    os.mkfifo(fifo)
    result = runner.invoke(args=["load", str(fifo)])
    assert result.exit_code == 1
    assert result.output.strip() == f"{fifo}: not a regular file"
    assert database.read_bytes() == before and leftovers(database.parent) == []
