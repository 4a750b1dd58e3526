"""Filters, field selection and a releaser's productions, against the oracle."""

import datetime
from urllib.parse import quote

import pytest

from demoserv.api import filters
from demoserv.resources import RESOURCES

from . import oracle
from .conftest import SMALL_PAGE_SIZES, module_client, walk

client = module_client()  # every test only reads


def credited(production):
    return {
        n["releaser"]["id"]
        for n in production["author_nicks"] + production["author_affiliation_nicks"]
    }


def walked(client, path):
    pages = walk(client, path)
    assert {page["count"] for page in pages} == {sum(len(p["results"]) for p in pages)}
    return [r["id"] for page in pages for r in page["results"]]


def in_other_case(name):
    """``name`` with its case changed, made safe for a URL's query."""
    changed = name.swapcase()
    return quote(changed if changed.lower() == name.lower() else name)


def some(records, field):
    values = sorted({r[field] for r in records if r[field] is not None}, key=str)
    return values[len(values) // 2]


PRODUCTION_CASES = [
    ("supertype=music", lambda p: p["supertype"] == "music"),
    (
        "released_since=1995",
        lambda p: (
            oracle.first_day(p["release_date"] or "9999") >= "1995-01-01"
            and p["release_date"] is not None
        ),
    ),
    (
        "released_before=1995-01",
        lambda p: (
            p["release_date"] is not None and oracle.first_day(p["release_date"]) < "1995-01-01"
        ),
    ),
    (
        "released_since=1995&released_before=2001-07-14&supertype=production",
        lambda p: (
            p["release_date"] is not None
            and p["supertype"] == "production"
            and "1995-01-01" <= oracle.first_day(p["release_date"]) < "2001-07-14"
        ),
    ),
    ("production_type=14&production_type=1", lambda p: {t["id"] for t in p["types"]} & {14, 1}),
    ("production_type=14,1", lambda p: {t["id"] for t in p["types"]} & {14, 1}),
    ("title=the%20END", lambda p: p["title"].lower() == "the end"),
    ("title=&supertype=", lambda p: True),
]


@pytest.mark.parametrize("query, wanted", PRODUCTION_CASES, ids=[c[0] for c in PRODUCTION_CASES])
@pytest.mark.parametrize("ordering", ["sortable_title", "-release_date_date", "supertype,-id"])
def test_production_filters_with_ordering_and_paging(client, catalogue, query, wanted, ordering):
    matching = [p for p in catalogue["productions"] if wanted(p)]
    assert matching, "the test catalogue has matching records"
    expected = [p["id"] for p in oracle.ordered("productions", matching, ordering)]
    assert walked(client, f"/api/v1/productions/?{query}&ordering={ordering}") == expected


def test_platform_and_author_filters(client, catalogue):
    productions = catalogue["productions"]
    platform = some([p for r in productions for p in r["platforms"]], "id")
    expected = [
        p["id"]
        for p in oracle.ordered(
            "productions", [p for p in productions if platform in {x["id"] for x in p["platforms"]}]
        )
    ]
    assert walked(client, f"/api/v1/productions/?platform={platform}") == expected
    author = some([n["releaser"] for p in productions for n in p["author_nicks"]], "id")
    expected = [
        p["id"]
        for p in oracle.ordered("productions", [p for p in productions if author in credited(p)])
    ]
    assert walked(client, f"/api/v1/productions/?author={author}") == expected


def test_party_filters(client, catalogue):
    parties = catalogue["parties"]
    series = some(parties, "party_series")
    cases = {
        "country_code=fi": lambda p: p["country_code"] == "FI",
        f"party_series={series}": lambda p: p["party_series"] == series,
        "start_date_before=2000-06": lambda p: oracle.first_day(p["start_date"]) < "2000-06-01",
        "start_date_since=2000&country_code=DE": lambda p: (
            p["country_code"] == "DE" and oracle.first_day(p["start_date"]) >= "2000-01-01"
        ),
        f"name={in_other_case(parties[0]['name'])}": lambda p: (
            p["name"].lower() == parties[0]["name"].lower()
        ),
    }
    for query, wanted in cases.items():
        expected = [
            p["id"]
            for p in oracle.ordered(
                "parties", [p for p in parties if wanted(p)], "-start_date_date"
            )
        ]
        assert expected, query
        assert walked(client, f"/api/v1/parties/?{query}&ordering=-start_date_date") == expected, (
            query
        )


@pytest.mark.parametrize(
    "resource",
    [r.name for r in RESOURCES if any(isinstance(f, filters.NameEquals) for f in r.filters)],
)
def test_name_filter(client, catalogue, resource):
    records = oracle.all_records(catalogue, resource)
    name = records[3]["name"]
    expected = [
        r["id"]
        for r in oracle.ordered(resource, [r for r in records if r["name"].lower() == name.lower()])
    ]
    assert walked(client, f"/api/v1/{resource}/?name={in_other_case(name)}") == expected


def test_is_group_filter(client, catalogue):
    releasers = oracle.all_records(catalogue, "releasers")
    for value in (True, False):
        expected = [
            r["id"]
            for r in oracle.ordered("releasers", [r for r in releasers if r["is_group"] is value])
        ]
        assert walked(client, f"/api/v1/releasers/?is_group={str(value).lower()}") == expected


def test_links_keep_filters(client):
    body = client.get("/api/v1/productions/?supertype=production&ordering=-id").json
    assert body["count"] > SMALL_PAGE_SIZES["productions"]
    assert (
        body["next"]
        == "http://localhost/api/v1/productions/?ordering=-id&page=2&supertype=production"
    )


@pytest.mark.parametrize(
    "path, parameter",
    [
        ("/api/v1/productions/?supertype=film", "supertype"),
        ("/api/v1/productions/?platform=abc", "platform"),
        ("/api/v1/productions/?platform=1&platform=-2", "platform"),
        ("/api/v1/productions/?production_type=" + "9" * 30, "production_type"),
        ("/api/v1/productions/?released_before=1993-02-30", "released_before"),
        ("/api/v1/productions/?released_since=yesterday", "released_since"),
        ("/api/v1/productions/?author=x", "author"),
        ("/api/v1/parties/?country_code=FIN", "country_code"),
        ("/api/v1/parties/?party_series=0", "party_series"),
        ("/api/v1/parties/?start_date_since=2000-13", "start_date_since"),
        ("/api/v1/releasers/?is_group=yes", "is_group"),
        ("/api/v1/productions/?released_since=0000", "released_since"),
        ("/api/v1/productions/?competition_placing_min=1000000000", "competition_placing_min"),
        ("/api/v1/productions/?author=9223372036854775808", "author"),
        # ISO 8601 forms outside the documented ones (DATE_TIME_PATTERN).
        ("/api/v1/productions/?updated_since=2020-01-01T10", "updated_since"),
        ("/api/v1/productions/?added_before=20200101", "added_before"),
        ("/api/v1/releasers/?added_since=2020-W01-1", "added_since"),
        ("/api/v1/releasers/?updated_before=2020-01-01T10:00%2B0100", "updated_before"),
        ("/api/v1/releasers/?updated_before=2020-01-01x10:00", "updated_before"),
        ("/api/v1/releasers/?updated_before=2020-01-01Z", "updated_before"),
        ("/api/v1/productions/?added_since=0000-12-31T23:00:00-05:00", "added_since"),
    ],
)
def test_invalid_filter_values_are_400_naming_the_parameter(client, path, parameter):
    response = client.get(path)
    assert response.status_code == 400
    assert f'"{parameter}"' in response.json["detail"]


@pytest.mark.parametrize(
    "parameter, expected",
    [
        ("updated_since", "from 0001-01-01 to 9999-12-31"),
        ("released_since", "from 0001-01-01 to 9999-12-31"),
        ("competition_placing_min", "from 0 to 999999999"),
        ("platform", "from 1 to 9223372036854775807"),
    ],
)
def test_a_value_out_of_range_is_told_the_range(client, parameter, expected):
    detail = client.get(f"/api/v1/productions/?{parameter}=99999999999999999999").json["detail"]
    assert expected in detail


def moment(value):
    """A date or date-time of the catalogue files (UTC unless it names an offset)."""
    parsed = datetime.datetime.fromisoformat(value)
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=datetime.timezone.utc)


@pytest.mark.parametrize("resource", ["productions", "releasers"])
@pytest.mark.parametrize(
    "bound",
    [
        "0001-01-01",
        "0001-01-01T00:00:00-23:59",  # 23:59 UTC: its offset keeps it in range
        "2015-06-01T01:30:00+01:30",
        "2015-06-01T00:00:00Z",
        "9999-12-31T23:59:59+23:59",
        "9999-12-31T23:59:59.999999Z",
        "9999-12-31T23:59:59.999999+23:59:59.999999",  # the longest form
        # Outside the years 1 to 9999 once in UTC: before or after every record.
        "9999-12-31T23:59:59-01:00",
        "0001-01-01T00:30:00+01:00",
        "0001-01-01T00:00:00.5+00:00:01",
        "9999-12-31 23:00-23:59",
    ],
)
def test_time_bounds_at_the_ends_of_their_range(client, catalogue, resource, bound):
    """The first and last moments a bound can name, with offsets that keep them in range,
    are bounds like any other: since the first, everything; before it, nothing. So are
    moments that an offset takes past either end."""
    records = oracle.all_records(catalogue, resource)
    at = moment(bound.replace("Z", "+00:00"))
    for parameter, field, kept in (
        ("added_since", "created_at", lambda t: t >= at),
        ("updated_before", "updated_at", lambda t: t < at),
    ):
        expected = [
            r["id"]
            for r in oracle.ordered(resource, records)
            if r.get(field) and kept(moment(r[field]))
        ]
        assert walked(client, f"/api/v1/{resource}/?{parameter}={quote(bound)}") == expected


def test_filter_with_no_match_is_an_empty_first_page(client):
    body = client.get("/api/v1/productions/?title=no%20such%20title").json
    assert body == {"count": 0, "next": None, "previous": None, "results": []}
    assert client.get("/api/v1/productions/?title=no%20such%20title&page=2").status_code == 404


def test_fields(client):
    body = client.get("/api/v1/productions/?fields=tags,id,nonsense,title").json
    assert all(list(r) == ["id", "title", "tags"] for r in body["results"])
    party_id = client.get("/api/v1/parties/").json["results"][0]["id"]
    detail = client.get(f"/api/v1/parties/{party_id}/?fields=party_series,url").json
    assert list(detail) == ["url", "party_series"]
    assert client.get("/api/v1/platforms/?fields=").json == client.get("/api/v1/platforms/").json
    assert client.get("/api/v1/platforms/?fields=nothing").json["results"][0] == {}


def test_releaser_productions(client, catalogue):
    """Author credits only; newest first, undated first (as a descending order always
    puts them), ties by id descending."""
    productions = catalogue["productions"]
    releaser = some([n["releaser"] for p in productions for n in p["author_nicks"]], "id")
    mine = [p for p in productions if releaser in {n["releaser"]["id"] for n in p["author_nicks"]}]
    dated = sorted(
        (p for p in mine if p["release_date"]),
        key=lambda p: (oracle.first_day(p["release_date"]), p["id"]),
        reverse=True,
    )
    undated = sorted(
        (p for p in mine if not p["release_date"]), key=lambda p: p["id"], reverse=True
    )
    body = client.get(f"/api/v1/releasers/{releaser}/productions/").json
    assert isinstance(body, list)
    assert [r["id"] for r in body] == [p["id"] for p in undated + dated]
    listing = {
        r["id"]: r
        for page in walk(client, f"/api/v1/productions/?author={releaser}")
        for r in page["results"]
    }
    assert body == [listing[r["id"]] for r in body]
    assert [
        list(r) for r in client.get(f"/api/v1/releasers/{releaser}/productions/?fields=id").json
    ] == [["id"]] * len(body)
    assert client.get("/api/v1/releasers/424242/productions/").status_code == 404
