"""Loading and exporting catalogue folders, and every way a load can fail."""

import json
import shutil
import sqlite3
import tracemalloc
from pathlib import Path

import pytest

from demoserv.loader import build
from demoserv.loader.build import Builder
from demoserv.loader.export import export_catalogue
from demoserv.loader.files import catalogue_files
from demoserv.loader.reporting import CatalogueError, silent
from demoserv.loader.resources import LOAD_ORDER
from demoserv.loader.rows import Loader
from demoserv.loader.scratch import Scratch
from demoserv.loader.sources import load_catalogue
from demoserv.resources import BY_NAME
from demoserv.store.values import MAX_TEXT
from demoserv.web.db import read_only_engine

from . import oracle
from .conftest import walk
from .terminal import run_on_a_terminal

SAMPLE_EXPORT = (
    Path(__file__).resolve().parent / "data" / "upstream" / "demozoo-export-sample.sql.gz"
)

PRODUCTION = {
    "id": 1,
    "title": "Second Reality",
    "author_nicks": [
        {
            "name": "Future Crew",
            "abbreviation": "FC",
            "releaser": {"id": 10, "name": "Future Crew", "is_group": True},
        }
    ],
    "author_affiliation_nicks": [],
    "release_date": "1993-10",
    "supertype": "production",
    "platforms": [{"id": 2, "name": "MS-Dos"}],
    "types": [{"id": 1, "name": "Demo", "supertype": "production"}],
    "tags": ["classic"],
}
PARTY = {
    "id": 5,
    "name": "Assembly 1993",
    "tagline": "",
    "start_date": "1993-07-30",
    "end_date": "1993-08-01",
    "location": "Kauniainen, Finland",
    "is_online": False,
    "country_code": "FI",
    "latitude": 60.2,
    "longitude": 24.7,
    "website": "",
}


def write_lines(folder, name, lines):
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f"{name}.jsonl").open("wb") as out:
        for line in lines:
            out.write(line if isinstance(line, bytes) else json.dumps(line).encode() + b"\n")


def counts(path):
    engine = read_only_engine(path)
    try:
        with engine.connect() as connection:
            return dict(
                connection.exec_driver_sql("SELECT resource, count FROM record_counts").all()
            )
    finally:
        engine.dispose()


def with_field(record, path, value):
    """A deep copy of ``record`` with the field at dotted ``path`` set (or removed)."""
    record = json.loads(json.dumps(record))
    *parents, last = path.split(".")
    target = record
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    if value is KeyError:
        del target[last]
    else:
        target[last] = value
    return record


BAD_PRODUCTIONS = [
    ("missing field", with_field(PRODUCTION, "title", KeyError), "productions.jsonl:2: title: "),
    ("wrong type", with_field(PRODUCTION, "id", "1"), "productions.jsonl:2: id: "),
    ("bool as int", with_field(PRODUCTION, "id", True), "productions.jsonl:2: id: "),
    (
        "int as bool",
        with_field(PRODUCTION, "author_nicks.0.releaser.is_group", 1),
        "productions.jsonl:2: author_nicks.0.releaser.is_group: ",
    ),
    (
        "impossible day",
        with_field(PRODUCTION, "release_date", "1993-02-30"),
        'productions.jsonl:2: release_date: "1993-02-30" is not a real date.',
    ),
    (
        "impossible month",
        with_field(PRODUCTION, "release_date", "1993-13"),
        'productions.jsonl:2: release_date: "1993-13" is not a real date.',
    ),
    (
        "bad date shape",
        with_field(PRODUCTION, "release_date", "93-1-2"),
        "productions.jsonl:2: release_date: ",
    ),
    (
        "bad supertype",
        with_field(PRODUCTION, "supertype", "film"),
        "productions.jsonl:2: supertype: ",
    ),
    (
        "bad nested supertype",
        with_field(PRODUCTION, "types.0.supertype", "Demo"),
        "productions.jsonl:2: types.0.supertype: ",
    ),
    ("tags not strings", with_field(PRODUCTION, "tags", [1]), "productions.jsonl:2: tags.0: "),
    (
        "nick missing releaser",
        with_field(PRODUCTION, "author_nicks.0.releaser", KeyError),
        "productions.jsonl:2: author_nicks.0.releaser: ",
    ),
    ("negative id", with_field(PRODUCTION, "id", -4), "productions.jsonl:2: id: "),
    (
        "time out of range in UTC",
        with_field(PRODUCTION, "created_at", "9999-12-31T23:59:59-01:00"),
        'productions.jsonl:2: created_at: "9999-12-31T23:59:59-01:00" is not a date or '
        "date-time (ISO 8601) from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z in UTC.",
    ),
]


@pytest.fixture(scope="module")
def good_database(tmp_path_factory):
    """A database file loaded from one good catalogue, once a module."""
    folder = tmp_path_factory.mktemp("good")
    write_lines(folder / "files", "productions", [PRODUCTION])
    load_catalogue(folder / "files", folder / "served.sqlite3")
    return folder / "served.sqlite3"


@pytest.fixture
def served(good_database, tmp_path):
    """A served database holding one good catalogue (a copy of the module's: a load
    over it must leave it as it is), and a folder to break."""
    database = tmp_path / "served.sqlite3"
    shutil.copyfile(good_database, database)
    return database, tmp_path / "bad"


def assert_fails(source, database, message):
    before = database.read_bytes()
    with pytest.raises(CatalogueError) as error:
        load_catalogue(source, database)
    assert str(error.value).startswith(message), str(error.value)
    assert database.read_bytes() == before
    assert [p.name for p in database.parent.iterdir() if p.name.endswith(".loading")] == []


@pytest.mark.parametrize(
    "case, record, message", BAD_PRODUCTIONS, ids=[c[0] for c in BAD_PRODUCTIONS]
)
def test_bad_records_fail_with_file_line_field(served, case, record, message):
    database, bad = served
    write_lines(bad, "productions", [dict(PRODUCTION, id=2), record])
    assert_fails(bad, database, message)


@pytest.mark.parametrize(
    "field, value",
    [
        ("start_date", "1993-02-29"),
        ("end_date", ""),
        ("country_code", "fi"),
        ("country_code", "FIN"),
        ("latitude", 91.0),
        ("longitude", "24.7"),
        ("is_online", "no"),
        ("party_series", 99),
    ],
)
def test_bad_parties(served, field, value):
    database, bad = served
    write_lines(bad, "parties", [with_field(PARTY, field, value)])
    assert_fails(bad, database, f"parties.jsonl:1: {field}: ")


@pytest.mark.parametrize(
    "content, message",
    [
        (
            b'{"id": 1, "name": "Amiga"\n',
            "platforms.jsonl:1: invalid JSON: unexpected end of data at column 27",
        ),
        (b'{"id": 1, "name": "Amiga"}\n[1, 2]\n', "platforms.jsonl:2: record: not a JSON object"),
        (
            b'{"id": 1, "name": "Amiga"}\n{"id": 1, "name": "Amiga"}\n',
            "platforms.jsonl:2: id: duplicate id 1 (first on line 1)",
        ),
        (b'{"id": 1, "name": "\xe4miga"}\n', "platforms.jsonl:1: not valid UTF-8"),
        (b'{"id": 1}\n', "platforms.jsonl:1: name: Missing data for required field."),
    ],
)
def test_bad_files(served, content, message):
    database, bad = served
    write_lines(bad, "platforms", [content])
    assert_fails(bad, database, message)


def test_summary_contradicting_its_record(served):
    database, bad = served
    write_lines(bad, "releasers", [{"id": 10, "name": "Future Crew", "is_group": False}])
    write_lines(bad, "productions", [PRODUCTION])
    assert_fails(
        bad,
        database,
        "productions.jsonl:1: author_nicks.0.releaser.is_group: true contradicts releasers.jsonl:1",
    )


def test_summaries_contradicting_each_other(served):
    database, bad = served
    other = with_field(dict(PRODUCTION, id=2), "platforms.0.name", "PC")
    write_lines(bad, "productions", [PRODUCTION, other])
    assert_fails(
        bad, database, 'productions.jsonl:2: platforms.0.name: "PC" contradicts productions.jsonl:1'
    )


FC = {"id": 10, "name": "Future Crew", "is_group": True}
MEMBER = {"id": 11, "name": "Purple Motion", "is_group": False}
P2 = dict(PRODUCTION, id=2, release_parties=[5])
SERIES = {"id": 3, "name": "Assembly", "website": ""}


@pytest.mark.parametrize(
    "files, message",
    [
        (
            {"productions": [dict(PRODUCTION, platforms=[7])]},
            "productions.jsonl:1: platforms.0: no platform with id 7",
        ),
        (
            {
                "productions": [
                    PRODUCTION,
                    with_field(dict(PRODUCTION, id=2), "author_nicks.0.abbreviation", "F.C."),
                ]
            },
            'productions.jsonl:2: author_nicks.0.abbreviation: "F.C." contradicts '
            'productions.jsonl:1 (author_nicks.0), which gives nick "Future Crew" of '
            'releaser 10 the abbreviation "FC"',
        ),
        (
            {
                "releasers": [dict(FC, nicks=[{"name": "Future Crew", "abbreviation": ""}])],
                "productions": [PRODUCTION],
            },
            'productions.jsonl:1: author_nicks.0: nick "Future Crew" ("FC") is not a nick of '
            "releaser 10",
        ),
        (
            {
                "party_series": [dict(SERIES, parties=[]), dict(SERIES, id=4, parties=[5])],
                "parties": [dict(PARTY, party_series=3)],
            },
            "party_series.jsonl:2: parties.0: party 5 belongs to party series 3 (parties.jsonl:1)",
        ),
        (
            {"party_series": [dict(SERIES, parties=[6])], "parties": [PARTY]},
            "party_series.jsonl:1: parties.0: no party with id 6",
        ),
        (
            {
                "party_series": [dict(SERIES, parties=[5]), dict(SERIES, id=4, parties=[5])],
                "parties": [PARTY],
            },
            "party_series.jsonl:2: parties.0: party 5 is listed already, by "
            "party_series.jsonl:1 (parties.0)",
        ),
        (
            {"party_series": [dict(SERIES, parties=[])], "parties": [dict(PARTY, party_series=3)]},
            "parties.jsonl:1: party_series: party series 3 (party_series.jsonl:1) does not "
            "list party 5",
        ),
        (
            {"releasers": [FC, FC]},
            "releasers.jsonl:2: id: duplicate id 10 (first on line 1)",
        ),
        # Relations given on both sides must agree.
        (
            {
                "releasers": [
                    dict(MEMBER, member_of=[{"group": 10, "is_current": True}]),
                    dict(FC, members=[{"member": 11, "is_current": False}]),
                ]
            },
            'releasers.jsonl:2: members: {"is_current":false} for (11, 10) contradicts '
            'releasers.jsonl:1, which has {"is_current":true}',
        ),
        (
            {
                "releasers": [
                    dict(MEMBER, member_of=[{"group": 10, "is_current": True}]),
                    dict(FC, members=[]),
                ]
            },
            "releasers.jsonl:1: member_of: gives group 10 and member 11, but "
            "releasers.jsonl:2 does not list it in members",
        ),
        (
            {
                "releasers": [
                    dict(MEMBER, member_of=[]),
                    dict(FC, subgroups=[{"subgroup": 11, "is_current": True}]),
                ]
            },
            "releasers.jsonl:2: members: gives member 11 and group 10, but "
            "releasers.jsonl:1 does not list it in member_of",
        ),
        (
            {"parties": [dict(PARTY, releases=[1])], "productions": [PRODUCTION, P2]},
            "productions.jsonl:2: release_parties: gives party 5 and production 2, but "
            "parties.jsonl:1 does not list it in releases",
        ),
        (
            {
                "parties": [dict(PARTY, invitations=[])],
                "productions": [dict(PRODUCTION, invitation_parties=[5])],
            },
            "productions.jsonl:1: invitation_parties: gives party 5 and production 1, but "
            "parties.jsonl:1 does not list it in invitations",
        ),
    ],
)
def test_what_is_checked_once_every_file_is_read(served, files, message):
    database, bad = served
    for name, lines in files.items():
        write_lines(bad, name, lines)
    assert_fails(bad, database, message)


def _python_memory_of_reading(folder, count):
    """The peak of Python's allocations while the loader reads ``count`` releasers and
    as many parties and productions, each production naming a releaser by a nested
    summary, and each relation that can be given from both sides given from one:
    memberships, releases, invitations, placings (each in a competition known only from
    it) and parties of a series."""
    folder.mkdir()
    releasers = (
        {"id": i, "name": f"Releaser {i}", "is_group": i % 2 == 0}
        | ({"member_of": [{"group": i + 1, "is_current": True}]} if i % 2 else {})
        for i in range(1, count + 1)
    )
    write_lines(folder, "releasers", releasers)
    write_lines(folder, "party_series", [dict(SERIES, id=i) for i in range(1, count + 1)])
    parties = (dict(PARTY, id=i, party_series=i) for i in range(1, count + 1))
    write_lines(folder, "parties", parties)
    productions = (
        dict(
            PRODUCTION,
            id=i,
            release_parties=[i],
            invitation_parties=[i],
            competition_placings=[_placing(i, 1, party=i)],
            author_nicks=[
                {
                    "name": f"Nick {i}",
                    "abbreviation": "",
                    # Half name a releaser of the file, half one that only this names.
                    "releaser": {"id": i + count * (i % 2), "name": f"Releaser {i}"}
                    | {"is_group": i % 2 == 0},
                }
            ],
        )
        for i in range(1, count + 1)
    )
    write_lines(folder, "productions", productions)
    builder = Builder(str(folder / "new.sqlite3"))
    try:
        loader = Loader(builder, catalogue_files(folder), silent)
        tracemalloc.start()
        try:
            counts = loader.run()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        builder.flush()
        for table in ("memberships", "party_releases", "party_invitations", "placings"):
            rows = builder.connection.exec_driver_sql(f"SELECT count(*) FROM {table}").scalar()
            assert rows == (count // 2 if table == "memberships" else count), table
        placed = "SELECT count(*) FROM parties WHERE party_series_id = id AND series_position = 0"
        assert builder.connection.exec_driver_sql(placed).scalar() == count
    finally:
        builder.close()
    assert counts["releasers"] == count + count // 2 and counts["parties"] == count
    return peak


def test_memory_of_a_load_does_not_grow_with_the_catalogue(tmp_path, monkeypatch):
    # Small batches, so that a small catalogue fills them as a large one does.
    monkeypatch.setattr(build, "BATCH", 100)
    monkeypatch.setattr(Scratch, "BATCH", 100)
    monkeypatch.setattr(Scratch, "CACHED", 100)
    small = _python_memory_of_reading(tmp_path / "small", 600)
    large = _python_memory_of_reading(tmp_path / "large", 1800)
    # Kept in memory, 3,000 more releasers and productions took a megabyte and more: the
    # 1,200 more here, about 400 kB, more than the margin allowed.
    assert large < small * 1.2 + 100_000, (small, large)


def test_empty_or_missing_folder(served):
    database, bad = served
    bad.mkdir()
    assert_fails(bad, database, f"{bad}: no catalogue files")
    assert_fails(bad / "nope", database, f"{bad / 'nope'}: not a folder")


def test_url_fields_and_unknown_fields_are_ignored_and_blank_lines_skipped(tmp_path):
    source = tmp_path / "src"
    write_lines(
        source,
        "platforms",
        [
            b"\xef\xbb\xbf"
            + json.dumps({"id": 1, "name": "Amiga", "url": "x", "colour": 3}).encode()
            + b"\n",
            b"\n",
            {"id": 2, "name": "C64", "service_url": "y"},
        ],
    )
    load_catalogue(source, tmp_path / "db.sqlite3")
    assert counts(tmp_path / "db.sqlite3")["platforms"] == 2


def test_export_loads_back_to_the_same_answers(catalogue, loaded_database, make_app, tmp_path):
    """On a catalogue with every kind of nested record: the export holds each record's
    own fields as loaded, and loading the export gives the same API answers (of every
    resource)."""
    engine = read_only_engine(loaded_database)
    with engine.connect() as connection:
        exported = export_catalogue(connection, tmp_path / "out")
    engine.dispose()
    assert sorted(exported) == sorted(LOAD_ORDER)
    for resource in LOAD_ORDER:
        lines = (tmp_path / "out" / f"{resource}.jsonl").read_text(encoding="utf-8").splitlines()
        got = [json.loads(line) for line in lines]
        wanted = sorted(oracle.all_records(catalogue, resource), key=lambda r: r["id"])
        assert [r["id"] for r in got] == [r["id"] for r in wanted], resource
        for line, record in zip(got, wanted):
            for name in ("name", "title", "website", "release_date", "tags", "is_group"):
                if name in record:
                    assert line[name] == record[name], (resource, name)
        assert exported[resource] == len(wanted)
    load_catalogue(tmp_path / "out", tmp_path / "again.sqlite3")
    # Export then load is the identity: the same records, so the same version.
    assert record_facts(tmp_path / "again.sqlite3") == record_facts(loaded_database)
    first = make_app(loaded_database).test_client()
    again = make_app(tmp_path / "again.sqlite3").test_client()
    compared = 0
    for resource in oracle.KEYS:
        for page in walk(first, f"/api/v1/{resource}/?ordering=id"):
            assert again.get(f"/api/v1/{resource}/?ordering=id&page=1").status_code == 200
            for record in page["results"]:
                path = f"/api/v1/{resource}/{record['id']}/"
                assert again.get(path).json == first.get(path).json, path
                compared += 1
    for releaser in catalogue["releasers"][:30]:
        for sub in ("productions", "member_productions"):
            path = f"/api/v1/releasers/{releaser['id']}/{sub}/"
            assert again.get(path).json == first.get(path).json, path
    assert compared == sum(counts(loaded_database).values())


def test_absent_files_mean_no_records(tmp_path):
    source = tmp_path / "src"
    write_lines(source, "productions", [PRODUCTION])
    load_catalogue(source, tmp_path / "db.sqlite3")
    # Releasers, platforms and types are created from the nested summaries.
    given = {"platforms": 1, "productions": 1, "releasers": 1, "production_types": 1}
    assert counts(tmp_path / "db.sqlite3") == {name: given.get(name, 0) for name in BY_NAME}


def test_cli_load_and_export(app, tmp_path, catalogue, catalogue_dir):
    database = tmp_path / "cli.sqlite3"
    app.config["DATABASE"] = str(database)
    from demoserv.resources import RESOURCES
    from demoserv.store.fingerprint import schema_version
    from demoserv.web import db

    db.init_app(app, schema_version(RESOURCES))
    runner = app.test_cli_runner()
    result = runner.invoke(args=["load", str(catalogue_dir)])
    assert result.exit_code == 0, result.output
    # Not a terminal: one summary line.
    assert result.output.count("\n") == 1 and result.output.startswith("Loaded ")
    productions = len(catalogue["productions"])
    assert f"{productions} productions" in result.output
    result = runner.invoke(args=["export", str(tmp_path / "exported")])
    assert result.exit_code == 0 and f"{productions} productions" in result.output
    assert (tmp_path / "exported" / "productions.jsonl").read_bytes().count(b"\n") == productions

    bad = tmp_path / "bad"
    shutil.copytree(catalogue_dir, bad)
    with (bad / "bbses.jsonl").open("a") as out:
        out.write('{"id": "7"}\n')
    result = runner.invoke(args=["load", str(bad)])
    assert result.exit_code == 1
    line = len(catalogue["bbses"]) + 1
    assert result.output.strip() == f"bbses.jsonl:{line}: id: Not a valid integer."


def test_progress_bar_on_a_terminal(tmp_path, catalogue, catalogue_dir):
    """``flask load`` with its output on a pseudo-terminal draws a bar per file."""
    import os
    import sys

    env = dict(os.environ, DEMOSERV_DATABASE=str(tmp_path / "db.sqlite3"), DEMOSERV_SEED_DIR="")
    status, output = run_on_a_terminal(
        [sys.executable, "-m", "flask", "--app", "demoserv", "load", str(catalogue_dir)], env
    )
    assert status == 0, output
    text = output.decode()
    records = f"{len(catalogue['productions'])} records, "
    assert "productions.jsonl" in text and records in text and "/s" in text
    assert "100%" in text
    assert text.rstrip().splitlines()[-1].startswith("Loaded ")


@pytest.mark.parametrize(
    "line, message",
    [
        (
            b'{"id": 1, "name": "Amiga", "id": 2}\n',
            "platforms.jsonl:1: id: given twice in one object",
        ),
        (
            b'{"id": 1, "name" : "A", "name":"B"}\n',
            "platforms.jsonl:1: name: given twice in one object",
        ),
    ],
)
def test_a_key_given_twice_is_an_error(served, line, message):
    database, bad = served
    write_lines(bad, "platforms", [{"id": 3, "name": "C64"}, line])
    assert_fails(bad, database, message.replace(":1:", ":2:"))


def test_colons_in_strings_are_not_duplicate_keys(tmp_path):
    source = tmp_path / "src"
    record = {
        "id": 1,
        "name": 'a": "b": https://x',
        "website": "",
        "location": "",
        "latitude": None,
        "longitude": None,
        "tags": ['x":', "y"],
    }
    write_lines(source, "bbses", [record])
    load_catalogue(source, tmp_path / "db.sqlite3")
    assert counts(tmp_path / "db.sqlite3")["bbses"] == 1


def test_a_field_too_long_is_refused_early(served):
    from demoserv.loader import files

    database, bad = served
    title = "x" * (files.FIELD_LIMIT + 1)
    write_lines(bad, "productions", [dict(PRODUCTION, title=title)])
    assert_fails(bad, database, "productions.jsonl:1: title: too long (a string field holds")
    # A line past the line limit is refused having read only the limit.
    huge = b'{"id": 1, "title": "' + b"y" * (files.LINE_LIMIT + 10) + b'"}\n'
    write_lines(bad, "productions", [huge])
    assert_fails(bad, database, "productions.jsonl:1: title: too long (a string field holds")


def test_a_competition_known_only_from_a_placing(tmp_path, make_app):
    source = tmp_path / "src"
    party = {**PARTY, "competitions": [{"id": 70, "name": "Demo", "shown_date": None}]}
    write_lines(source, "parties", [party])
    placing = {
        "position": 2,
        "ranking": "2",
        "score": "",
        "competition": {"id": 77, "name": "Intro", "party": {"id": 5, "name": "Assembly 1993"}},
    }
    write_lines(source, "productions", [{**PRODUCTION, "competition_placings": [placing]}])
    load_catalogue(source, tmp_path / "db.sqlite3")
    client = make_app(tmp_path / "db.sqlite3").test_client()
    competitions = client.get("/api/v1/parties/5/").json["competitions"]
    assert [(c["id"], c["name"], c["shown_date"]) for c in competitions] == [
        (70, "Demo", None),
        (77, "Intro", None),  # after those the party lists
    ]
    assert [r["production"]["id"] for r in competitions[1]["results"]] == [1]
    placings = client.get("/api/v1/productions/1/").json["competition_placings"]
    assert [(p["position"], p["competition"]["id"]) for p in placings] == [(2, 77)]


def test_the_scratch_file_of_a_killed_load_is_removed_by_the_next(catalogue_dir, tmp_path):
    target = tmp_path / "catalogue.sqlite3"
    building = tmp_path / f".{target.name}.0123abcd.loading"
    builder = Builder(str(building))
    scratch = builder.scratch_path
    builder.connection.close()  # killed: neither closed nor removed
    assert scratch.exists() and building.exists()
    load_catalogue(catalogue_dir, target)
    assert not scratch.exists() and not building.exists()


def _placing(competition, position, party=5):
    return {
        "position": position,
        "ranking": "" if position is None else str(position),
        "score": "",
        "competition": {"id": competition, "name": f"Compo {competition}", "party": {"id": party}},
    }


def _result(production, position):
    return {
        "production": {"id": production},
        "position": position,
        "ranking": "" if position is None else str(position),
        "score": "",
    }


def _competition(competition, results):
    return {"id": competition, "name": f"Compo {competition}", "results": results}


@pytest.mark.parametrize(
    "competitions, placings, message",
    [
        (
            [_competition(20, [_result(1, 1)])],
            [_placing(20, 2)],
            'productions.jsonl:1: competition_placings: {"position":2,"ranking":"2","score":""} '
            'for (20, 1) contradicts parties.jsonl:1, which has {"position":1,"ranking":"1",'
            '"score":""}',
        ),
        (
            [_competition(20, [])],
            [_placing(20, 2)],
            "productions.jsonl:1: competition_placings: gives competition 20 and production 1, "
            "but parties.jsonl:1 does not list it in competitions.results",
        ),
        (
            [_competition(20, [_result(1, 1)])],
            [],
            "parties.jsonl:1: competitions.results: gives production 1 and competition 20, "
            "but productions.jsonl:1 does not list it in competition_placings",
        ),
    ],
)
def test_results_and_placings_must_agree(served, competitions, placings, message):
    database, bad = served
    write_lines(bad, "parties", [dict(PARTY, competitions=competitions)])
    write_lines(bad, "productions", [dict(PRODUCTION, competition_placings=placings)])
    assert_fails(bad, database, message)


def test_orders_of_results_and_placings_given_on_one_side(tmp_path, make_app):
    """A competition that only its productions place lists them by position (none
    last), then id; a production that gives no placings lists them by competition id.
    The best position is a production's for the placing filter."""
    source = tmp_path / "src"
    party = dict(
        PARTY,
        competitions=[
            {"id": 32, "name": "Compo 32", "results": [_result(4, 3)]},
            {"id": 31, "name": "Compo 31", "results": [_result(4, 1)]},
        ],
    )
    write_lines(source, "parties", [party])
    productions = [
        dict(PRODUCTION, id=1, competition_placings=[_placing(30, 2)]),
        dict(PRODUCTION, id=2, competition_placings=[_placing(30, None)]),
        dict(PRODUCTION, id=3, competition_placings=[_placing(30, 1)]),
        dict(PRODUCTION, id=4),  # its placings: from competitions 32 and 31
    ]
    write_lines(source, "productions", productions)
    load_catalogue(source, tmp_path / "db.sqlite3")
    client = make_app(tmp_path / "db.sqlite3").test_client()
    competitions = client.get("/api/v1/parties/5/").json["competitions"]
    results = {c["id"]: [r["production"]["id"] for r in c["results"]] for c in competitions}
    assert results == {32: [4], 31: [4], 30: [3, 1, 2]}
    placings = client.get("/api/v1/productions/4/").json["competition_placings"]
    assert [p["competition"]["id"] for p in placings] == [31, 32]
    placed = client.get("/api/v1/productions/?competition_placing_min=1&ordering=id").json[
        "results"
    ]
    assert [p["id"] for p in placed] == [3, 4]


def test_parties_of_a_series_that_lists_none_are_in_name_order(tmp_path, make_app):
    source = tmp_path / "src"
    write_lines(source, "party_series", [SERIES, dict(SERIES, id=4, parties=[8, 6])])
    names = {5: "Assembly 1993", 6: "Assembly 1992", 7: "assembly 1991", 8: "Abduction"}
    write_lines(
        source,
        "parties",
        [
            dict(PARTY, id=party, name=name, party_series=3 if party in (5, 7) else None)
            for party, name in names.items()
        ],
    )
    load_catalogue(source, tmp_path / "db.sqlite3")
    client = make_app(tmp_path / "db.sqlite3").test_client()
    for series, expected in ((3, [5, 7]), (4, [8, 6])):
        parties = client.get(f"/api/v1/party_series/{series}/").json["parties"]
        assert [party["id"] for party in parties] == expected


def test_orders_of_releases_and_memberships_given_on_one_side(tmp_path, make_app):
    """A side of a relation that its records do not give is derived from the other, in
    its declared order: a party's releases by the productions' sortable titles, a
    production's parties by the parties' names, a group's members and a member's
    groups by the other releaser's id."""
    source = tmp_path / "src"
    names = {5: "Revision", 6: "Xenium", 7: "Breakpoint", 8: "Assembly"}
    parties = [dict(PARTY, id=party, name=name) for party, name in names.items()]
    parties[0]["releases"] = parties[3]["releases"] = [1]
    parties[1]["invitations"] = parties[2]["invitations"] = [1]
    write_lines(source, "parties", parties)
    titles = {1: "Zeta", 2: "Mu", 3: "Alpha"}
    productions = [dict(PRODUCTION, id=i, title=title) for i, title in titles.items()]
    productions[1]["release_parties"] = productions[2]["release_parties"] = [6]
    write_lines(source, "productions", productions)
    releasers = [
        {"id": 41, "name": "Group B", "is_group": True, "members": [
            {"member": 31, "is_current": True}, {"member": 30, "is_current": True},
        ]},
        {"id": 40, "name": "Group A", "is_group": True},
        {"id": 31, "name": "A", "is_group": False, "member_of": [
            {"group": 41, "is_current": True}, {"group": 40, "is_current": False},
        ]},
        {"id": 30, "name": "B", "is_group": False, "member_of": [
            {"group": 41, "is_current": True}, {"group": 40, "is_current": True},
        ]},
    ]  # fmt: skip
    write_lines(source, "releasers", releasers)
    load_catalogue(source, tmp_path / "db.sqlite3")
    client = make_app(tmp_path / "db.sqlite3").test_client()
    production = client.get("/api/v1/productions/1/").json
    assert [party["id"] for party in production["release_parties"]] == [8, 5]
    assert [party["id"] for party in production["invitation_parties"]] == [7, 6]
    releases = client.get("/api/v1/parties/6/").json["releases"]
    assert [release["id"] for release in releases] == [3, 2]
    members = client.get("/api/v1/releasers/41/").json["members"]
    assert [member["member"]["id"] for member in members] == [31, 30]  # as given
    members = client.get("/api/v1/releasers/40/").json["members"]
    assert [member["member"]["id"] for member in members] == [30, 31]
    groups = client.get("/api/v1/releasers/31/").json["member_of"]
    assert [group["group"]["id"] for group in groups] == [41, 40]  # as given


def _screenshot(width):
    screenshot = {}
    for size in ("original", "standard", "thumbnail"):
        screenshot.update({f"{size}_url": f"https://example.com/{size}.png"})
        screenshot.update({f"{size}_width": 1, f"{size}_height": 1})
    return {**screenshot, "original_width": width}


# A value of each type past what the catalogue can hold, or not of its type at all.
VALUES_REFUSED = [
    ("productions", {"id": 2**63}, "id: out of range (a 64-bit integer)."),
    (
        "productions",
        {"competition_placings": [_placing(77, 2**63)]},
        "competition_placings.0.position: out of range (a 64-bit integer).",
    ),
    (
        "productions",
        {"competition_placings": [_placing(77, -(2**63) - 1)]},
        "competition_placings.0.position: Not a valid integer.",
    ),
    ("productions", {"screenshots": [_screenshot(2**31)]}, "screenshots.0.original_width: "),
    ("productions", {"created_at": "0001-01-01T00:00:00+05:00"}, "created_at: "),
    ("productions", {"updated_at": "9999-12-31T23:59:59-00:01"}, "updated_at: "),
    ("productions", {"updated_at": "10000-01-01"}, "updated_at: "),
    ("productions", {"release_date": "0000"}, 'release_date: "0000" is not a real date.'),
    ("productions", {"release_date": "10000-01-01"}, "release_date: "),
    ("productions", {"title": "x" * (MAX_TEXT + 1)}, "title: too long (more than 1000000"),
    ("parties", {"latitude": 90.000001}, "latitude: "),
    ("parties", {"longitude": -1e308}, "longitude: "),
    ("parties", {"start_date": "0001-02-29"}, 'start_date: "0001-02-29" is not a real date.'),
]


@pytest.mark.parametrize(
    "name, fields, message", VALUES_REFUSED, ids=[str(case[1])[:40] for case in VALUES_REFUSED]
)
def test_a_value_past_its_types_limits_is_refused_in_one_line(served, name, fields, message):
    database, bad = served
    write_lines(bad, "parties", [PARTY])
    write_lines(bad, "productions", [PRODUCTION])
    write_lines(bad, name, [{**(PARTY if name == "parties" else PRODUCTION), **fields}])
    before = database.read_bytes()
    with pytest.raises(CatalogueError) as error:
        load_catalogue(bad, database)
    assert str(error.value).startswith(f"{name}.jsonl:1: {message}"), str(error.value)
    assert "\n" not in str(error.value)
    assert database.read_bytes() == before


@pytest.mark.parametrize(
    "number, message",
    [
        (b"1e309", "invalid JSON: number is infinity when parsed as double at column "),
        (b"NaN", "invalid JSON: unexpected character, expected a JSON value at column "),
        (b"-Infinity", "invalid JSON: "),
    ],
)
def test_a_number_json_cannot_hold_is_refused_in_one_line(served, number, message):
    database, bad = served
    line = json.dumps(PARTY).replace("60.2", number.decode()).encode() + b"\n"
    write_lines(bad, "parties", [line])
    assert_fails(bad, database, f"parties.jsonl:1: {message}")


def test_values_at_the_limits_of_their_types_load_and_are_served(tmp_path, make_app):
    source = tmp_path / "src"
    largest = 2**63 - 1
    write_lines(
        source,
        "parties",
        [{**PARTY, "latitude": -90.0, "longitude": 180.0, "start_date": "0001-01-01"}],
    )
    extreme = {
        **PRODUCTION,
        "id": largest,
        "title": "x" * MAX_TEXT,
        "release_date": "9999-12-31",
        "created_at": "0001-01-01",
        "updated_at": "9999-12-31T23:59:59.999999Z",
        "competition_placings": [_placing(77, largest)],
        "screenshots": [_screenshot(2**31 - 1)],
    }
    least = {**PRODUCTION, "id": 2, "competition_placings": [_placing(77, -(2**63))]}
    write_lines(source, "productions", [extreme, least])
    database = tmp_path / "db.sqlite3"
    load_catalogue(source, database)
    client = make_app(database).test_client()
    record = client.get(f"/api/v1/productions/{largest}/").json
    assert record["title"] == extreme["title"] and record["release_date"] == "9999-12-31"
    assert [p["position"] for p in record["competition_placings"]] == [largest]
    assert record["screenshots"][0]["original_width"] == 2**31 - 1
    placings = client.get("/api/v1/productions/2/").json["competition_placings"]
    assert [p["position"] for p in placings] == [-(2**63)]
    party = client.get("/api/v1/parties/5/").json
    assert (party["latitude"], party["longitude"], party["start_date"]) == (-90, 180, "0001-01-01")
    listings = {
        "competition_placing_min=0": [2],
        "competition_placing_min=999999999": [2],
        "released_since=9999-12-31": [largest],
        "added_before=0001-01-02": [largest],
        "updated_since=9999-12-31T23:59:59.999999": [largest],
    }
    for query, ids in listings.items():
        assert walk_ids(client, f"/api/v1/productions/?{query}") == ids, query


def walk_ids(client, url):
    return [record["id"] for page in walk(client, url) for record in page["results"]]


def record_facts(path):
    """The version and each record's digest of the catalogue file at ``path``."""
    connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        version = connection.execute("SELECT version FROM catalogue_info").fetchone()[0]
        digests = connection.execute(
            "SELECT resource, id, digest FROM record_digests ORDER BY resource, id"
        ).fetchall()
    finally:
        connection.close()
    return version, digests
