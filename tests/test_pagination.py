"""The page envelope, page numbers and the next/previous links."""

from urllib.parse import parse_qsl, urlsplit

import pytest

from demoserv.resources import BY_NAME
from demoserv.resources.declaration import Resource
from demoserv.web.pagination import remove_query_param, replace_query_param

from . import oracle
from .conftest import SMALL_PAGE_SIZES, walk

# The paged resources: the test catalogue spans pages of each at the suite's sizes.
PAGED = ["party_series", "bbses", "parties", "productions", "releasers", "production_types"]


def test_the_resources_page_sizes():
    """As the contract has them: 100 records a page; platforms in one page."""
    assert {name: resource.page_size for name, resource in BY_NAME.items()} == {
        **dict.fromkeys(BY_NAME, 100),
        "platforms": None,
    }


@pytest.mark.parametrize("resource", PAGED)
def test_walk_yields_every_record_once_in_pages_of_the_resources_size(client, catalogue, resource):
    size = SMALL_PAGE_SIZES[resource]
    records = oracle.all_records(catalogue, resource)
    assert len(records) > size  # two pages at least
    pages = walk(client, f"/api/v1/{resource}/")
    assert [len(p["results"]) for p in pages[:-1]] == [size] * (len(pages) - 1)
    assert 0 < len(pages[-1]["results"]) <= size
    assert len(pages) == -(-len(records) // size)
    assert {p["count"] for p in pages} == {len(records)}
    ids = [r["id"] for p in pages for r in p["results"]]
    assert sorted(ids) == sorted(r["id"] for r in records)
    assert list(pages[0]) == ["count", "next", "previous", "results"]


def test_links(client):
    first = client.get("/api/v1/productions/?ordering=-id&format=api").json
    assert first["previous"] is None
    assert first["next"] == "http://localhost/api/v1/productions/?format=api&ordering=-id&page=2"
    second = client.get(first["next"]).json
    # The link to page 1 carries no page parameter.
    assert second["previous"] == "http://localhost/api/v1/productions/?format=api&ordering=-id"
    assert second["next"].endswith("page=3")
    third = client.get(second["next"]).json
    assert third["next"] is None
    assert (
        third["previous"] == "http://localhost/api/v1/productions/?format=api&ordering=-id&page=2"
    )


def test_bare_listing_next_is_page_2(client):
    assert client.get("/api/v1/parties/").json["next"] == "http://localhost/api/v1/parties/?page=2"


def test_links_keep_unknown_and_repeated_parameters_sorted(client):
    body = client.get("/api/v1/productions/?zz=1&b=2&b=1&page=2&a=").json
    query = parse_qsl(urlsplit(body["next"]).query, keep_blank_values=True)
    assert query == [("a", ""), ("b", "2"), ("b", "1"), ("page", "3"), ("zz", "1")]
    assert parse_qsl(urlsplit(body["previous"]).query, keep_blank_values=True) == [
        ("a", ""),
        ("b", "2"),
        ("b", "1"),
        ("zz", "1"),
    ]


@pytest.mark.parametrize(
    "page", ["0", "-1", "abc", "1.5", "4", "999", "1" * 30, " 1", "+1", "1e2", "٣", "last1"]
)
def test_invalid_pages_are_404(client, page):
    response = client.get("/api/v1/productions/", query_string={"page": page})
    assert response.status_code == 404
    assert response.json == {"detail": "Invalid page."}


def test_special_page_values(client):
    last = client.get("/api/v1/productions/?page=3").json
    assert client.get("/api/v1/productions/?page=last").json == last
    assert client.get("/api/v1/productions/?page=").json == client.get("/api/v1/productions/").json
    assert client.get("/api/v1/productions/?page=1&page=3").json == last
    assert client.get("/api/v1/productions/?page=003").json == last


def test_platforms_are_one_page_whatever_their_number(client, catalogue):
    body = client.get("/api/v1/platforms/").json
    assert len(catalogue["platforms"]) > Resource.page_size  # more than a default page
    assert body["count"] == len(body["results"]) == len(oracle.all_records(catalogue, "platforms"))
    assert body["next"] is None and body["previous"] is None
    assert client.get("/api/v1/platforms/?page=last").json == body
    assert client.get("/api/v1/platforms/?page=2").status_code == 404


def test_empty_listing_has_a_valid_first_page(make_app, tmp_path):
    from demoserv.loader.sources import load_catalogue

    source = tmp_path / "only-platforms"
    source.mkdir()
    (source / "platforms.jsonl").write_text('{"id": 1, "name": "Amiga"}\n')
    load_catalogue(source, tmp_path / "db.sqlite3")
    client = make_app(tmp_path / "db.sqlite3").test_client()
    body = client.get("/api/v1/productions/").json
    assert body == {"count": 0, "next": None, "previous": None, "results": []}
    assert client.get("/api/v1/productions/?page=last").json == body
    assert client.get("/api/v1/productions/?page=2").status_code == 404


def test_query_param_helpers():
    url = "http://h/p/?b=2&page=5&a=1"
    assert replace_query_param(url, "page", 6) == "http://h/p/?a=1&b=2&page=6"
    assert remove_query_param(url, "page") == "http://h/p/?a=1&b=2"
    assert remove_query_param("http://h/p/?page=2", "page") == "http://h/p/"


@pytest.mark.parametrize(
    "query, next_query, previous_query",
    [
        ("fields=id,title", "fields=id%2Ctitle&page=3", "fields=id%2Ctitle"),
        (
            "ordering=-release_date_date,%20id",
            "ordering=-release_date_date%2C+id&page=3",
            "ordering=-release_date_date%2C+id",
        ),
        ("search=%20&q=a+b&r=a%2Bb", "page=3&q=a+b&r=a%2Bb&search=+", "q=a+b&r=a%2Bb&search=+"),
        ("q=R%26D&r=a%3Db", "page=3&q=R%26D&r=a%3Db", "q=R%26D&r=a%3Db"),
        # Raw bytes that are not ASCII are read as UTF-8, as if percent-encoded.
        ("q=%C3%A9t%C3%A9&r=é", "page=3&q=%C3%A9t%C3%A9&r=%C3%A9", "q=%C3%A9t%C3%A9&r=%C3%A9"),
        (
            "q=%ff&flag&=x&s=~*'",
            "=x&flag=&page=3&q=%EF%BF%BD&s=~%2A%27",
            "=x&flag=&q=%EF%BF%BD&s=~%2A%27",
        ),
        ("b=2&pag%65=1&b=1", "b=2&b=1&page=3", "b=2&b=1"),
    ],
)
def test_links_encode_every_kept_value_as_the_upstream(client, query, next_query, previous_query):
    """Every kept name and value as Django REST framework writes it: decoded, sorted by
    name, through quote_plus (oracle.upstream_link spells the algorithm out)."""
    asked = f"http://localhost/api/v1/productions/?{query}&page=2"
    body = client.get(asked).json
    assert body["next"] == f"http://localhost/api/v1/productions/?{next_query}"
    assert body["previous"] == f"http://localhost/api/v1/productions/?{previous_query}"
    assert body["next"] == oracle.upstream_link(asked, 3)
    assert body["previous"] == oracle.upstream_link(asked, 1)
