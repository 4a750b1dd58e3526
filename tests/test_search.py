"""``search`` and ``tag`` (CONTRACT.md, "Beyond the upstream") against an oracle over
the test catalogue: every resource that has them, every ordering kind, pages, other
filters and ``fields``; and the in-memory text search against a brute-force one."""

import random
import unicodedata
from urllib.parse import quote

import numpy as np
import pytest

from demoserv.listings import columns as listing_columns
from demoserv.listings import kept as listing_kept
from demoserv.resources import RESOURCES
from demoserv.store import listing_arrays

from . import oracle
from .conftest import module_client, suite_app, walk

client = module_client()  # every test only reads

# Every resource with a search filter, and the field of its records it looks in (and a
# releaser's nicks).
SEARCHED = {
    r.name: "title" if r.name == "productions" else "name"
    for r in RESOURCES
    if any(f.parameter == "search" for f in r.filters)
}


def folded(text):
    """The contract's folding, written from CONTRACT.md: NFD, combining marks dropped,
    str.lower; nothing else."""
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if not unicodedata.category(c).startswith("M")).lower()


def matches(texts, query):
    terms = [folded(term) for term in query.split()]
    haystack = [folded(text) for text in texts]
    return all(any(term in text for text in haystack) for term in terms)


@pytest.fixture(scope="module")
def nicks(loaded_database, make_app_module):
    """Each releaser's nick names and variants, as its detail record gives them."""
    client = make_app_module(loaded_database).test_client()
    found = {}
    for page in walk(client, "/api/v1/releasers/?ordering=id"):
        for record in page["results"]:
            detail = client.get(f"/api/v1/releasers/{record['id']}/").json
            found[record["id"]] = [
                text for nick in detail["nicks"] for text in [nick["name"], *nick["variants"]]
            ]
    return found


@pytest.fixture(scope="module")
def make_app_module():
    def make(database):
        return suite_app(database, SITE_URL="x")

    return make


def texts_of(resource, record, nicks):
    texts = [record[SEARCHED[resource]]]
    if resource == "releasers":
        texts += nicks.get(record["id"], [])
    return texts


def expected_ids(catalogue, resource, query, nicks, ordering=None, keep=lambda record: True):
    records = [
        record
        for record in oracle.all_records(catalogue, resource)
        if keep(record) and matches(texts_of(resource, record, nicks), query)
    ]
    return [record["id"] for record in oracle.ordered(resource, records, ordering)]


def served_ids(client, path):
    pages = walk(client, path)
    assert {page["count"] for page in pages} == {sum(len(page["results"]) for page in pages)}
    return [record["id"] for page in pages for record in page["results"]]


QUERIES = [
    "e",  # one character, in most texts
    "A",
    "ELAN",  # accents and case ignored: finds "Élan"
    "élan",
    "ø",  # a letter that does not decompose stays itself
    "o",
    "#h",  # punctuation kept
    "$",
    "  al   2nd ",  # several terms, any order, extra spaces
    "0 a",
    "ger",
    "nandu",
    "zzzq",
    "e\u0301",  # a combining mark alone folds away: "e"
]


@pytest.mark.parametrize("resource", list(SEARCHED))
@pytest.mark.parametrize("query", QUERIES)
def test_search_matches_the_oracle(client, catalogue, nicks, resource, query):
    expected = expected_ids(catalogue, resource, query, nicks)
    assert served_ids(client, f"/api/v1/{resource}/?search={quote(query)}") == expected


@pytest.mark.parametrize("resource", list(SEARCHED))
def test_search_finds_something_and_not_everything(client, catalogue, nicks, resource):
    everything = len(oracle.all_records(catalogue, resource))
    counts = [len(expected_ids(catalogue, resource, query, nicks)) for query in QUERIES]
    assert any(0 < count < everything for count in counts), counts


@pytest.mark.parametrize(
    "resource, ordering",
    [
        ("productions", "-sortable_title"),
        ("productions", "supertype,-release_date_date"),
        ("productions", "-id"),
        ("parties", "country_code,-start_date_date"),
        ("releasers", "-name"),
        ("bbses", "id"),
    ],
)
def test_search_keeps_any_ordering(client, catalogue, nicks, resource, ordering):
    for query in ("e", "a 1", "the"):
        expected = expected_ids(catalogue, resource, query, nicks, ordering)
        path = f"/api/v1/{resource}/?search={quote(query)}&ordering={ordering}"
        assert served_ids(client, path) == expected, query


def test_releasers_are_found_by_nick_and_variant(client, catalogue, nicks):
    alias = next(
        (rid, text)
        for rid, texts in sorted(nicks.items())
        for text in texts
        if text.endswith("(alias)")
    )
    found = served_ids(client, "/api/v1/releasers/?search=(alias)&ordering=id")
    assert alias[0] in found
    assert found == expected_ids(catalogue, "releasers", "(alias)", nicks, "id")


def test_search_with_other_filters_pages_and_fields(client, catalogue, nicks):
    keep = lambda p: p["supertype"] == "production" and "demo" in p["tags"]  # noqa: E731
    expected = expected_ids(catalogue, "productions", "e", nicks, "-id", keep)
    path = "/api/v1/productions/?search=e&tag=DEMO&supertype=production&ordering=-id"
    assert served_ids(client, path) == expected and expected
    page = client.get(path + "&fields=id,title").json
    assert page["results"] and all(list(record) == ["id", "title"] for record in page["results"])


def test_only_spaces_is_no_filter(client):
    everything = client.get("/api/v1/productions/").json
    spaces = client.get("/api/v1/productions/?search=%20%20%20").json
    assert spaces == {
        **everything,
        "next": everything["next"].replace("?page=2", "?page=2&search=+++"),
    }


def test_a_search_over_200_characters_is_a_400(client):
    assert client.get("/api/v1/productions/?search=" + "a" * 200).status_code == 200
    response = client.get("/api/v1/parties/?search=" + "a" * 201)
    assert response.status_code == 400 and '"search"' in response.json["detail"]


def _kept(app):
    return app.extensions[listing_kept.EXTENSION].keys()


def test_equivalent_spellings_are_one_listing(app):
    client = app.test_client()
    before = len(_kept(app))
    first = client.get("/api/v1/productions/?search=Second%20Reality").json
    same = client.get("/api/v1/productions/?search=%20%20reality%20%20SECOND%20").json
    again = client.get("/api/v1/productions/?search=reality%20second%20real").json
    assert first["count"] == same["count"] == again["count"]
    tags = [
        client.get(f"/api/v1/productions/?{query}").json["count"]
        for query in ("tag=demo,c64", "tag=c64&tag=demo", "tag=C64,,demo&tag=demo")
    ]
    assert len(set(tags)) == 1
    assert len(_kept(app)) == before + 2


@pytest.mark.parametrize(
    "resource, query, wanted",
    [
        ("productions", "tag=demo", {"demo"}),
        ("productions", "tag=demo&tag=c64", {"demo", "c64"}),
        ("productions", "tag=demo,4K", {"demo", "4k"}),
        ("productions", "tag=no-such-tag", {"no-such-tag"}),
        ("bbses", "tag=unknown-location", {"unknown-location"}),
        ("bbses", "tag=distro,world-hq", {"distro", "world-hq"}),
    ],
)
@pytest.mark.parametrize("ordering", [None, "-id", "name"])
def test_tag_matches_the_oracle(client, catalogue, resource, query, wanted, ordering):
    if ordering == "name" and resource == "productions":
        ordering = "supertype,-sortable_title"
    records = [r for r in catalogue[resource] if wanted <= set(r["tags"])]
    expected = [r["id"] for r in oracle.ordered(resource, records, ordering)]
    path = f"/api/v1/{resource}/?{query}" + (f"&ordering={ordering}" if ordering else "")
    assert served_ids(client, path) == expected
    if "no-such" not in query and "," not in query:
        assert expected


def test_empty_tags_are_no_filter(client):
    empty, everything = client.get("/api/v1/bbses/?tag=,").json, client.get("/api/v1/bbses/").json
    assert (empty["count"], empty["results"]) == (everything["count"], everything["results"])


# The in-memory search itself, against a brute-force one over random texts.

ALPHABET = "ab é$#ø\u00e6x\u4e2d\U0001f600"


def _columns(texts):
    arrays = dict(listing_arrays.search_arrays([(i, text) for i, text in enumerate(texts)]))
    columns = listing_columns.Columns.__new__(listing_columns.Columns)
    columns.arrays = arrays
    columns.ids = np.arange(len(texts), dtype=np.int64)
    columns._byte_counts = np.bincount(arrays["search:text"], minlength=256)
    return columns


def test_text_search_equals_brute_force():
    rng = random.Random(7)
    for size in (0, 1, 3, 300, 3000):
        texts = ["".join(rng.choices(ALPHABET, k=rng.randint(0, 12))) for _ in range(size)]
        columns = _columns(texts)
        plain = [folded(text) for text in texts]
        for _ in range(40):
            terms = {
                folded("".join(rng.choices(ALPHABET.replace(" ", ""), k=rng.randint(1, 4))))
                for _ in range(rng.randint(1, 5))
            } - {""}
            if not terms:
                continue
            got = columns.search(tuple(sorted(terms)))
            wanted = [all(term in text for term in terms) for text in plain]
            assert got.tolist() == wanted, (size, terms)


def test_text_search_never_matches_across_records():
    columns = _columns(["ab", "cd", "", "abc"])
    assert columns.search(("bc",)).tolist() == [False, False, False, True]
    assert columns.search(("b\nc",)).tolist() == [False] * 4
    assert columns.search(("abcd",)).tolist() == [False] * 4


def test_each_bytes_record_spans_blocks():
    """Over 256 records within one block of bytes and records longer than a block."""
    texts = [""] * 600 + ["x" * 700, "y"] + [""] * 300 + ["zy"]
    columns = _columns(texts)
    assert np.flatnonzero(columns.search(("y",))).tolist() == [601, 902]
    assert np.flatnonzero(columns.search(("xx",))).tolist() == [600]
