"""The upstream's own answers: importing the sample export (tests/data/upstream/) gives,
for every request the upstream answered, the same JSON — apart from what README lists
under "Differences from the upstream": orders the upstream leaves to its database
(ties), its duplicate rows in two filters, and its error wording."""

import gzip
import json
import re
import shutil
import tarfile
from itertools import groupby
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pytest

from demoserv.loader.export import export_catalogue
from demoserv.loader.pgdump import LINE_LIMIT
from demoserv.loader.reporting import CatalogueError
from demoserv.loader.resources import FROM_UPSTREAM
from demoserv.loader.sources import load_catalogue
from demoserv.store.values import MAX_TEXT, sortable_title
from demoserv.web.db import read_only_engine

from . import oracle
from .conftest import suite_app
from .test_load import record_facts

# The upstream's sample export and its API's answers for it (tests/data/upstream/README.md).
UPSTREAM = Path(__file__).resolve().parent / "data" / "upstream"
SAMPLE = UPSTREAM / "demozoo-export-sample.sql.gz"
ANSWERS = UPSTREAM / "answers.tar.gz"

# The upstream lists a production once per matching credit or placing (no DISTINCT).
DUPLICATING_FILTERS = ("author=", "competition_placing_min=")
# Keys of the orders whose ties the upstream leaves to its database.
TIE_KEYS = {
    # CONTRACT.md fixes the name order (punctuation, digits, letters), which is not the
    # upstream database's collation: only the count and links are compared.
    "name": None,
    "sortable_title": lambda record: sortable_title(record["title"]),
    "release_date_date": lambda record: record["release_date"] or "",
    "-start_date_date": lambda record: record["start_date"],
}


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    folder = tmp_path_factory.mktemp("golden")
    with tarfile.open(ANSWERS) as archive:
        archive.extractall(folder, filter="data")
    return folder / "golden-shared"


def upstream_app(database, **config):
    """The upstream's answers hold pages of the contract's sizes: every app here serves
    the declared page sizes."""
    return suite_app(database, page_sizes=None, **config)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    database = tmp_path_factory.mktemp("imported") / "catalogue.sqlite3"
    counts, _ = load_catalogue(SAMPLE, database)
    return database, counts


@pytest.fixture(scope="module")
def upstream_client(imported):
    return upstream_app(imported[0], SERVICE_URL_FIELD="demozoo_url").test_client()


def _ties_sorted(items, key, tie_break):
    """``items`` with each run of equal ``key`` sorted by ``tie_break``."""
    return [item for _, run in groupby(items, key=key) for item in sorted(run, key=tie_break)]


def _normalised(value):
    """Nick lists with equal names in a fixed order: the upstream's order of such ties
    differs between its own endpoints."""
    if isinstance(value, dict):
        return {
            key: (
                _ties_sorted(
                    [_normalised(item) for item in item_value],
                    key=lambda nick: nick["name"],
                    tie_break=lambda nick: nick["releaser"]["id"],
                )
                if key in ("author_nicks", "author_affiliation_nicks")
                else _normalised(item_value)
            )
            for key, item_value in value.items()
        }
    if isinstance(value, list):
        return [_normalised(item) for item in value]
    return value


def _ordering(request):
    query = request.partition("?")[2]
    for part in query.split("&"):
        if part.startswith("ordering="):
            return part.removeprefix("ordering=")
    resource = request.split("/")[3]
    return "sortable_title" if resource == "productions" else "name"


def test_import_counts(imported, golden):
    """The import holds as many records of each resource whose load module has its part
    of the import (``upstream``) as the upstream's API counts for the same export, and
    none of any other resource."""
    index = json.loads((golden / "index.json").read_text())
    counted = {
        name: json.loads((golden / index[f"/api/v1/{name}/"]).read_text())["count"]
        for name in FROM_UPSTREAM
    }
    assert counted and {name: count for name, count in imported[1].items() if count} == counted


# The upstream's answers that are ours byte for byte (of 5,378): the others differ in
# orders the contract fixes otherwise or the upstream leaves to its database.
IDENTICAL_ANSWERS = 5217


def test_every_upstream_answer(golden, upstream_client):
    index = json.loads((golden / "index.json").read_text())
    meta = json.loads((golden / "meta.json").read_text())
    compared = {"equal": 0, "ties": 0, "duplicates": 0, "errors": 0}
    identical = 0
    for request, name in index.items():
        response = upstream_client.get(
            request, headers={"Host": "testserver", "Accept": "application/json"}
        )
        assert response.status_code == meta[request]["status"], request
        body = (golden / name).read_bytes()
        identical += response.data == body
        wanted = json.loads(body)
        got = response.json
        if response.status_code != 200:
            assert "detail" in got  # the wording differs (README)
            compared["errors"] += 1
            continue
        if isinstance(got, list):  # a releaser's productions: ties by date, duplicates
            unique = list({record["id"]: record for record in wanted}.values())
            by_date = {
                "key": lambda record: record["release_date"] or "",
                "tie_break": lambda record: record["id"],
            }
            assert _normalised(_ties_sorted(got, **by_date)) == _normalised(
                _ties_sorted(unique, **by_date)
            ), request
            compared["ties"] += 1
            continue
        if "results" in got and any(key in request for key in DUPLICATING_FILTERS):
            ids = [record["id"] for record in wanted["results"]]
            ours = {record["id"] for record in got["results"]}
            if wanted["next"] is None and wanted["previous"] is None:
                assert [record["id"] for record in got["results"]] == list(dict.fromkeys(ids))
            else:
                assert got["count"] <= wanted["count"]
            assert ours or not ids
            compared["duplicates"] += 1
            continue
        if "results" in got:
            ordering = _ordering(request)
            if ordering in TIE_KEYS and got != wanted:
                key = TIE_KEYS[ordering]
                if key is not None:
                    assert [key(record) for record in got["results"]] == [
                        key(record) for record in wanted["results"]
                    ], request
                assert {k: got[k] for k in ("count", "next", "previous")} == {
                    k: wanted[k] for k in ("count", "next", "previous")
                }
                same_place = [
                    (ours, theirs)
                    for ours, theirs in zip(got["results"], wanted["results"])
                    if ours["id"] == theirs["id"]
                ]
                for ours, theirs in same_place:
                    assert _normalised(ours) == _normalised(theirs), request
                compared["ties"] += 1
                continue
        assert _normalised(got) == _normalised(wanted), request
        assert list(got) == list(wanted)
        compared["equal"] += 1
    assert sum(compared.values()) == len(index), compared
    # Every detail record is compared whole; sub-resources and tied pages as above.
    assert compared["equal"] >= 4100, compared
    # Byte for byte (docs/api.md lists what differs and why): a change that loses one fails.
    assert identical >= IDENTICAL_ANSWERS, (identical, len(index))


def _page_number(link):
    return int(dict(parse_qsl(urlsplit(link).query)).get("page", 1))


def test_links_of_lists_asked_with_spaces_ampersands_and_accents(golden, upstream_client):
    """The recorded answers hold one list with links asked with commas (``fields=``,
    compared byte for byte above) and none asked with spaces, ``&`` or letters outside
    ASCII. Each recorded page of a fixed order with links, its links checked against
    Django REST framework's algorithm (``oracle.upstream_link``), is asked again with
    parameters holding them, which the upstream ignores but keeps in its links: the same
    page, its links as that algorithm writes them."""
    index = json.loads((golden / "index.json").read_text())
    extra = "note=R%26D+a,b%20c&name_note=%C3%A9t%C3%A9+%E2%82%AC&fields=id,url&blank="
    headers = {"Host": "testserver", "Accept": "application/json"}
    compared = 0
    for request, name in index.items():
        wanted = json.loads((golden / name).read_text())
        if (
            not isinstance(wanted, dict)
            or not (wanted.get("next") or wanted.get("previous"))
            or not re.search(r"ordering=-?id(&|$)", request)
            or any(key in request for key in DUPLICATING_FILTERS)
        ):
            continue
        number = (
            _page_number(wanted["next"]) - 1
            if wanted["next"]
            else _page_number(wanted["previous"]) + 1
        )
        for link, page in (("next", number + 1), ("previous", number - 1)):
            if wanted[link]:
                assert wanted[link] == oracle.upstream_link(f"http://testserver{request}", page)
        if "fields=" in request:
            continue  # its own fields: the others are asked with fields=id,url
        asked = f"{request}&{extra}"
        got = upstream_client.get(asked, headers=headers).json
        for link, page in (("next", number + 1), ("previous", number - 1)):
            expected = wanted[link] and oracle.upstream_link(f"http://testserver{asked}", page)
            assert got[link] == expected, (request, link)
        fields = ("url", "id")
        assert got["count"] == wanted["count"]
        assert got["results"] == [
            {key: record[key] for key in fields} for record in wanted["results"]
        ]
        compared += 1
    assert compared >= 15, compared


def _with_suffix(value, suffix):
    """An upstream answer as the upstream serves it on a path with a format suffix: every
    API address ends with the suffix in place of its trailing slash."""
    if isinstance(value, dict):
        return {key: _with_suffix(item, suffix) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_suffix(item, suffix) for item in value]
    if isinstance(value, str) and value.startswith("http://testserver/api/v1/"):
        return re.sub(r"/(\?|$)", suffix + r"\1", value, count=1)
    return value


def _suffixed_path(request, suffix):
    path, _, query = request.partition("?")
    path = path if path == "/api/v1/" else path[:-1]
    return path + suffix + (f"?{query}" if query else "")


def test_upstream_answers_on_suffixed_paths_jsonp_and_indented(golden, upstream_client):
    """The upstream's answers of every kind whose order is fixed (details, pages by id,
    filtered pages, ``fields=``), asked with a format suffix, as JSONP and indented: the
    same records, with the addresses and wrapping UPSTREAM.md records."""
    index = json.loads((golden / "index.json").read_text())
    chosen = [
        request
        for request in index
        if ("ordering=id" in request or request.count("/") == 5)
        and not any(key in request for key in DUPLICATING_FILTERS)
        and "99999" not in request
        and "notadate" not in request
    ]
    chosen = chosen[::15] + [r for r in chosen if "?" in r]
    assert len(chosen) > 300
    headers = {"Host": "testserver", "Accept": "application/json"}
    for request in chosen:
        wanted = json.loads((golden / index[request]).read_text())
        for suffix in (".json", ".api"):
            got = upstream_client.get(_suffixed_path(request, suffix), headers=headers).json
            assert _normalised(got) == _normalised(_with_suffix(wanted, suffix)), request
        join = "&" if "?" in request else "?"
        jsonp = upstream_client.get(f"{request}{join}format=jsonp&callback=cb", headers=headers)
        assert jsonp.headers["Content-Type"] == "application/javascript; charset=utf-8"
        assert jsonp.data.startswith(b"cb(") and jsonp.data.endswith(b");")
        indented = upstream_client.get(
            request, headers={**headers, "Accept": "application/json; indent=4"}
        )
        compact = upstream_client.get(request, headers=headers)
        assert (
            indented.data
            == json.dumps(
                compact.json, indent=4, ensure_ascii=False, separators=(",", ": ")
            ).encode()
        ), request
        assert _normalised(json.loads(indented.data)) == _normalised(compact.json)


def _dump(tmp_path, text, name="dump.sql"):
    """The export ``text`` as a file: plain SQL, or gzipped (fast) for a ``.gz`` name."""
    path = tmp_path / name
    data = text.encode()
    path.write_bytes(gzip.compress(data, compresslevel=1) if name.endswith(".gz") else data)
    return path


@pytest.fixture(scope="module")
def sample_text():
    return gzip.decompress(SAMPLE.read_bytes()).decode()


def _replace_row(text, table, row_start, new_row):
    header = f"COPY public.{table} "
    start = text.index(header)
    at = text.index("\n" + row_start, start) + 1
    end = text.index("\n", at)
    return text[:at] + new_row + text[end:]


def _line_of(text, fragment):
    return text[: text.index(fragment)].count("\n") + 1


@pytest.mark.parametrize(
    "table, row_start, new_row, message",
    [
        (
            "demoscene_nick",
            "82\t",
            "82\tSpaceballs\t\t\t999999",
            "demoscene_nick:{line}: releaser_id: no row with id 999999 in demoscene_releaser",
        ),
        (
            "productions_productionlink",
            "1\t",
            None,  # built from the first row, pointing at a production that is not there
            "productions_productionlink:{line}: production_id: no row with id 999999",
        ),
        (
            "productions_production_platforms",
            "1\t",
            "1\t1",
            "productions_production_platforms:{line}: expected 3 fields",
        ),
        (
            "productions_production_platforms",
            "1\t",
            "1\t1\tseven",
            "productions_production_platforms:{line}: platform_id",
        ),
    ],
)
def test_bad_rows_name_table_line_and_column(
    tmp_path, sample_text, imported, table, row_start, new_row, message
):
    if new_row is None:
        start = sample_text.index(f"COPY public.{table} ")
        header = sample_text[start : sample_text.index("\n", start)]
        columns = header[header.index("(") + 1 : header.index(")")].split(", ")
        at = sample_text.index("\n" + row_start, start) + 1
        fields = sample_text[at : sample_text.index("\n", at)].split("\t")
        fields[columns.index("production_id")] = "999999"
        new_row = "\t".join(fields)
    text = _replace_row(sample_text, table, row_start, new_row)
    line = _line_of(text, "\n" + new_row + "\n") + 1
    served = tmp_path / "served.sqlite3"
    shutil.copyfile(imported[0], served)
    before = served.read_bytes()
    with pytest.raises(CatalogueError) as error:
        load_catalogue(_dump(tmp_path, text), served)
    assert str(error.value).startswith(message.format(line=line)), str(error.value)
    assert served.read_bytes() == before  # nothing replaced
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".")]
    assert [p.name for p in leftovers] == [".served.sqlite3.lock"]  # no build files


def test_truncated_and_unended_dumps_fail(tmp_path, sample_text):
    served = tmp_path / "served.sqlite3"
    truncated = tmp_path / "truncated.sql.gz"
    truncated.write_bytes(SAMPLE.read_bytes()[:100_000])
    with pytest.raises(CatalogueError, match="truncated|corrupt"):
        load_catalogue(truncated, served)
    start = sample_text.index("COPY public.productions_production ")
    cut = sample_text[: sample_text.index("\n", start + 2000) + 1]  # whole rows, no end
    with pytest.raises(CatalogueError, match="productions_production:.*(end|never)"):
        load_catalogue(_dump(tmp_path, cut, "unended.sql.gz"), served)
    assert not served.exists()


def test_a_missing_table_fails_and_extra_ones_are_fine(tmp_path, sample_text):
    served = tmp_path / "served.sqlite3"
    start = sample_text.index("COPY public.bbs_affiliation ")
    end = sample_text.index("\\.\n", start) + 3
    with pytest.raises(CatalogueError, match="bbs_affiliation"):
        load_catalogue(_dump(tmp_path, sample_text[:start] + sample_text[end:]), served)
    extra = (
        "COPY public.something_new (id, value) FROM stdin;\n1\tx\n\\.\n\n"
        + sample_text.replace(
            "COPY public.platforms_platform (id, name,",
            "COPY public.platforms_platform (extra_column, id, name,",
        ).replace("\\restrict", "\\restrict", 1)
    )
    # The extra column comes first in the header: every platform row gets a value for it.
    start = extra.index("COPY public.platforms_platform ")
    body_start = extra.index("\n", start) + 1
    body_end = extra.index("\\.\n", body_start)
    rows = extra[body_start:body_end].splitlines()
    extra = extra[:body_start] + "".join(f"x\t{row}\n" for row in rows) + extra[body_end:]
    counts, _ = load_catalogue(_dump(tmp_path, extra, "extra.sql.gz"), served)
    assert counts["platforms"] == 90


def _row(text, table, number=0):
    """Row ``number`` (0: the first) of ``table``'s COPY block in ``text``: its fields by
    column, its start and end offsets, and its line."""
    header = text.index(f"COPY public.{table} ")
    names = text[text.index("(", header) + 1 : text.index(")", header)].split(", ")
    start = text.index("\n", header) + 1
    for _ in range(number):
        start = text.index("\n", start) + 1
    end = text.index("\n", start)
    fields = dict(zip((name.strip('"') for name in names), text[start:end].split("\t")))
    return fields, start, end, text[:start].count("\n") + 1


def _with_fields(text, table, values, number=0):
    """``text`` with the fields ``values`` ({column: text}) of row ``number`` of ``table``
    replaced, and that row's line."""
    fields, start, end, line = _row(text, table, number)
    fields.update(values)
    return text[:start] + "\t".join(fields.values()) + text[end:], line


# A value of each type past what the catalogue can hold, or not of its type at all.
VALUES_REFUSED = [
    ("productions_production", "id", str(2**63), "is out of range (a 64-bit integer)"),
    ("productions_screenshot", "original_width", str(-(2**63) - 1), "is out of range"),
    ("parties_competitionplacing", "position", "9" * 30, "is out of range (a 64-bit integer)"),
    ("parties_party", "latitude", "NaN", "is not a finite number"),
    ("bbs_bbs", "longitude", "-Infinity", "is not a finite number"),
    ("parties_party", "longitude", "1e309", "is out of range (a double)"),
    ("productions_production", "release_date_date", "0000-12-31", "is not a date"),
    ("parties_party", "end_date_date", "10000-01-01", "is not a date"),
    ("parties_competition", "shown_date_date", "2025-02-29", "is not a date"),
    ("productions_production", "created_at", "0001-01-01 00:00:00+01", "is out of range"),
    ("demoscene_releaser", "updated_at", "9999-12-31 23:59:59-00:01", "is out of range"),
    ("demoscene_releaser", "created_at", "2026-01-01 00:00:00+24", "is not a timestamp"),
    ("demoscene_releaser", "is_group", "true", "is not a boolean (t or f)"),
    ("productions_production", "title", "x" * (MAX_TEXT + 1), "too long (1,000,001 characters"),
]


@pytest.mark.parametrize(
    "table, column, value, what", VALUES_REFUSED, ids=[f"{c[0]}.{c[1]}" for c in VALUES_REFUSED]
)
def test_a_value_past_its_types_limits_is_refused_in_one_line(
    tmp_path, sample_text, imported, table, column, value, what
):
    served = tmp_path / "served.sqlite3"
    shutil.copyfile(imported[0], served)
    before = served.read_bytes()
    text, line = _with_fields(sample_text, table, {column: value})
    with pytest.raises(CatalogueError) as error:
        load_catalogue(_dump(tmp_path, text), served)
    message = str(error.value)
    assert message.startswith(f"{table}:{line}: {column}: ") and what in message, message
    assert "\n" not in message
    assert served.read_bytes() == before


def test_an_id_out_of_range_on_the_command_line_is_one_line(tmp_path, sample_text, imported):
    """As reported: a production id of 2**63 ended the load in a traceback."""
    served = tmp_path / "served.sqlite3"
    shutil.copyfile(imported[0], served)
    before = served.read_bytes()
    text, line = _with_fields(sample_text, "productions_production", {"id": str(2**63)})
    result = (
        upstream_app(served).test_cli_runner().invoke(args=["load", str(_dump(tmp_path, text))])
    )
    assert result.exit_code == 1
    assert result.output == (
        f"productions_production:{line}: id: '9223372036854775808' is out of range "
        "(a 64-bit integer)\n"
    )
    assert served.read_bytes() == before


def test_what_an_export_holds_reaches_the_terminal_printable(tmp_path, sample_text, imported):
    """A date the dump states and a table's name, with an escape, a carriage return and a
    bidirectional mark in them, are shown escaped: on one line, moving no cursor."""
    served = tmp_path / "served.sqlite3"
    shutil.copyfile(imported[0], served)
    runner = upstream_app(served).test_cli_runner()
    marks = "\x1b[2J\r\u202e"
    head = "-- Started on 2026-11-27 10:00:00 UTC\x1b]0;\u202e\x07\n"  # a title, then bell
    dated = _dump(tmp_path, head + sample_text)
    assert runner.invoke(args=["load", str(dated)]).exit_code == 0
    status = runner.invoke(args=["status"]).output
    assert "  export's date: 2026-11-27 10:00:00 UTC\\x1b]0;\\u202e\\x07\n" in status
    unended = sample_text + f'COPY public."a{marks}" (id) FROM stdin;\n1\n'
    result = runner.invoke(args=["load", str(_dump(tmp_path, unended, "unended.sql.gz"))])
    line = unended.count("\n")
    assert result.output == f"a\\x1b[2J\\r\\u202e:{line}: the COPY block never ends\n"


def test_values_at_the_limits_of_their_types_load_and_are_served(tmp_path, sample_text):
    first, start, end, _ = _row(sample_text, "productions_production")
    text = sample_text[:start] + sample_text[start : end + 1] + sample_text[start:]
    largest = str(2**63 - 1)
    production = {  # a production of its own, the first one's copy
        "id": largest,
        "title": "x" * MAX_TEXT,
        "release_date_date": "9999-12-31",
        "release_date_precision": "d",
        "created_at": "0001-01-01 00:00:00+00",
        "updated_at": "9999-12-31 23:59:59.999999+00",
    }
    text, _ = _with_fields(text, "productions_production", production)
    for table, values, number in [
        ("parties_competitionplacing", {"position": largest}, 0),
        ("parties_competitionplacing", {"position": str(-(2**63))}, 1),
        ("parties_party", {"latitude": "1.7976931348623157e308", "longitude": "-1e308"}, 0),
        ("parties_party", {"start_date_date": "0001-01-01", "start_date_precision": "d"}, 0),
        ("productions_screenshot", {"original_width": largest}, 0),
        ("demoscene_releaser", {"updated_at": "0001-01-01 12:00:00+11:59:59"}, 0),
    ]:
        text, _ = _with_fields(text, table, values, number)
    served = tmp_path / "served.sqlite3"
    counts, _ = load_catalogue(_dump(tmp_path, text), served)
    client = upstream_app(served).test_client()
    record = client.get(f"/api/v1/productions/{largest}/").json
    assert record["title"] == production["title"] and record["release_date"] == "9999-12-31"
    placings = [_row(text, "parties_competitionplacing", number)[0] for number in (0, 1)]
    for placing in placings:
        record = client.get(f"/api/v1/productions/{placing['production_id']}/").json
        positions = [item["position"] for item in record["competition_placings"]]
        assert int(placing["position"]) in positions
    party = client.get(f"/api/v1/parties/{_row(text, 'parties_party')[0]['id']}/").json
    assert (party["latitude"], party["longitude"], party["start_date"]) == (
        1.7976931348623157e308,
        -1e308,
        "0001-01-01",
    )
    listings = {
        "competition_placing_min=0": 1,  # the placing at -2**63 alone
        "released_since=9999-12-31": 1,
        "added_before=0001-01-02": 1,
        "updated_since=9999-12-31": 1,
    }
    for query, count in listings.items():
        assert client.get(f"/api/v1/productions/?{query}").json["count"] == count, query
    dated = client.get("/api/v1/productions/?ordering=-release_date_date&released_since=0001")
    assert dated.json["results"][0]["id"] == int(largest)
    assert client.get("/api/v1/releasers/?updated_before=0001-01-02").json["count"] == 1
    assert counts["productions"] == _row_count(sample_text, "productions_production") + 1


def _row_count(text, table):
    header = text.index(f"COPY public.{table} ")
    return text[header : text.index("\n\\.\n", header)].count("\n")


def _with_a_long_line(path, text, at, length):
    """``text`` gzipped into ``path`` with a line of ``length`` bytes inserted at its
    offset ``at``, written a megabyte at a time: the file stays small."""
    chunk = b"x" * (1 << 20)
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(text[:at].encode())
        for _ in range(length // len(chunk)):
            out.write(chunk)
        out.write(chunk[: length % len(chunk)] + b"\n" + text[at:].encode())
    return path


def test_a_line_past_the_limit_is_read_past_or_refused_in_one_line(tmp_path, sample_text, imported):
    """A first line longer than the line limit loads (it is read past a chunk at a
    time); a row of a wanted table that long is refused naming table and line, and the
    served file stays as it was."""
    served = tmp_path / "served.sqlite3"
    shutil.copyfile(imported[0], served)
    counts = imported[1]
    long_first = _with_a_long_line(tmp_path / "first.sql.gz", sample_text, 0, LINE_LIMIT + 5)
    assert load_catalogue(long_first, served)[0] == counts
    before = served.read_bytes()
    header = sample_text.index("COPY public.productions_production ")
    first_row = sample_text.index("\n", header) + 1
    long_row = _with_a_long_line(tmp_path / "row.sql.gz", sample_text, first_row, LINE_LIMIT + 1)
    with pytest.raises(CatalogueError) as error:
        load_catalogue(long_row, served)
    line = sample_text[:first_row].count("\n") + 1
    assert str(error.value) == (
        f"productions_production:{line}: a row longer than 64 MiB, the limit of a line "
        "(no real row comes near it)"
    )
    assert served.read_bytes() == before


def test_tag_and_search_over_the_imported_export(golden, upstream_client):
    """The tag and search filters over the import, against the upstream's own detail
    records: tags as it serves them, titles and names folded as CONTRACT.md says."""
    import unicodedata
    from collections import Counter

    def folded(text):
        decomposed = unicodedata.normalize("NFD", text)
        return "".join(c for c in decomposed if not unicodedata.combining(c)).lower()

    index = json.loads((golden / "index.json").read_text())
    details = {}
    for request, name in index.items():
        parts = request.split("/")
        if len(parts) == 6 and parts[3] in ("productions", "bbses") and parts[4].isdigit():
            record = json.loads((golden / name).read_text())
            if "tags" in record:  # not the 404 example
                details.setdefault(parts[3], []).append(record)

    def ids(path):
        found, page = [], 1
        while True:
            body = upstream_client.get(f"{path}&ordering=id&page={page}").json
            found += [record["id"] for record in body["results"]]
            if not body["next"]:
                return found
            page += 1

    for resource, records in details.items():
        tags = Counter(tag for record in records for tag in record["tags"])
        assert tags, resource
        common = [tag for tag, _ in tags.most_common(3)]
        for chosen in ([common[0]], common[:2], [common[-1].upper()]):
            wanted = sorted(
                r["id"] for r in records if {t.lower() for t in chosen} <= set(r["tags"])
            )
            assert ids(f"/api/v1/{resource}/?tag={','.join(chosen)}") == wanted, chosen
    productions, found = details["productions"], []
    for query in ("e", "the", "de mo", "ä", "a 2"):
        terms = [folded(term) for term in query.split()]
        wanted = sorted(
            r["id"] for r in productions if all(term in folded(r["title"]) for term in terms)
        )
        assert ids(f"/api/v1/productions/?search={query}") == wanted, query
        found.append(len(wanted))
    assert any(0 < count < len(productions) for count in found), found


def test_the_export_exported_and_loaded_again_is_the_same_catalogue(tmp_path, imported):
    """Export then load is the identity: the folder carries what only the /api/adhoc/
    answers read (adhoc.jsonl: archived links, differentiators, bylines, the export's
    row order), so it loads to the same records and the same version, and loading the
    export over the folder's catalogue changes nothing."""
    engine = read_only_engine(imported[0])
    with engine.connect() as connection:
        export_catalogue(connection, tmp_path / "folder")
    engine.dispose()
    assert (tmp_path / "folder" / "adhoc.jsonl").stat().st_size > 0
    load_catalogue(tmp_path / "folder", tmp_path / "folder.sqlite3")
    assert record_facts(tmp_path / "folder.sqlite3") == record_facts(imported[0])
    runner = upstream_app(tmp_path / "folder.sqlite3").test_cli_runner()
    loaded = runner.invoke(args=["load", str(SAMPLE)])
    assert loaded.exit_code == 0, loaded.output
    version = record_facts(imported[0])[0]
    assert f"(the same records as before, version {version})" in loaded.output
    # Without the file, what it carries is derived from the records: the same records,
    # other /api/adhoc/ answers (the zxdemo id maps are empty).
    (tmp_path / "folder" / "adhoc.jsonl").unlink()
    load_catalogue(tmp_path / "folder", tmp_path / "derived.sqlite3")
    derived = record_facts(tmp_path / "derived.sqlite3")
    assert derived[1] == record_facts(imported[0])[1] and derived[0] != version
