"""The upstream's ``/api/adhoc/`` paths: its own answers for the sample export, byte for
byte (tied rows, and the links inside a cell, compared as multisets where the upstream
leaves their order to its database), the values' rules on a small catalogue, and the
import's checks of the values the upstream reads as numbers."""

import csv
import datetime
import gzip
import io
import json
import tarfile
from collections import Counter
from pathlib import Path

import pytest

from demoserv.loader.adhoc_values import download_address, literal, parameter_from_url
from demoserv.loader.reporting import CatalogueError
from demoserv.loader.sources import load_catalogue

from .conftest import SITE_URL, suite_app

UPSTREAM = Path(__file__).resolve().parent / "data" / "upstream"
SAMPLE = UPSTREAM / "demozoo-export-sample.sql.gz"
ANSWERS = UPSTREAM / "adhoc-answers.tar.gz"
# Per CSV path: the column the upstream orders by (ties: its database's order), and the
# columns that join several links (their order, within a class, is the database's too).
CSV_ORDERS = {
    "/api/adhoc/klubi/demoshow-prods/": (3, (7, 8, 9)),
    "/api/adhoc/scenesat/monthly-releases/": (3, (6,)),
    "/api/adhoc/eq/demos/": (2, (7,)),
    "/api/adhoc/group-abbreviations/": (2, ()),
}


@pytest.fixture(scope="module")
def upstream(tmp_path_factory):
    folder = tmp_path_factory.mktemp("adhoc")
    with tarfile.open(ANSWERS) as archive:
        archive.extractall(folder, filter="data")
    folder = folder / "adhoc-answers"
    return folder, json.loads((folder / "index.json").read_text())


@pytest.fixture(scope="module")
def sample_client(tmp_path_factory):
    database = tmp_path_factory.mktemp("adhoc-imported") / "catalogue.sqlite3"
    load_catalogue(SAMPLE, database)
    return suite_app(database).test_client()


def _request(client, key):
    """The request an index key names: ``METHOD path?query [Header: value]``."""
    method, rest = key.split(" ", 1)
    headers = {}
    if rest.endswith("]"):
        rest, header = rest[:-1].split(" [")
        name, value = header.split(": ", 1)
        headers[name] = value
    return client.open(rest, method=method, headers=headers), rest


def _cells(cell):
    """A cell of joined links as a multiset (a bytes literal's text, or the cell)."""
    if cell.startswith("b'") and cell.endswith("'"):
        cell = cell[2:-1]
    return tuple(sorted(cell.split(" / ")))


def _csv_runs(body, key, joined):
    """The rows of a CSV body as runs of equal ``key`` column, each run a multiset of
    rows whose ``joined`` columns are multisets."""
    rows = list(csv.reader(io.StringIO(body.decode("ascii"), newline="")))
    assert body.endswith(b"\r\n") and rows, body[-20:]
    runs = []
    for row in rows[1:]:
        normal = tuple(_cells(cell) if i in joined else cell for i, cell in enumerate(row))
        if runs and runs[-1][0] == row[key]:
            runs[-1][1][normal] += 1
        else:
            runs.append((row[key], Counter([normal])))
    return rows[0], runs


def test_every_upstream_answer(upstream, sample_client):
    folder, index = upstream
    meta = json.loads((folder / "meta.json").read_text())["requests"]
    compared = 0
    for key, body_file in index.items():
        expected = (folder / body_file).read_bytes()
        status = meta[key]["status"]
        response, address = _request(sample_client, key)
        path = address.split("?")[0]
        if key.startswith("POST"):  # a write: this service's 405 (README)
            assert response.status_code == 405 and response.json["detail"], key
            continue
        if status == 301:  # the redirect to the trailing slash, query kept
            assert response.status_code in (301, 308), key
            query = address.partition("?")[2]
            slashed = path + "/" + (f"?{query}" if query else "")
            assert response.location.endswith(slashed), (key, response.location)
            continue
        assert response.status_code == status, key
        if status == 403:  # staff only upstream; here in the service's JSON error shape
            assert response.json == {"detail": "You do not have permission to perform this action."}
            continue
        assert response.headers["Content-Type"] == _header(folder, body_file, "Content-Type")
        if key.startswith("HEAD"):
            assert response.data == b"" and expected == b""
            continue
        if path in CSV_ORDERS:
            assert _csv_runs(response.data, *CSV_ORDERS[path]) == _csv_runs(
                expected, *CSV_ORDERS[path]
            ), key
        else:
            assert response.data == expected, key
        compared += 1
    assert compared == 35  # and 13 redirects, 2 writes, 2 HEAD, 1 refusal


def _header(folder, body_file, name):
    headers = (folder / body_file.replace(Path(body_file).suffix, ".headers.txt")).read_text()
    for line in headers.splitlines():
        if line.lower().startswith(name.lower() + ":"):
            return line.split(":", 1)[1].strip()
    raise KeyError(name)


def test_the_other_scene_database_gets_the_upstream_id_map_exactly(upstream, sample_client):
    folder, index = upstream
    path = "/api/adhoc/pouet/prod-demozoo-ids-by-pouet-id/"
    response = sample_client.get(path)
    assert response.data == (folder / index[f"GET {path}"]).read_bytes()
    assert response.headers["Content-Type"] == "text/javascript"


def test_stored_answers_are_cached_and_compressed(sample_client):
    path = "/api/adhoc/group-abbreviations/"
    first = sample_client.get(path, headers={"Accept-Encoding": "gzip"})
    assert first.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(first.data).startswith(b"ID,Demozoo URL,")
    again = sample_client.get(path, headers={"If-None-Match": first.headers["ETag"]})
    assert again.status_code == 304
    assert first.headers["Access-Control-Allow-Origin"] == "*"


def test_a_month_without_releases_and_no_month(sample_client):
    empty = b"Demozoo URL,Title,By,Release date,Type,Platform,Download URL\r\n"
    for query in ("?month=1982-02", "", "?month=", "?month=2023-05-01", "?month=2004-13"):
        response = sample_client.get("/api/adhoc/scenesat/monthly-releases/" + query)
        assert response.data == empty, query
    # The default month changes with the date: no ETag that would outlive it.
    assert "ETag" not in response.headers
    assert (
        sample_client.get("/api/adhoc/scenesat/monthly-releases/?month=2023-5").data
        == sample_client.get("/api/adhoc/scenesat/monthly-releases/?month=2023-05").data
    )


# A small catalogue from files: each rule of the values, one production at a time.
def _production(production_id, title, release_date, types, **more):
    return {
        "id": production_id,
        "title": title,
        "author_nicks": [_nick("Ocean", 1, True)],
        "author_affiliation_nicks": [],
        "release_date": release_date,
        "supertype": "production",
        "platforms": [{"id": 1, "name": "ZX Spectrum"}],
        "types": [
            {"id": type_id, "name": name, "supertype": "production"} for type_id, name in types
        ],
        "tags": [],
        **more,
    }


def _nick(name, releaser_id, is_group, releaser_name=None):
    releaser = {"id": releaser_id, "name": releaser_name or name, "is_group": is_group}
    return {"name": name, "abbreviation": "", "releaser": releaser}


DEMO, DISKMAG, TOOL = (1, "Demo"), (2, "Diskmag"), (3, "Tool")
SMALL = [
    _production(
        1,
        'It\'s "quoted", with commas, Ærø',
        "2004-06-03",
        [DEMO],
        author_affiliation_nicks=[_nick("Aura", 2, True), _nick("Ärger", 3, True)],
        download_links=[
            {"link_class": "SceneOrgFile", "url": "https://files.scene.org/view/demos/%FCber.zip"}
        ],
        external_links=[
            {"link_class": "PouetProduction", "url": "https://www.pouet.net/prod.php?which=42"},
            {"link_class": "YoutubeVideo", "url": "https://www.youtube.com/watch?v=abc"},
        ],
    ),
    _production(2, "No type", "2004-06", []),
    _production(3, "A diskmag", "2004-06-17", [DISKMAG]),
    _production(4, "Only a tool", "2004-06-17", [TOOL]),
    _production(5, "A year only", "2004", [DEMO]),
    _production(
        6,
        "By sceners of two countries",
        None,
        [DEMO],
        credits=[
            {"nick": _nick("Zed", 11, False), "category": "Code", "role": ""},
            {"nick": _nick("Ann", 10, False), "category": "Music", "role": ""},
        ],
    ),
    _production(7, "By a group whose members share a country", None, [DEMO]),
]
# Ocean's members are all from one country; Zed and Ann are from two.
RELEASERS = [
    {
        "id": 1,
        "name": "Ocean",
        "is_group": True,
        "members": [
            {"member": {"id": 10, "name": "Ann"}, "is_current": True},
            {"member": {"id": 12, "name": "Bo"}, "is_current": False},
        ],
    },
    {"id": 10, "name": "Ann", "is_group": False, "country_code": "SE"},
    {"id": 11, "name": "Zed", "is_group": False, "country_code": "FI"},
    {"id": 12, "name": "Bo", "is_group": False, "country_code": "SE"},
]


@pytest.fixture(scope="module")
def small_client(tmp_path_factory):
    folder = tmp_path_factory.mktemp("small")
    for name, records in (("productions", SMALL), ("releasers", RELEASERS)):
        (folder / f"{name}.jsonl").write_text(
            "".join(json.dumps(record) + "\n" for record in records)
        )
    database = folder / "catalogue.sqlite3"
    load_catalogue(folder, database)
    return suite_app(database, SITE_URL=SITE_URL).test_client()


def _rows(response):
    return list(csv.reader(io.StringIO(response.data.decode("ascii"), newline="")))[1:]


def test_month_lists_and_their_values(small_client):
    rows = _rows(small_client.get("/api/adhoc/klubi/demoshow-prods/?month=2004-6"))
    host = SITE_URL.split("://")[1]
    # By release date, a month's precision as its first day.
    assert [row[1] for row in rows] == [
        "b'No type'",  # kept: its type is unknown
        literal(SMALL[0]["title"]),
        "b'A diskmag'",  # the upstream's type is Diskmag, not Diskmagazine: kept
    ]  # a tool only: left out; a year-precision date: in no month
    first = rows[1]
    assert first[0] == f"b'http://{host}/productions/1/'"
    assert first[1] == "b'It\\'s \"quoted\", with commas, \\xc3\\x86r\\xc3\\xb8'"
    assert first[2] == "b'Ocean / Aura ^ \\xc3\\x84rger'"
    assert [row[3] for row in rows] == ["June 2004", " 3 June 2004", "17 June 2004"]
    assert first[7] == "ftp://ftp.scene.org/pub/demos/%FCber.zip"
    assert first[8] == "https://www.youtube.com/watch?v=abc"
    assert first[9] == "https://www.pouet.net/prod.php?which=42"
    body = small_client.get("/api/adhoc/klubi/demoshow-prods/?month=2004-06").data
    assert b'"b\'It\\\'s ""quoted"", with commas, \\xc3\\x86r\\xc3\\xb8\'"' in body


def test_eq_dates_by_precision_and_the_id_map_from_files(small_client):
    rows = _rows(small_client.get("/api/adhoc/eq/demos/"))
    assert {row[0]: row[4] for row in rows} == {
        "1": "2004-06-03",
        "2": "2004-06",
        "3": "2004-06-17",
        "4": "2004-06-17",
        "5": "2004",
        "6": "",
        "7": "",
    }
    nationality = {row[0]: row[6] for row in rows}
    # Credited sceners' countries (sorted); a group's members' one shared country.
    assert nationality["6"] == "FI / SE"
    assert nationality["7"] == "SE"
    assert rows[0][2] == "b'A diskmag'"  # by title, code point order
    response = small_client.get("/api/adhoc/pouet/prod-demozoo-ids-by-pouet-id/")
    assert response.data == b'[{"pouet_id": 42, "demozoo_id": 1}]'


def test_the_seed_answers_from_what_its_records_hold(tmp_path):
    seed = Path(__file__).resolve().parent.parent / "seed"
    database = tmp_path / "seed.sqlite3"
    load_catalogue(seed, database)
    client = suite_app(database).test_client()
    pouet = client.get("/api/adhoc/pouet/prod-demozoo-ids-by-pouet-id/").get_json(force=True)
    links = [
        link["url"]
        for line in (seed / "productions.jsonl").read_text().splitlines()
        for link in json.loads(line).get("external_links", [])
        if link["link_class"] == "PouetProduction"
    ]
    assert links and len(pouet) == len(links)
    assert {f"https://www.pouet.net/prod.php?which={item['pouet_id']}" for item in pouet} == set(
        links
    )
    assert client.get("/api/adhoc/zxdemo/prod-demozoo-ids-by-zxdemo-id/").data == b"[]"


def test_a_folders_adhoc_file_gives_what_the_records_do_not(tmp_path):
    """adhoc.jsonl's rows are used for the records it names (an archived link, a
    differentiator); rows of records the folder lacks are left out; what it does not
    give is derived; a bad line fails the load with file, line and field."""
    folder = tmp_path / "folder"
    folder.mkdir()
    for name, records in (("productions", SMALL), ("releasers", RELEASERS)):
        (folder / f"{name}.jsonl").write_text(
            "".join(json.dumps(record) + "\n" for record in records)
        )
    link = {"owner": "production", "link_class": "ZxdemoItem", "parameter": "77", "url": "x"}
    rows = [
        {"link": {**link, "owner_id": 2, "seq": 5, "is_download": False}},
        {"link": {**link, "owner_id": 999, "seq": 6, "is_download": False}},  # no such record
        {"nick": {"releaser_id": 3, "position": 0, "seq": 1, "differentiator": "Finland"}},
    ]
    (folder / "adhoc.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    database = tmp_path / "catalogue.sqlite3"
    load_catalogue(folder, database)
    client = suite_app(database, SITE_URL=SITE_URL).test_client()
    zxdemo = client.get("/api/adhoc/zxdemo/prod-demozoo-ids-by-zxdemo-id/")
    assert zxdemo.data == b'[{"zxdemo_id": 77, "demozoo_id": 2}]'
    # Production 1's Pouet link, not in the file, is derived from its URL.
    pouet = client.get("/api/adhoc/pouet/prod-demozoo-ids-by-pouet-id/")
    assert pouet.data == b'[{"pouet_id": 42, "demozoo_id": 1}]'
    differentiators = {
        row[0]: row[3] for row in _rows(client.get("/api/adhoc/group-abbreviations/"))
    }
    assert differentiators["3"] == "b'Finland'"
    with (folder / "adhoc.jsonl").open("a") as out:
        out.write(json.dumps({"nick": {"releaser_id": 3, "position": 0, "seq": "1"}}) + "\n")
    with pytest.raises(CatalogueError, match=r"^adhoc\.jsonl:4: nick\.seq: Not a valid integer"):
        load_catalogue(folder, tmp_path / "bad.sqlite3")


def test_values():
    assert literal("") == "b''"
    assert literal("ø") == "b'\\xc3\\xb8'"
    assert download_address("SceneOrgFile", "/a/über.zip", "x") == (
        "ftp://ftp.scene.org/pub/a/%FCber.zip"
    )
    # Outside ISO-8859-1 (the upstream fails): UTF-8.
    assert (
        download_address("SceneOrgFile", "/a/ł.zip", "x") == "ftp://ftp.scene.org/pub/a/%C5%82.zip"
    )
    assert download_address("ModlandFile", "/p", "https://ftp.modland.com/p") == (
        "https://ftp.modland.com/p"
    )
    assert parameter_from_url(
        "PouetParty", "https://www.pouet.net/party.php?which=7&when=1999"
    ) == ("7/1999")
    assert parameter_from_url("PouetProduction", "https://example.com/") is None


def _sample_text():
    return gzip.decompress(SAMPLE.read_bytes()).decode()


@pytest.mark.parametrize(
    "table, link_class, parameter, message",
    [
        (
            "parties_partyexternallink",
            "PouetParty",
            "1684-2015",
            "parties_partyexternallink:{line}: parameter: '1684-2015' is not a link of class "
            "PouetParty",
        ),
        (
            "parties_partyexternallink",
            "PouetParty",
            "1684/MMXV",
            "parties_partyexternallink:{line}: parameter: not a PouetParty parameter",
        ),
        (
            "productions_productionlink",
            "PouetProduction",
            "22621x",
            "productions_productionlink:{line}: parameter: not a PouetProduction id",
        ),
        (
            "demoscene_releaserexternallink",
            "ZxdemoAuthor",
            "abc",
            "demoscene_releaserexternallink:{line}: parameter: not a ZxdemoAuthor id",
        ),
    ],
)
def test_a_bad_value_in_an_export_is_refused_with_its_line(
    tmp_path, table, link_class, parameter, message
):
    text = _sample_text()
    start = text.index(f"COPY public.{table} ")
    at = text.index(f"\t{link_class}\t", start)
    line_start = text.rindex("\n", 0, at) + 1
    line_end = text.index("\n", at)
    fields = text[line_start:line_end].split("\t")
    fields[2] = parameter
    text = text[:line_start] + "\t".join(fields) + text[line_end:]
    line = text[:line_start].count("\n") + 1
    dump = tmp_path / "dump.sql.gz"
    dump.write_bytes(gzip.compress(text.encode()))
    with pytest.raises(CatalogueError) as error:
        load_catalogue(dump, tmp_path / "served.sqlite3")
    assert str(error.value).startswith(message.format(line=line)), str(error.value)


def test_month_default_is_the_month_before(monkeypatch):
    from demoserv.web.views.adhoc import previous_month

    assert previous_month(datetime.date(2026, 1, 15)) == "2025-12"
    assert previous_month(datetime.date(2026, 11, 1)) == "2026-10"


def _set_field(text, table, row_start, column, value):
    """``text`` with one field of the row of ``table`` starting ``row_start`` replaced."""
    start = text.index(f"COPY public.{table} ")
    header = text[start : text.index("\n", start)]
    columns = header[header.index("(") + 1 : header.index(")")].split(", ")
    at = text.index("\n" + row_start, start) + 1
    end = text.index("\n", at)
    fields = text[at:end].split("\t")
    fields[columns.index(column)] = value
    return text[:at] + "\t".join(fields) + text[end:]


def test_unparsed_bylines_and_differentiators_from_an_export(tmp_path):
    text = _set_field(
        _sample_text(), "productions_production", "4634\t", "unparsed_byline", "Crew & Friends"
    )
    text = _set_field(text, "demoscene_nick", "181\t", "differentiator", "C64")
    dump = tmp_path / "dump.sql.gz"
    dump.write_bytes(gzip.compress(text.encode()))
    database = tmp_path / "catalogue.sqlite3"
    load_catalogue(dump, database)
    client = suite_app(database).test_client()
    klubi = _rows(client.get("/api/adhoc/klubi/demoshow-prods/?month=2004-10"))
    # The upstream shows a byline it could not parse in place of the nicks.
    assert [row[2] for row in klubi if "/4634/" in row[0]] == ["b'Crew & Friends'"]
    groups = _rows(client.get("/api/adhoc/group-abbreviations/"))
    assert ["542", "b'Andromeda'", "b'C64'"] in [[row[0], row[2], row[3]] for row in groups]
