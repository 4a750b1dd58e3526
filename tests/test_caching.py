"""ETag, Last-Modified, Cache-Control and 304; CORS; compression; nosniff."""

import gzip

import brotli
import pytest

from demoserv.loader.sources import load_catalogue

from . import catalogue_factory

PATH = "/api/v1/productions/?page=2&ordering=-id"


def test_cache_headers_on_every_200(client):
    for path in (PATH, "/api/v1/", "/api/v1/platforms/1/", "/api/v1/bbses/?name=x"):
        response = client.get(path)
        assert response.status_code == 200
        assert response.headers["ETag"].startswith('"') and response.headers["ETag"].endswith('"')
        assert response.headers["Cache-Control"] == "public, max-age=300"
        assert response.headers["Last-Modified"].endswith(" GMT")
    assert "ETag" not in client.get("/api/v1/productions/?page=0").headers


def test_etags_differ_by_request(client):
    tags = {
        client.get(path).headers["ETag"]
        for path in (PATH, PATH + "&format=api", "/api/v1/productions/", "/api/v1/")
    }
    assert len(tags) == 4


def test_if_none_match_round_trip(client):
    first = client.get(PATH)
    tag = first.headers["ETag"]
    again = client.get(PATH, headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.data == b""
    assert again.headers["ETag"] == tag and again.headers["Cache-Control"] == "public, max-age=300"
    assert client.get(PATH, headers={"If-None-Match": f'"other", W/{tag}'}).status_code == 304
    assert client.get(PATH, headers={"If-None-Match": "*"}).status_code == 304
    assert client.head(PATH, headers={"If-None-Match": tag}).status_code == 304
    stale = client.get(PATH, headers={"If-None-Match": '"not-it"'})
    assert stale.status_code == 200 and stale.json == first.json


def test_if_modified_since(client):
    modified = client.get(PATH).headers["Last-Modified"]
    assert client.get(PATH, headers={"If-Modified-Since": modified}).status_code == 304
    assert (
        client.get(PATH, headers={"If-Modified-Since": "Sat, 01 Jan 2000 00:00:00 GMT"}).status_code
        == 200
    )
    # If-None-Match decides when both are given.
    both = {"If-Modified-Since": modified, "If-None-Match": '"not-it"'}
    assert client.get(PATH, headers=both).status_code == 200


def test_etag_follows_the_records_not_the_load(make_app, tmp_path):
    """The catalogue version is a digest of the records: reloading the same records
    keeps every ETag; other records change them."""
    database = tmp_path / "db.sqlite3"
    folder = catalogue_factory.write(
        catalogue_factory.build(seed=9, productions=120), tmp_path / "c"
    )
    load_catalogue(folder, database)
    client = make_app(database).test_client()
    tag = client.get(PATH).headers["ETag"]
    assert client.get(PATH, headers={"If-None-Match": tag}).status_code == 304
    load_catalogue(folder, database)  # the same records, a new load
    assert client.get(PATH, headers={"If-None-Match": tag}).status_code == 304
    other = catalogue_factory.write(
        catalogue_factory.build(seed=10, productions=120), tmp_path / "other"
    )
    load_catalogue(other, database)
    response = client.get(PATH, headers={"If-None-Match": tag})
    assert response.status_code == 200 and response.headers["ETag"] != tag


def test_max_age_is_configuration(make_app, loaded_database):
    client = make_app(loaded_database, CACHE_MAX_AGE=60).test_client()
    assert client.get("/api/v1/").headers["Cache-Control"] == "public, max-age=60"


@pytest.mark.parametrize("encoding, decode", [("gzip", gzip.decompress), ("br", brotli.decompress)])
def test_compression(client, encoding, decode):
    plain = client.get(PATH)
    packed = client.get(PATH, headers={"Accept-Encoding": encoding})
    assert packed.headers["Content-Encoding"] == encoding
    assert "Accept-Encoding" in packed.headers["Vary"]
    assert decode(packed.data) == plain.data
    assert len(packed.data) < len(plain.data) / 4
    assert packed.headers["ETag"] == plain.headers["ETag"][:-1] + f'-{encoding}"'
    head = client.head(PATH, headers={"Accept-Encoding": encoding})
    assert head.headers["Content-Length"] == str(len(packed.data))
    # The compressed form's ETag is good for a conditional request too.
    assert client.get(PATH, headers={"If-None-Match": packed.headers["ETag"]}).status_code == 304


@pytest.mark.parametrize(
    "accept, expected",
    [
        ("gzip, br", "br"),
        ("br;q=0.5, gzip", "gzip"),
        ("*", "br"),
        ("identity", None),
        ("gzip;q=0", None),
        ("", None),
        ("deflate", None),
    ],
)
def test_encoding_choice(client, accept, expected):
    response = client.get(PATH, headers={"Accept-Encoding": accept})
    assert response.headers.get("Content-Encoding") == expected


def test_small_bodies_are_not_compressed(client):
    response = client.get("/api/v1/", headers={"Accept-Encoding": "gzip"})
    assert len(response.data) < 1024 and "Content-Encoding" not in response.headers


def test_cors(client):
    response = client.get(PATH, headers={"Origin": "https://example.org"})
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    error = client.get("/api/v1/nothing/", headers={"Origin": "https://example.org"})
    assert error.headers["Access-Control-Allow-Origin"] == "*"
    preflight = client.options(
        PATH,
        headers={
            "Origin": "https://example.org",
            "Access-Control-Request-Method": "GET",
            "Access-Control-Request-Headers": "If-None-Match, X-Client",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["Access-Control-Allow-Origin"] == "*"
    assert preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD, OPTIONS"
    assert preflight.headers["Access-Control-Allow-Headers"] == "If-None-Match, X-Client"
    assert int(preflight.headers["Access-Control-Max-Age"]) > 0


@pytest.mark.parametrize(
    "path", ["/api/v1/", PATH, "/api/v1/nothing/", "/", "/elsewhere", "/api/v1/productions"]
)
def test_nosniff_everywhere(client, path):
    assert client.get(path).headers["X-Content-Type-Options"] == "nosniff"


@pytest.mark.parametrize(
    "path, status",
    [
        ("/api/v1/nope/", 404),
        ("/api/v1/productions/1/", 404),
        ("/api/v1/productions/?page=99", 404),
        ("/api/v1/productions/?ordering=bogus", 400),
        ("/api/v1/productions", 308),
    ],
)
@pytest.mark.parametrize(
    "validators",
    [{"If-None-Match": "*"}, {"If-Modified-Since": "Sun, 22 Nov 2099 08:25:27 GMT"}],
)
def test_conditional_requests_never_hide_an_error(client, path, status, validators):
    assert client.get(path, headers=validators).status_code == status


def test_if_none_match_star_and_a_future_date_answer_304_for_a_200(client):
    for validators in (
        {"If-None-Match": "*"},
        {"If-Modified-Since": "Sun, 22 Nov 2099 08:25:27 GMT"},
    ):
        assert client.get(PATH, headers=validators).status_code == 304


def test_a_304_keeps_the_api_headers(client):
    plain = client.get(PATH, headers={"Accept-Encoding": "gzip"})
    for validators in ({"If-None-Match": plain.headers["ETag"]}, {"If-None-Match": "*"}):
        again = client.get(PATH, headers={**validators, "Accept-Encoding": "gzip"})
        assert again.status_code == 304
        for name in ("Allow", "Content-Type", "Last-Modified", "Cache-Control", "ETag"):
            assert again.headers[name], name
        assert again.headers["Content-Type"] == "application/json"
        assert set(again.headers["Vary"].replace(" ", "").split(",")) >= {
            "Accept",
            "Accept-Encoding",
        }


def test_a_304_names_the_form_of_the_etag_the_client_holds(client):
    packed = client.get(PATH, headers={"Accept-Encoding": "gzip"})
    tag = packed.headers["ETag"]
    assert tag.endswith('-gzip"')
    again = client.get(PATH, headers={"Accept-Encoding": "gzip", "If-None-Match": tag})
    assert again.status_code == 304 and again.headers["ETag"] == tag
    star = client.get(PATH, headers={"Accept-Encoding": "gzip", "If-None-Match": "*"})
    assert star.status_code == 304 and star.headers["ETag"] == tag


# Every kind of answer that carries an ETag: API listings, records, the root, JSONP,
# indented JSON, the document, the docs page and the upstream's plain views.
LABELLED = [
    (PATH, {}),
    ("/api/v1/platforms/1/", {}),
    ("/api/v1/", {}),
    ("/api/v1/productions/?format=jsonp&callback=cb", {}),
    ("/api/v1/productions/", {"Accept": "application/json; indent=4"}),
    ("/api/v1/openapi.json", {}),
    ("/api/v1/docs/", {}),
    ("/api/v1/status/", {}),
    ("/api/adhoc/eq/demos/", {}),
    ("/api/adhoc/pouet-credits/", {}),
    ("/api/adhoc/pouet/prod-demozoo-ids-by-pouet-id/", {}),
]
BODY_HEADERS = {"Content-Length", "Content-Encoding"}


@pytest.mark.parametrize("path, headers", LABELLED)
@pytest.mark.parametrize("encoding", ["identity", "gzip"])
def test_a_304_carries_its_200s_headers_but_the_bodys(client, path, headers, encoding):
    headers = {**headers, "Accept-Encoding": encoding}
    fresh = client.get(path, headers=headers)
    assert fresh.status_code == 200
    again = client.get(path, headers={**headers, "If-None-Match": fresh.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    expected = {n: v for n, v in fresh.headers.items() if n not in BODY_HEADERS}
    assert dict(again.headers) == expected


def test_the_status_page_carries_the_catalogue_version_and_an_etag(client):
    fresh = client.get("/api/v1/status/")
    assert fresh.headers["X-Catalogue-Version"] == fresh.json["version"]
    assert fresh.headers["Cache-Control"] == "no-cache"
    tag = fresh.headers["ETag"]
    assert client.get("/api/v1/status/", headers={"If-None-Match": tag}).status_code == 304
    assert client.get("/api/v1/status/", headers={"If-None-Match": '"other"'}).status_code == 200
    indented = client.get("/api/v1/status/", headers={"Accept": "application/json; indent=2"})
    assert indented.headers["ETag"] != tag  # other bytes, another tag
