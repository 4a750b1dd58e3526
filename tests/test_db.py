"""The served database: read-only, replaced whole by a load, and its absence reported."""

import sqlite3

import pytest
from sqlalchemy import func, insert, select
from sqlalchemy.exc import OperationalError

from demoserv.api import filters
from demoserv.listings import kept
from demoserv.loader.sources import load_catalogue
from demoserv.resources import BY_NAME
from demoserv.store import tables
from demoserv.web.db import Database, FileReplaced, get_catalogue, get_connection, get_database

from . import catalogue_factory


def test_the_serving_connection_cannot_write(app):
    with app.test_request_context("/api/v1/"):
        connection = get_connection()
        with pytest.raises(OperationalError, match="readonly"):
            connection.execute(insert(tables.platforms).values(id=999999, name="x", name_key="2x"))


def test_connection_is_per_request(app):
    with app.test_request_context("/api/v1/"):
        assert get_connection() is get_connection()
    with app.app_context():
        first = get_connection()
    with app.app_context():
        assert get_connection() is not first


def _small_and_big(tmp_path):
    """Two catalogue folders of 30 and 150 productions, told apart by their counts."""
    return (
        catalogue_factory.write(
            catalogue_factory.build(seed=2, productions=30), tmp_path / "small"
        ),
        catalogue_factory.write(catalogue_factory.build(seed=3, productions=150), tmp_path / "big"),
    )


def test_a_load_is_served_without_restart(make_app, tmp_path):
    database = tmp_path / "served.sqlite3"
    small, big = _small_and_big(tmp_path)
    load_catalogue(small, database)
    client = make_app(database).test_client()
    assert client.get("/api/v1/productions/").json["count"] == 30
    load_catalogue(big, database)
    assert client.get("/api/v1/productions/").json["count"] == 150
    load_catalogue(small, database)
    assert client.get("/api/v1/productions/").json["count"] == 30


def test_a_connection_is_of_the_file_its_catalogue_was_read_from(make_app, tmp_path, monkeypatch):
    # Connections open by path: one opened just after a switch, for a request that found
    # the old file a moment before, would read the new file's rows under the old file's
    # version and dictionaries. It is refused, and the request takes the new file whole.
    database = tmp_path / "served.sqlite3"
    small, big = _small_and_big(tmp_path)
    load_catalogue(small, database)
    app = make_app(database)
    old = get_database(app).current()
    load_catalogue(big, database)
    old.engine.dispose()  # no idle connection on the old file is left to reuse
    with pytest.raises(FileReplaced):
        old.engine.connect()

    stale = iter([old])  # the request's first look at the path, just before the switch
    found = Database.current
    monkeypatch.setattr(Database, "current", lambda self: next(stale, None) or found(self))
    with app.test_request_context("/api/v1/productions/"):
        catalogue = get_catalogue()
        assert catalogue is not old and catalogue.counts["productions"] == 150
        rows = select(func.count()).select_from(tables.productions)
        assert get_connection().execute(rows).scalar() == 150


def test_missing_database_is_503_then_recovers(make_app, tmp_path, catalogue_dir):
    database = tmp_path / "later.sqlite3"
    client = make_app(database).test_client()
    response = client.get("/api/v1/productions/")
    assert response.status_code == 503
    assert "not available" in response.json["detail"]
    assert response.headers["Content-Type"] == "application/json"
    load_catalogue(catalogue_dir, database)
    assert client.get("/api/v1/productions/").status_code == 200


@pytest.mark.parametrize("content", [b"", b"this is not a database" * 100])
def test_unreadable_database_is_503(make_app, tmp_path, content):
    database = tmp_path / "broken.sqlite3"
    database.write_bytes(content)
    response = make_app(database).test_client().get("/api/v1/platforms/")
    assert response.status_code == 503
    assert "cannot be read" in response.json["detail"]


def test_a_database_of_another_shape_is_503(make_app, tmp_path):
    database = tmp_path / "other.sqlite3"
    sqlite3.connect(database).execute("CREATE TABLE something (x)").connection.commit()
    assert make_app(database).test_client().get("/api/v1/").status_code == 200
    assert make_app(database).test_client().get("/api/v1/platforms/").status_code == 503


def test_listings_need_no_count_query(app, client):
    # Counts are precomputed at load: a page costs its rows and nested relations only.
    statements = []
    from sqlalchemy import event

    from demoserv.web.db import get_database

    engine = get_database().current().engine
    event.listen(
        engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *args: statements.append(statement),
    )
    client.get("/api/v1/productions/?page=2")
    assert len(statements) == 1
    assert not any("count(" in s.lower() for s in statements)


def test_orders_on_several_keys_are_sorted_once_per_file(make_app, tmp_path):
    from . import oracle
    from .conftest import walk

    database = tmp_path / "served.sqlite3"
    path = "/api/v1/productions/?ordering=supertype,-release_date_date"
    app = make_app(database)
    client = app.test_client()
    for seed in (7, 8):
        catalogue = catalogue_factory.build(seed=seed, productions=180 + seed)
        load_catalogue(catalogue_factory.write(catalogue, tmp_path / str(seed)), database)
        ids = [r["id"] for page in walk(client, path) for r in page["results"]]
        wanted = oracle.ordered(
            "productions", catalogue["productions"], "supertype,-release_date_date"
        )
        assert ids == [r["id"] for r in wanted]
    # The first file's listing went with it.
    assert app.extensions[kept.EXTENSION].keys() == [
        ("productions", (("supertype", False), ("release_date_date", True)), ())
    ]


def test_kept_listings_are_bounded_by_their_setting_and_equivalent_values_are_one(
    make_app, loaded_database
):
    app = make_app(loaded_database, LISTING_CACHE_BYTES=4096)
    client = app.test_client()
    listings = app.extensions[kept.EXTENSION]
    assert listings.budget == 4096
    for title in range(40):  # listings that match nothing count too
        assert client.get(f"/api/v1/productions/?title=nothing-{title}").json["count"] == 0
    assert 0 < listings.kept_bytes <= 4096 and len(listings) < 40
    assert listings.keys()[-1][2] == (("title", "nothing-39"),)
    before = len(listings)
    for query in ("released_since=1991", "released_since=1991-01", "released_since=1991-01-01"):
        client.get(f"/api/v1/productions/?{query}")
    for query in ("platform=7", "platform=07", "platform=7,7", "platform=7&platform=7"):
        client.get(f"/api/v1/productions/?{query}")
    keys = [key[2] for key in listings.keys()[-2:]]
    assert keys == [(("released_since", "1991-01-01"),), (("platform", (7,)),)]
    assert len(listings) <= before + 2


def _alter(database, statement):
    connection = sqlite3.connect(database)
    connection.execute(statement)
    connection.commit()
    connection.close()


@pytest.mark.parametrize(
    "statement, logged",
    [
        ("ALTER TABLE productions DROP COLUMN tags", "table productions: missing column tags"),
        ("ALTER TABLE platforms ADD COLUMN colour TEXT", "table platforms: unknown column colour"),
        ("DROP TABLE bbses", "no table bbses"),
    ],
    ids=["older", "newer", "foreign"],
)
def test_a_file_of_another_schema_is_503_logged_once(
    make_app, tmp_path, catalogue_dir, caplog, statement, logged
):
    database = tmp_path / "served.sqlite3"
    load_catalogue(catalogue_dir, database)
    _alter(database, statement)
    client = make_app(database).test_client()
    with caplog.at_level("INFO", logger="demoserv.web.db"):
        for path in ("/api/v1/productions/", "/api/v1/platforms/", "/api/v1/bbses/1/") * 3:
            response = client.get(path)
            assert response.status_code == 503
            assert response.json["detail"] == (
                "The catalogue is not available: its database file was not built by this "
                "version of the service; load the catalogue again."
            )
    errors = [r.getMessage() for r in caplog.records if r.name == "demoserv.web.db"]
    assert errors == [
        f"cannot serve the catalogue: {database}: not a catalogue of this version of the "
        f"service ({logged})"
    ]
    # A good file in its place is served at once.
    load_catalogue(catalogue_dir, database)
    assert client.get("/api/v1/productions/").status_code == 200


@pytest.mark.parametrize(
    "statement, logged",
    [
        (
            "UPDATE catalogue_info SET version = version || char(13, 10) || 'Set-Cookie: a=b'",
            "version: '",
        ),
        ("UPDATE catalogue_info SET loaded_at = 'not a time'", "loaded_at: 'not a time' is not"),
        ("UPDATE catalogue_info SET history = '<history>'", "history: '<history>' is not 32"),
        ("DELETE FROM catalogue_info", "catalogue_info: not one row"),
        ("INSERT INTO catalogue_info SELECT * FROM catalogue_info", "catalogue_info: not one row"),
    ],
)
def test_a_file_put_in_place_with_damaged_facts_is_503_logged_once(
    make_app, tmp_path, catalogue_dir, caplog, statement, logged
):
    """A load refuses such a file (test_prebuilt.py); one put in place by hand, or by a
    rollback to a file loaded before that check, is refused too, never answered 500."""
    database = tmp_path / "served.sqlite3"
    load_catalogue(catalogue_dir, database)
    _alter(database, statement)
    client = make_app(database).test_client()
    with caplog.at_level("INFO", logger="demoserv.web.db"):
        for path in ("/api/v1/productions/", "/api/v1/bbses/1/") * 2:
            response = client.get(path)
            assert response.status_code == 503
            assert "Set-Cookie" not in response.headers
            assert response.json["detail"] == (
                "The catalogue is not available: its database file cannot be read."
            )
    errors = [r.getMessage() for r in caplog.records if r.name == "demoserv.web.db"]
    assert len(errors) == 1 and "\n" not in errors[0] and "\r" not in errors[0]
    assert errors[0].startswith(f"cannot serve the catalogue: {database}: damaged catalogue ")
    assert logged in errors[0]


def test_a_file_built_before_a_declaration_changed_is_503(
    make_app, loaded_database, tmp_path, monkeypatch
):
    """A file built before a filter was added lacks what the filter reads: it is refused
    as of another schema, never served to fail with a 500."""
    database = tmp_path / "served.sqlite3"
    database.write_bytes(loaded_database.read_bytes())
    productions = BY_NAME["productions"]
    added = filters.Flag("screenshot", "Added after the file was built.", column="has_screenshot")
    monkeypatch.setattr(productions, "filters", (*productions.filters, added))
    response = make_app(database).test_client().get("/api/v1/productions/?screenshot=true")
    assert response.status_code == 503
    assert response.json == {
        "detail": "The catalogue is not available: its database file was not built by this "
        "version of the service; load the catalogue again."
    }


def test_a_deleted_file_is_reported_missing_once(make_app, tmp_path, catalogue_dir, caplog):
    database = tmp_path / "served.sqlite3"
    load_catalogue(catalogue_dir, database)
    client = make_app(database).test_client()
    assert client.get("/api/v1/productions/").status_code == 200
    database.unlink()
    with caplog.at_level("ERROR", logger="demoserv.web.db"):
        for _ in range(5):
            response = client.get("/api/v1/productions/")
            assert response.status_code == 503
            assert response.json["detail"] == (
                "The catalogue is not available: the catalogue file is missing."
            )
            assert str(tmp_path) not in response.get_data(as_text=True)
    assert [r.getMessage() for r in caplog.records] == [
        f"cannot serve the catalogue: {database}: the catalogue file is missing"
    ]


def test_a_later_page_of_a_listing_is_a_use_of_it(app, client):
    """So the listings that clients page through are protected (tests/test_byte_cache.py)."""
    listings = app.extensions[kept.EXTENSION]
    client.get("/api/v1/productions/?ordering=supertype,id")
    client.get("/api/v1/productions/?ordering=-supertype,id")
    client.get("/api/v1/productions/?ordering=supertype,id&page=2")  # asked for again
    assert [key[1][0] for key in listings.keys()] == [("supertype", True), ("supertype", False)]
