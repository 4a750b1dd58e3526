"""The starter catalogue in seed/: it loads, it is consistent, and it fills pages."""

import json
from pathlib import Path

import pytest

from demoserv.loader.link_classes import ARCHIVED
from demoserv.loader.resources import LOAD_ORDER
from demoserv.loader.sources import load_catalogue
from demoserv.resources import BY_NAME

from . import oracle
from .conftest import suite_app, walk

SEED = Path(__file__).resolve().parent.parent / "seed"
# The upstream's classes of links that are always download links.
DOWNLOAD_CLASSES = {
    "AmigascneFile",
    "SceneOrgFile",
    "FujiologyFile",
    "UntergrundFile",
    "PaduaOrgFile",
    "ModlandFile",
}
# SPEC.md's observed production types.
SPEC_TYPES = {
    1: ("Demo", "production"),
    4: ("Intro", "production"),
    5: ("Diskmag", "production"),
    6: ("Tool", "production"),
    8: ("Slideshow", "production"),
    13: ("Cracktro", "production"),
    22: ("32K Intro", "production"),
    33: ("Game", "production"),
    41: ("BBStro", "production"),
    53: ("BBS Door", "production"),
    14: ("Music", "music"),
    29: ("Tracked Music", "music"),
    30: ("Streaming Music", "music"),
    23: ("Graphics", "graphics"),
    36: ("Photo", "graphics"),
}


@pytest.fixture(scope="module")
def seed():
    return {
        path.stem: [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        for path in SEED.glob("*.jsonl")
    }


@pytest.fixture(scope="module")
def seed_client(tmp_path_factory):
    database = tmp_path_factory.mktemp("seed") / "seed.sqlite3"
    load_catalogue(SEED, database)
    return suite_app(database).test_client()


def test_every_file_is_of_a_resource(seed):
    """A resource may have no file: the seed holds none of its records."""
    assert set(seed) <= set(LOAD_ORDER)


def test_spec_production_types(seed):
    types = {t["id"]: (t["name"], t["supertype"]) for t in seed["production_types"]}
    assert {i: types.get(i) for i in SPEC_TYPES} == SPEC_TYPES


# Lists that fill more than one page. Platforms and production types are the
# whole upstream lists and fit one page; bbses and party series hold only the records
# whose upstream ids are known (see seed/README.md).
PAGED = ("parties", "productions", "releasers")


def test_lists_span_pages(seed):
    for resource in PAGED:
        assert len(seed[resource]) > BY_NAME[resource].page_size, resource
    # Every real production type upstream; there are fewer than a page of them.
    assert len(seed["production_types"]) >= 50
    assert 80 <= len(seed["platforms"]) <= 101


def test_consistency(seed):
    series = {s["id"] for s in seed["party_series"]}
    for party in seed["parties"]:
        assert party["party_series"] is None or party["party_series"] in series
        assert oracle.first_day(party["start_date"]) <= oracle.first_day(party["end_date"])
        if party["is_online"]:
            assert party["country_code"] == "" and party["latitude"] is None
    for bbs in seed["bbses"]:
        if bbs["location"] == "":
            assert bbs["latitude"] is None and bbs["longitude"] is None
    types = {t["id"]: t for t in seed["production_types"]}
    releasers = {r["id"]: r for r in seed["releasers"]}
    platforms = {p["id"]: p for p in seed["platforms"]}
    for production in seed["productions"]:
        assert {t["supertype"] for t in production["types"]} <= {production["supertype"]}
        for t in production["types"]:
            assert types[t["id"]] == t
        for p in production["platforms"]:
            assert platforms[p["id"]] == p
        for nick in production["author_nicks"] + production["author_affiliation_nicks"]:
            assert releasers[nick["releaser"]["id"]] == nick["releaser"]


def test_seed_serves(seed, seed_client):
    for resource in oracle.KEYS:
        pages = walk(seed_client, f"/api/v1/{resource}/")
        assert pages[0]["count"] == len(seed.get(resource, []))
        if resource in PAGED:
            assert len(pages) >= 2, resource
    titles = {p["title"] for p in seed["productions"]}
    assert "Second Reality" in titles


# The upstream's published facts (tests/data/reference/README.md).
REFERENCE = Path(__file__).resolve().parent / "data" / "reference"
# The reference's platform names that the upstream has renamed since.
RENAMED_PLATFORMS = {"Javascript": "Browser"}
OWN_IDS = 1_000_000


@pytest.fixture(scope="module")
def reference():

    def lines(name):
        text = (REFERENCE / name).read_text(encoding="utf-8")
        return [json.loads(line) for line in text.splitlines() if line.strip()]

    series = {}
    for record in lines("party_series.jsonl"):
        series.setdefault(record["id"], []).append(record)
    names = json.loads((REFERENCE / "releaser_names.json").read_text(encoding="utf-8"))
    return {
        "productions": {p["id"]: p for p in lines("productions.jsonl")},
        "party_series": series,
        "parties": {p["id"]: p for p in lines("parties.jsonl")},
        "releasers": {int(i): name for i, name in names.items()},
    }


def agrees(partial, full):
    """A partial date agrees with a fuller one when it is the same or coarser."""
    return partial is not None and full is not None and full.startswith(partial)


def _event_days(dates):
    """The first and last day of the archive's "10 - 12 July 2015" wording."""
    months = "January February March April May June July August September October November December"
    month = {m: i for i, m in enumerate(months.split(), 1)}
    words = dates.replace(" - ", " ").split()
    year = int(next(w for w in words if len(w) == 4 and w.isdecimal()))
    days = []
    for i, word in enumerate(words[:-1]):
        if word.isdecimal() and len(word) <= 2:
            following = next(w for w in words[i + 1 :] if w in month)
            days.append(f"{year:04d}-{month[following]:02d}-{int(word):02d}")
    return days[0], days[-1]


def _last_day(partial):
    if len(partial) == 4:
        return partial + "-12-31"
    if len(partial) == 7:
        return partial + "-31"
    return partial


def test_no_own_ids(seed):
    """Every id, nested summaries too, is an upstream id."""
    for resource, records in seed.items():
        for record in records:
            assert record["id"] < OWN_IDS, (resource, record["id"])
    for party in seed["parties"]:
        assert party.get("party_series") is None or party["party_series"] < OWN_IDS
    for production in seed["productions"]:
        nested = production["platforms"] + production["types"]
        nested += [n["releaser"] for n in production["author_nicks"]]
        nested += [n["releaser"] for n in production["author_affiliation_nicks"]]
        for summary in nested:
            assert summary["id"] < OWN_IDS, (production["id"], summary)


def test_productions_agree_with_reference(seed, reference):
    releasers = reference["releasers"]
    checked = linked = 0
    for production in seed["productions"]:
        known = reference["productions"].get(production["id"])
        if known is None:
            continue
        checked += 1
        where = (production["id"], production["title"])
        assert production["title"] == known["title"], where
        if known["release_date"]:
            assert production["release_date"] is None or agrees(
                production["release_date"], known["release_date"]
            ), where
        platforms = [RENAMED_PLATFORMS.get(p, p) for p in known["platforms"].split(",") if p]
        assert sorted(p["name"] for p in production["platforms"]) == sorted(platforms), where
        assert production["tags"] == known["tags"], where
        section = (known["service_path"] or "").split("/")[1:2]
        if section:
            supertype = {"productions": "production", "music": "music", "graphics": "graphics"}
            assert production["supertype"] == supertype[section[0]], where
        byline = [name.strip() for name in known["byline"].split(",") if name.strip()]
        nicks = production["author_nicks"] + production["author_affiliation_nicks"]
        assert [n["name"] for n in nicks] == byline, where
        for nick in nicks:
            releaser = nick["releaser"]
            if releaser["id"] in releasers:
                assert releaser["name"] == releasers[releaser["id"]], where
        # Links as recorded: every external link (archived classes hidden, upstream
        # order), and the first download link where its class is certain.
        shown = [link for link in known.get("links", []) if link["link_class"] not in ARCHIVED]
        assert production["external_links"] == shown, where
        for link in production["download_links"]:
            assert link["link_class"] in DOWNLOAD_CLASSES, where
        assert [link["url"] for link in production["download_links"]] in (
            [],
            [known.get("download_link")],
        ), where
        linked += bool(production["download_links"]) + bool(production["external_links"])
    assert checked >= 50 and linked >= 100


def test_releasers_agree_with_reference(seed, reference):
    names = reference["releasers"]
    both = [r for r in seed["releasers"] if r["id"] in names]
    assert len(both) >= 100
    for releaser in both:
        assert releaser["name"] == names[releaser["id"]], releaser


def test_party_series_agree_with_reference(seed, reference):
    for record in seed["party_series"]:
        recorded = reference["party_series"].get(record["id"])
        if recorded is None:
            continue
        assert record["name"] in {r["name"] for r in recorded}, record
        assert record["website"] in {r["website"] for r in recorded} | {""}, record
    by_name = {s["name"]: s["id"] for s in seed["party_series"]}
    assert by_name.get("Revision") == 10 and by_name.get("Evoke") == 111
    assert by_name.get("Deadline (.de)") == 893 and by_name.get("@Party") == 12


def test_parties_agree_with_reference(seed, reference):
    """A party's dates hold the archive's event, and a day given is one the archive gives."""
    checked = 0
    for party in seed["parties"]:
        known = reference["parties"].get(party["id"])
        if known is None:
            continue
        checked += 1
        first, last = _event_days(known["dates"])
        start, end = party["start_date"], party["end_date"]
        assert start[:4] == known["started"][:4] == first[:4], party
        if len(start) == 10:
            assert start in (known["started"], first), party
        if len(end) == 10:
            assert end == last, party
        assert oracle.first_day(start) <= known["started"] <= _last_day(end), party
        if party["party_series"] is not None:
            assert party["party_series"] in reference["party_series"], party
    assert checked >= 90
