"""Methods, headers, negotiation and the one error shape, on every kind of response."""

import pytest

PATHS = [
    "/api/v1/",
    "/api/v1/productions/",
    "/api/v1/productions/?page=2",
    "/api/v1/platforms/",
    "/api/v1/parties/",
]
ERRORS = [
    ("/api/v1/productions/?page=0", 404, "Invalid page."),
    ("/api/v1/productions/?ordering=nope", 400, None),
    ("/api/v1/productions/?format=xml", 400, None),
    ("/api/v1/nothing/", 404, "Not found."),
    ("/api/v1/productions/1/", 404, "Not found."),
    ("/api/v1/productions/abc/", 404, "Not found."),
    ("/api/v1/productions/-3/", 404, "Not found."),
    ("/api/v1/productions/" + "9" * 40 + "/", 404, "Not found."),
    ("/api/v1/productions/9223372036854775807/", 404, "Not found."),
    ("/api/v1/productions/%2e%2e/", 404, "Not found."),
]


def assert_api_headers(response):
    assert response.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert response.headers["Content-Type"] == "application/json"
    assert "Accept" in [v.strip() for v in response.headers["Vary"].split(",")]


@pytest.mark.parametrize("path", PATHS)
def test_get_and_head(client, path):
    response = client.get(path)
    assert response.status_code == 200
    assert_api_headers(response)
    head = client.head(path)
    assert head.status_code == 200 and head.data == b""
    assert_api_headers(head)
    assert head.headers["Content-Length"] == response.headers["Content-Length"]


@pytest.mark.parametrize("path, status, detail", ERRORS)
def test_errors_are_json_with_detail(client, path, status, detail):
    response = client.get(path)
    assert response.status_code == status
    assert_api_headers(response)
    assert list(response.json) == ["detail"] and response.json["detail"]
    if detail:
        assert response.json["detail"] == detail


def test_bad_format_names_the_parameter(client):
    assert "format" in client.get("/api/v1/productions/?format=xml").json["detail"]
    # An empty format is no format.
    body = client.get("/api/v1/platforms/?format=").json
    assert not body["results"][0]["url"].endswith("?format=")


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "TRACE", "BREW"])
@pytest.mark.parametrize("path", ["/api/v1/", "/api/v1/productions/", "/api/v1/platforms/1/"])
def test_other_methods_are_405(client, method, path):
    response = client.open(path, method=method, data=b'{"a": 1}')
    assert response.status_code == 405
    assert response.json == {"detail": f'Method "{method}" not allowed.'}
    assert_api_headers(response)


@pytest.mark.parametrize(
    "path, name",
    [
        ("/api/v1/productions/", "Production List"),
        ("/api/v1/platforms/1/", "Platform Instance"),
        ("/api/v1/", "Api Root"),
    ],
)
def test_options_describes_the_resource(client, path, name):
    response = client.options(path)
    assert response.status_code == 200
    assert_api_headers(response)
    assert response.json["name"] == name and response.json["description"]
    assert "format" in response.json["parameters"]
    assert ("ordering" in response.json) == path.endswith("productions/")
    if path == "/api/v1/productions/":
        assert response.json["ordering"] == [
            "id",
            "sortable_title",
            "release_date_date",
            "supertype",
        ]
        assert set(response.json["parameters"]) == {
            "page",
            "ordering",
            "format",
            "callback",
            "fields",
            "title",
            "search",
            "tag",
            "platform",
            "production_type",
            "supertype",
            "released_before",
            "released_since",
            "author",
            "has_screenshot",
            "competition_placing_min",
            "link_url",
            "added_before",
            "added_since",
            "updated_before",
            "updated_since",
        }


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
@pytest.mark.parametrize("path", ["/api/v1/productions", "/api/v1/productions/1", "/api/v1"])
def test_other_methods_without_the_trailing_slash_are_405(client, method, path):
    response = client.open(path, method=method)
    assert response.status_code == 405
    assert response.json == {"detail": f'Method "{method}" not allowed.'}
    assert_api_headers(response)
    assert client.open("/api/v1/nothing", method=method).status_code == 404


def test_options_on_a_missing_path_is_404(client):
    response = client.options("/api/v1/nothing/")
    assert response.status_code == 404 and response.json == {"detail": "Not found."}


@pytest.mark.parametrize(
    "accept, status",
    [
        ("application/json", 200),
        ("*/*", 200),
        ("application/*", 200),
        ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", "html"),
        ("text/html", "html"),
        ("text/*", "html"),
        ("text/html, */*", "html"),
        ("application/*, text/html", "html"),
        ("application/json, text/html", 200),
        ("text/html;q=0.5, application/json", 200),
        ("text/html;q=0, */*", 200),
        ("text/plain, */*;q=0.1", 200),
        ("application/xml, text/csv", 406),
        ("application/json;q=0", 406),
        ("application/json; charset=utf-8", 200),
        ("application/json;indent=4", 200),
        ("text/html;q=1, application/json; version=1.0;q=0.5", "html"),
        ("application/vnd.api+json", 406),
        ("application/json;q=zero", 406),
        ("application/json;q=0, */*", 406),
        ("application/*;q=0, application/json", 200),
        ("*/*;q=0, application/*;q=0.1", 200),
        ("", 200),
    ],
)
def test_accept(client, accept, status):
    """JSON for what admits it, the HTML page where text/html is preferred to it (named,
    with a higher quality or from a more specific range), else a 406."""
    response = client.get("/api/v1/platforms/", headers={"Accept": accept})
    if status == "html":
        assert response.status_code == 200
        assert response.headers["Content-Type"] == "text/html; charset=utf-8"
        assert "Accept" in response.headers["Vary"] and response.headers["Allow"]
        return
    assert response.status_code == status
    assert_api_headers(response)
    if status == 406:
        assert response.json == {"detail": "Could not satisfy the request Accept header."}


@pytest.mark.parametrize("format", ["json", "api"])
def test_format_overrides_accept(client, format):
    response = client.get(f"/api/v1/platforms/?format={format}", headers={"Accept": "text/html"})
    assert response.status_code == 200
    assert_api_headers(response)


@pytest.mark.parametrize(
    "path, location",
    [
        ("/api/v1/productions", "http://localhost/api/v1/productions/"),
        (
            "/api/v1/productions?page=2&ordering=-id",
            "http://localhost/api/v1/productions/?page=2&ordering=-id",
        ),
        ("/api/v1", "http://localhost/api/v1/"),
        ("/api/v1/platforms/1", "http://localhost/api/v1/platforms/1/"),
    ],
)
def test_missing_trailing_slash_redirects_keeping_the_query(client, path, location):
    response = client.get(path)
    assert response.status_code == 308
    assert response.headers["Location"] == location
    assert_api_headers(response)
    assert "detail" in response.json


def test_unexpected_errors_are_json_500_without_internals(app, client, monkeypatch):
    from demoserv.web.views.resources import Serving

    def broken(*args):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Serving, "fetch_page", broken)
    response = client.get("/api/v1/productions/")
    assert response.status_code == 500
    assert response.json == {"detail": "A server error occurred."}
    assert_api_headers(response)
    assert b"secret" not in response.data


def test_unknown_query_parameters_are_ignored(client):
    plain = client.get("/api/v1/parties/").json["results"]
    assert client.get("/api/v1/parties/?colour=blue&limit=3").json["results"] == plain


@pytest.mark.parametrize("path", ["/api/v2/", "/favicon.ico", "/api/v1x/"])
def test_errors_outside_the_api_are_json_too(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response.json == {"detail": "Not found."}


def test_site_root_points_at_the_api(client):
    response = client.get("/")
    assert response.status_code == 302
    assert response.headers["Location"].endswith("/api/v1/")
    assert response.headers["Content-Type"] == "application/json" and "detail" in response.json


def test_a_browser_gets_the_redirect_to_the_docs_page(client):
    response = client.get("/api/v1/docs", headers={"Accept": "text/html,application/xhtml+xml"})
    assert response.status_code == 308
    assert response.headers["Location"].endswith("/api/v1/docs/")
