"""A catalogue file's facts, read one way (demoserv/store/facts.py): each question answers
what the readers before it answered (install's, provenance's, the history's summary and
the status's own), for a served file, its previous file, and files absent, empty,
foreign, of another time or without the facts' tables; the install, the load and the
status get the same facts through it; and each question opens the file once, the status
each of its two files once."""

import json
import shutil
import sqlite3
from pathlib import Path
from urllib.parse import unquote, urlsplit

import orjson
import pytest
from sqlalchemy import create_engine, select

from demoserv.loader import install, status_facts
from demoserv.loader.sources import LoadOptions, load_catalogue, load_source
from demoserv.store import facts, tables
from demoserv.store.values import connect_read_only
from demoserv.web.db import Database

from . import catalogue_factory

# The readers this module replaced, as they read: the oracle its answers are held to.


def former_read(path, statement, answer, default):
    try:
        connection = connect_read_only(path)
    except sqlite3.Error:
        return default
    try:
        return answer(connection.execute(statement))
    except sqlite3.Error:
        return default
    finally:
        connection.close()


def former_counts(path):
    return former_read(path, "SELECT resource, count FROM record_counts", dict, {})


def former_version(path):
    query = "SELECT version, loaded_at FROM catalogue_info"
    return former_read(path, query, lambda cursor: cursor.fetchone(), None)


def former_provenance(path):
    return former_read(path, "SELECT key, value FROM catalogue_source", dict, {})


def former_summary(path):
    rows = former_read(
        path,
        "SELECT version, loaded_at, counts FROM catalogue_loads "
        "WHERE load_number IN (SELECT min(load_number) FROM catalogue_loads "
        "UNION SELECT max(load_number) FROM catalogue_loads) ORDER BY load_number",
        lambda cursor: cursor.fetchall(),
        [],
    )
    if not rows:
        return None
    (first_version, first_at, _), (version, loaded_at, counts) = rows[0], rows[-1]
    return {
        "last_load": {"version": version, "loaded_at": loaded_at, "counts": orjson.loads(counts)},
        "since": {"version": first_version, "loaded_at": first_at},
    }


def former_file_status(path, *, paths=True):
    info = former_read(
        path,
        "SELECT version, loaded_at, schema_version FROM catalogue_info",
        lambda cursor: cursor.fetchone(),
        None,
    )
    if info is None:
        return None
    found = former_provenance(path)
    source = {key: found.get(key) for key in status_facts.SOURCE_KEYS}
    if source["size"] is not None:
        source["size"] = int(source["size"])
    if paths:
        source["path"] = found.get("path")
    elif source["kind"] == "url" and source["source"]:
        source["source"] = urlsplit(source["source"])._replace(query="").geturl()
    return {
        "version": info[0],
        "records_since": info[1],
        "loaded_at": found.get("loaded_at"),
        "schema_version": info[2],
        "counts": former_counts(path),
        "changes": former_summary(path),
        "source": source,
    }


def former_status(target, *, paths=True):
    served = former_file_status(target, paths=paths)
    if served is None:
        return None
    previous = former_file_status(install.previous_path(target), paths=paths)
    if previous is not None:
        previous.pop("counts")
        previous.pop("changes")
    return {**served, "previous": previous}


def same(found, expected):
    """Equal, and in the same order (what reaches a terminal or an answer)."""
    return found == expected and json.dumps(found) == json.dumps(expected)


# The files asked.


def altered(source, path, *statements):
    shutil.copyfile(source, path)
    connection = sqlite3.connect(path)
    try:
        for statement in statements:
            connection.execute(statement)
        connection.commit()
    finally:
        connection.close()
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """{kind: path}: a served file after two loads (so with a previous file and two loads
    in its history) and files that hold less."""
    root = tmp_path_factory.mktemp("facts")
    served = root / "served.sqlite3"
    for seed, size in ((21, 30), (22, 40)):
        folder = catalogue_factory.write(
            catalogue_factory.build(seed=seed, productions=size), root / f"catalogue{seed}"
        )
        load_catalogue(folder, served)
    (root / "empty.sqlite3").write_bytes(b"")
    (root / "foreign.sqlite3").write_bytes(b"this is not a database" * 100)
    other = sqlite3.connect(root / "other.sqlite3")
    other.execute("CREATE TABLE something (x)")
    other.commit()
    other.close()
    tables = ("catalogue_source", "record_counts", "catalogue_loads")
    return {
        "served": served,
        "previous": install.previous_path(served),
        "missing": root / "missing.sqlite3",
        "empty": root / "empty.sqlite3",
        "foreign": root / "foreign.sqlite3",
        "other": root / "other.sqlite3",
        "bare": altered(served, root / "bare.sqlite3", *(f"DROP TABLE {t}" for t in tables)),
        "older": altered(
            served, root / "older.sqlite3", "ALTER TABLE catalogue_info DROP COLUMN history"
        ),
        "no version": altered(served, root / "unversioned.sqlite3", "DELETE FROM catalogue_info"),
        "no loads": altered(served, root / "no_loads.sqlite3", "DELETE FROM catalogue_loads"),
    }


KINDS = [
    "served",
    "previous",
    "missing",
    "empty",
    "foreign",
    "other",
    "bare",
    "older",
    "no version",
    "no loads",
]


@pytest.mark.parametrize("kind", KINDS)
def test_each_question_answers_as_its_former_reader(files, kind):
    path = files[kind]
    assert same(facts.version_and_time(path), former_version(path))
    assert same(facts.counts(path), former_counts(path))
    assert same(facts.provenance(path), former_provenance(path))
    assert same(facts.history(path), former_summary(path))
    for paths in (True, False):
        assert same(
            status_facts.file_status(path, paths=paths), former_file_status(path, paths=paths)
        )
    assert path.exists() == (kind != "missing")  # asking creates no file


def test_a_whole_file_has_every_fact_and_a_damaged_one_its_defaults(files):
    served = facts.file_facts(files["served"])
    assert served.version == facts.version_and_time(files["served"]).version
    assert served.counts["productions"] == 40 and served.provenance["kind"] == "folder"
    assert served.history["since"]["version"] != served.history["last_load"]["version"]
    assert served.history["last_load"]["counts"]["productions"]["added"] > 0
    bare = facts.file_facts(files["bare"])
    assert (bare.version, bare.counts, bare.provenance, bare.history) == (
        served.version,
        {},
        {},
        None,
    )
    assert facts.file_facts(files["older"]) == served
    assert facts.counts(files["no version"]) == served.counts
    for kind in ("missing", "empty", "foreign", "other", "no version"):
        assert facts.file_facts(files[kind]) is None, kind
        assert facts.version_and_time(files[kind]) is None, kind


@pytest.mark.parametrize("paths", [True, False])
def test_the_status_and_its_lines_are_the_former_ones(files, paths):
    served = files["served"]
    assert same(status_facts.status(served, paths=paths), former_status(served, paths=paths))
    assert status_facts.lines(served, status_facts.status(served)) == status_facts.lines(
        served, former_status(served)
    )
    assert status_facts.status(files["missing"]) is None
    alone = files["bare"]  # no previous file beside it
    assert same(status_facts.status(alone, paths=paths), former_status(alone, paths=paths))


# What was opened: sqlite3.connect wrapped, by the file's path.


def _opened_path(database):
    text = str(database)
    if text.startswith("file:"):
        text = unquote(text.removeprefix("file:").split("?", 1)[0])
    return Path(text)


@pytest.fixture
def opened(monkeypatch):
    """The catalogue files opened (``sqlite3.connect``), in order, each by its path."""
    paths = []
    connect = sqlite3.connect

    def counted(database, *args, **kwargs):
        paths.append(_opened_path(database))
        return connect(database, *args, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", counted)
    return paths


QUESTIONS = [
    facts.file_facts,
    facts.version_and_time,
    facts.counts,
    facts.provenance,
    facts.history,
    status_facts.file_status,
]


@pytest.mark.parametrize("question", QUESTIONS, ids=lambda question: question.__name__)
@pytest.mark.parametrize("kind", ["served", "missing", "foreign", "bare"])
def test_a_question_opens_the_file_once(files, opened, question, kind):
    question(files[kind])
    assert opened == [files[kind]]


def test_the_status_opens_the_served_file_and_the_previous_once_each(files, opened):
    status_facts.status(files["served"])
    assert sorted(opened) == sorted([files["served"], files["previous"]])
    opened.clear()
    assert status_facts.lines(files["served"], status_facts.status(files["served"], paths=False))
    assert len(opened) == 2


def test_the_install_and_the_rollback_get_the_counts_and_versions_as_before(files, tmp_path):
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files["served"], target)
    shutil.copyfile(files["previous"], install.previous_path(target))
    served, previous = former_counts(target), former_counts(install.previous_path(target))
    assert served != previous
    assert same(install.refuse_to_empty(target, served), served)
    with pytest.raises(install.InstallError, match="the new catalogue has no productions"):
        install.refuse_to_empty(target, {**served, "productions": 0})
    assert same(install.rollback(target), previous)
    assert same(install.rollback(target), served)


def test_a_load_tells_the_versions_before_and_after_as_before(files, tmp_path):
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files["previous"], target)
    before = former_version(target)
    folder = catalogue_factory.write(catalogue_factory.build(seed=23), tmp_path / "catalogue")
    outcome = load_source(folder, target, LoadOptions())
    assert outcome.changed
    assert (outcome.version_before, outcome.version_after) == (
        before[0],
        former_version(target)[0],
    )
    assert outcome.version_before != outcome.version_after
    assert former_version(target) == facts.version_and_time(target)


# The server: the facts it opens a file with, and the status page.


def former_serving_facts(path):
    """What web/db.py read when it opened a file, as it read it (SQLAlchemy)."""
    engine = create_engine(
        "sqlite://", creator=lambda: connect_read_only(path), json_deserializer=orjson.loads
    )
    try:
        with engine.connect() as connection:
            info = connection.execute(select(tables.catalogue_info)).mappings().one()
            counts = dict(connection.execute(select(tables.record_counts)).all())
    finally:
        engine.dispose()
    return (
        info["version"],
        info["loaded_at"],
        counts,
        frozenset(info["features"]),
        info["history"],
    )


def test_the_server_opens_a_file_once_with_the_facts_it_read_before(files, opened):
    database = Database(files["served"], facts.file_facts(files["served"]).schema_version)
    opened.clear()
    catalogue = database.current()
    assert opened == [files["served"]]
    expected = former_serving_facts(files["served"])
    found = (catalogue.version, catalogue.loaded_at, catalogue.counts, catalogue.features)
    assert found + (catalogue.history,) == expected
    assert list(catalogue.counts) == list(expected[2]) and catalogue.history is not None
    database.close()


def test_the_status_page_reads_the_served_file_in_its_request_and_the_previous_once(
    files, tmp_path, make_app, opened
):
    target = tmp_path / "served.sqlite3"
    shutil.copyfile(files["served"], target)
    shutil.copyfile(files["previous"], install.previous_path(target))
    expected = json.loads(json.dumps(former_status(target, paths=False)))
    opened.clear()
    answer = make_app(target).test_client().get("/api/v1/status/")  # the catalogue opened
    assert answer.status_code == 200 and answer.json == expected
    assert sorted(opened) == sorted([target, install.previous_path(target)])
    # An app whose catalogue is open already: the status page opens only the previous file.
    client = make_app(target).test_client()
    assert client.get("/api/v1/platforms/").status_code == 200
    opened.clear()
    assert client.get("/api/v1/status/").json == expected
    assert opened == [install.previous_path(target)]
