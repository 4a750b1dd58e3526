"""Every ordering key of every resource, both directions, walked to the end."""

import re
import sys

import jsonschema_rs
import pytest

from demoserv.api import ordering
from demoserv.resources import RESOURCES

from . import oracle
from .conftest import module_client, walk
from .openapi_check import SPEC

client = module_client()  # every test only reads

CASES = [(resource, key) for resource, keys in oracle.KEYS.items() for key in keys]


def test_keys_are_the_contracts():
    assert {resource.name: list(resource.keys) for resource in RESOURCES} == oracle.KEYS


def walked_ids(client, resource, query=""):
    pages = walk(client, f"/api/v1/{resource}/{query}")
    return [record["id"] for page in pages for record in page["results"]]


@pytest.mark.parametrize("resource, key", CASES)
def test_each_key_ascending_and_descending(client, catalogue, resource, key):
    records = oracle.all_records(catalogue, resource)
    ascending = walked_ids(client, resource, f"?ordering={key}")
    descending = walked_ids(client, resource, f"?ordering=-{key}")
    assert ascending == [r["id"] for r in oracle.ordered(resource, records, key)]
    assert descending == ascending[::-1]


@pytest.mark.parametrize("resource", list(oracle.KEYS))
def test_default_order(client, catalogue, resource):
    records = oracle.all_records(catalogue, resource)
    assert walked_ids(client, resource) == [r["id"] for r in oracle.ordered(resource, records)]


@pytest.mark.parametrize(
    "resource, value",
    [
        ("productions", "supertype,-release_date_date"),
        ("productions", "-supertype,sortable_title"),
        ("productions", "release_date_date,-id"),
        ("parties", "country_code,-start_date_date"),
        ("parties", "-country_code,end_date_date,name"),
        ("bbses", "-name,id"),
        ("releasers", " name , -id "),
    ],
)
def test_several_keys(client, catalogue, resource, value):
    records = oracle.all_records(catalogue, resource)
    assert walked_ids(client, resource, f"?ordering={value}") == [
        r["id"] for r in oracle.ordered(resource, records, value.replace(" ", ""))
    ]


def test_nulls_come_last_ascending_and_first_descending(client):
    pages = walk(client, "/api/v1/productions/?ordering=release_date_date")
    dates = [r["release_date"] for page in pages for r in page["results"]]
    first_null = dates.index(None)
    assert first_null > 0 and all(d is None for d in dates[first_null:])
    pages = walk(client, "/api/v1/productions/?ordering=-release_date_date")
    dates = [r["release_date"] for page in pages for r in page["results"]]
    assert dates[0] is None and dates[-1] is not None


def test_partial_dates_order_as_their_first_day_with_ties_by_id(client, catalogue):
    # 1995, 1995-01 and 1995-01-01 are the same day: ties are in id order.
    pages = walk(client, "/api/v1/productions/?ordering=release_date_date")
    records = [r for page in pages for r in page["results"]]
    same_day = [r["id"] for r in records if r["release_date"] in ("1995", "1995-01", "1995-01-01")]
    assert len({r["release_date"] for r in records if r["id"] in same_day}) == 3
    assert same_day == sorted(same_day)


def test_name_order_puts_punctuation_then_digits_then_letters(client):
    pages = walk(client, "/api/v1/bbses/?ordering=name")
    names = [r["name"] for page in pages for r in page["results"]]
    groups = [0 if not n[:1].isalnum() else 1 if n[:1].isdigit() else 2 for n in names]
    assert groups == sorted(groups) and set(groups) == {0, 1, 2}
    letters = [n.lower() for n, g in zip(names, groups) if g == 2]
    assert letters == sorted(letters)
    assert any(n != n.lower() for n in names), "the catalogue has mixed-case names"


@pytest.mark.parametrize(
    "title, key",
    [
        ("The End", "end the"),
        ("A Mind Is Born", "mind is born a"),
        ("an apple", "apple an"),
        ("$tuff", "stuff"),
        ("Ümlaut", "umlaut"),
        ("fr-08: .the .product", "fr 000000008 the product"),
        ("2nd Reality", "000000002nd reality"),
        ("  spaced   out  ", "spaced out"),
        ("the", "the"),
        ("Élévation 2", "elevation 000000002"),
        ("Øresund", "øresund"),  # letters that do not decompose stay, as upstream
        ("Łódź Party", "łodz party"),
        ("Straße", "straße"),
        ("a+b=c", "a+b=c"),  # symbols are not punctuation
    ],
)
def test_sortable_title(title, key):
    from demoserv.store.values import sortable_title

    assert sortable_title(title) == key == oracle.expected_sortable_title(title)


@pytest.mark.parametrize(
    "value",
    [
        "foo",
        "",
        ",",
        "title",
        "--sortable_title",
        "-",
        "sortable_title,",
        "id;DROP TABLE productions",
        "id,nope",
        "id,",
        "-id,--id",
        "sortable_title,nope",
        "Sortable_Title",
        "sortable_title DESC",
    ],
)
def test_bad_ordering_is_400_naming_the_key(client, value):
    response = client.get("/api/v1/productions/", query_string={"ordering": value})
    assert response.status_code == 400
    detail = response.json["detail"]
    assert "ordering" in detail and "sortable_title, release_date_date" in detail
    # The database is intact after SQL text in a parameter.
    assert client.get("/api/v1/productions/").status_code == 200


def test_terms_are_stripped_of_what_str_strip_takes_as_whitespace():
    spaces = {c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()}
    assert set(ordering.TERM_SPACES) == spaces


def _documented_ordering(resource):
    operation = SPEC["paths"][f"/api/v1/{resource}/"]["get"]
    schema = next(p for p in operation["parameters"] if p["name"] == "ordering")["schema"]
    # The document's dialect (ECMA-262, as schemathesis reads it) and Python's re.
    ecma = jsonschema_rs.validator_for(schema)
    return lambda value: {ecma.is_valid(value), re.search(schema["pattern"], value) is not None}


@pytest.mark.parametrize(
    "padding",
    [*ordering.TERM_SPACES, "\ufeff", "\x00", "_", "\u200b"],
    ids=lambda padding: f"U+{ord(padding):04X}",
)
def test_a_padded_ordering_is_served_exactly_when_documented(client, padding):
    """The server strips each term as the upstream does, and the document's pattern
    allows exactly that padding around a term (the fuzz test sends such values)."""
    value = f"{padding}-id{padding},{padding}name{padding}"
    response = client.get("/api/v1/releasers/", query_string={"ordering": value})
    documented = _documented_ordering("releasers")
    if padding in ordering.TERM_SPACES:
        assert documented(value) == documented(" -id\f, id") == {True}
        expected = client.get("/api/v1/releasers/?ordering=-id,name")
        assert response.status_code == 200
        assert response.json["results"] == expected.json["results"]
    else:
        assert documented(value) == {False}
        assert response.status_code == 400


def test_repeated_ordering_takes_the_last_value(client):
    response = client.get("/api/v1/productions/?ordering=id&ordering=-id")
    ids = [r["id"] for r in response.json["results"]]
    assert ids == sorted(ids, reverse=True)


def test_one_combined_key_sorts_as_the_keys_do(app, monkeypatch):
    """Orders on several keys sort one integer a row (listing_columns.Columns._combined_key);
    the lexicographic sort over the keys, which it stands in for, gives the same rows
    for every pair of keys in each direction, with and without a filter's mask."""
    import numpy as np

    from demoserv.api import ordering
    from demoserv.listings import columns as listing_columns
    from demoserv.web.db import get_database

    lexicographic = 0
    with app.app_context(), get_database().current().engine.connect() as connection:
        for resource in RESOURCES:
            columns = listing_columns.Columns(connection, resource)
            mask = np.arange(len(columns.ids)) % 3 != 1
            for first in resource.keys:
                for second in resource.keys:
                    for signs in ("", "-"), ("-", ""), ("-", "-"):
                        value = f"{signs[0]}{first},{signs[1]}{second}"
                        parsed = ordering.parse(resource, value)
                        if parsed.single_key is not None:
                            continue
                        for chosen in (None, mask):
                            rows = np.flatnonzero(chosen) if chosen is not None else None
                            rows = np.arange(len(columns.ids)) if rows is None else rows
                            assert columns._combined_key(parsed, rows) is not None
                            combined = columns.order(parsed, chosen)
                            with monkeypatch.context() as patch:
                                patch.setattr(
                                    listing_columns.Columns, "_combined_key", lambda *a: None
                                )
                                expected = columns.order(parsed, chosen)
                            assert combined.tolist() == expected.tolist(), (resource.name, value)
                            lexicographic += 1
    assert lexicographic > 100


def test_a_keys_rows_in_order_are_its_ranks_inverted(app):
    """Columns.permutation inverts the rank array: the rows a stable sort of the ranks
    gives, for every key of every resource; and a listing reads only the arrays it
    needs, each on its first use."""
    import numpy as np

    from demoserv.listings import columns as listing_columns
    from demoserv.web.db import get_database

    with app.app_context(), get_database().current().engine.connect() as connection:
        for resource in RESOURCES:
            columns = listing_columns.Columns(connection, resource)
            assert set(columns.arrays) == {"id"}
            for key in resource.keys:
                ranks = columns.arrays[f"rank:{key}"]
                wanted = np.argsort(ranks, kind="stable")
                assert columns.permutation(key).tolist() == wanted.tolist(), (resource.name, key)
            assert all(name.startswith(("id", "rank:")) for name in columns.arrays)
