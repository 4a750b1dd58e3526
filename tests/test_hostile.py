"""Hostile and malformed requests: every answer is JSON, a 4xx or a correct 200, never a
500, a traceback or HTML; absolute URLs cannot be poisoned through the Host header."""

import http.client
import json
import logging

import pytest
from werkzeug.test import EnvironBuilder, run_wsgi_app

from demoserv.loader.sources import load_catalogue

from .openapi_check import SPEC
from .test_server import Server

NASTY_VALUES = [
    "%ff",
    "%00",
    "%00abc",
    "\u202e",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "٣",
    "'; DROP TABLE productions; --",
    "../../etc/passwd",
    "%2e%2e",
    "<script>",
    "1e309",
    "-0",
    " ",
    "\t",
    "ñ" * 300,
]
# Every query parameter the document gives the productions listing, so that a new one
# is covered without being listed here.
PARAMETERS = [
    parameter["name"] for parameter in SPEC["paths"]["/api/v1/productions/"]["get"]["parameters"]
]


def assert_json_answer(response, allowed=(200, 400, 404, 406)):
    assert response.status_code in allowed, (response.status_code, response.data[:200])
    assert response.headers["Content-Type"] == "application/json"
    body = response.get_json()
    assert isinstance(body, dict)
    if response.status_code != 200:
        assert list(body) == ["detail"]
        assert "Traceback" not in body["detail"] and 'File "' not in body["detail"]


@pytest.mark.parametrize("parameter", PARAMETERS)
def test_nasty_values_in_every_parameter(client, parameter):
    for value in NASTY_VALUES:
        assert_json_answer(client.get(f"/api/v1/productions/?{parameter}={value}"))
        assert_json_answer(
            client.get(f"/api/v1/productions/?{parameter}={value}&{parameter}=1&{parameter}=")
        )


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/productions/%2e%2e/",
        "/api/v1/productions/..%2f..%2f/",
        "/api/v1/%ff/",
        "/api/v1/productions/%00/",
        "/api/v1/productions/" + "9" * 40 + "/",
        "/api/v1/productions/-5/",
        "/api/v1/productions/1.5/",
        "/api/v1/productions/0x10/",
        # Digits that are not ASCII (Arabic-Indic three), as the upstream's routes.
        "/api/v1/productions/%D9%A3/",
        "/api/adhoc/meteoriks/candidates/%D9%A3%D9%A3/",
        "/api/v1//productions/",
        "/api/v1/productions/1/productions/",
        "/api/v1/releasers/" + "9" * 40 + "/productions/",
    ],
)
def test_odd_paths(client, path):
    response = client.get(path)
    assert_json_answer(response, allowed=(404, 308))


def test_too_long_requests_are_414_or_431_json(client):
    for path in (
        "/api/v1/productions/?title=" + "x" * 100_000,
        "/api/v1/productions/?" + "&".join(f"p{i}=1" for i in range(10_000)),
        "/api/v1/productions/" + "a" * 5000 + "/",
    ):
        response = client.get(path)
        assert response.status_code == 414 and response.json == {"detail": "Request URI too long."}
    response = client.get("/api/v1/", headers={"X-Padding": "x" * 20_000})
    assert response.status_code == 431 and response.json == {
        "detail": "Request header fields too large."
    }


@pytest.mark.parametrize(
    "host",
    [
        "evil.example/path",
        "example.com:abc",
        "exa mple.com",
        "ex\x01ample.com",
        "example.com:99999999",
        "@evil.example",
    ],
)
def test_unusable_host_headers_are_400(client, host):
    response = client.get("/api/v1/platforms/", headers={"Host": host})
    assert response.status_code == 400 and "Host" in response.json["detail"]


@pytest.mark.parametrize(
    "host", ["api.example.org", "api.example.org:8080", "127.0.0.1:8080", "[::1]:8080", "localhost"]
)
def test_usable_host_headers(client, host):
    response = client.get("/api/v1/", headers={"Host": host})
    assert response.status_code == 200
    assert response.json["platforms"] == f"http://{host}/api/v1/platforms/"


@pytest.mark.parametrize("method", ["GET", "HEAD", "OPTIONS"])
def test_a_body_where_the_method_takes_none_is_a_400(client, method):
    response = client.open("/api/v1/productions/", method=method, data=b"x")
    assert response.status_code == 400
    if method != "HEAD":
        assert method in response.json["detail"]


def test_a_long_body_is_a_413_a_short_one_the_methods_405(client):
    assert client.post("/api/v1/productions/", data=b"x" * 8193).status_code == 413
    assert client.post("/api/v1/productions/", data=b"x" * 100).status_code == 405


@pytest.mark.parametrize("protocol, status", [("HTTP/1.1", 400), ("HTTP/1.0", 200)])
def test_http_1_1_without_host_is_a_400(app, protocol, status):
    """HTTP/1.0 needs no Host: the server's name stands in."""
    environ = EnvironBuilder("/api/v1/").get_environ()
    del environ["HTTP_HOST"]
    environ["SERVER_PROTOCOL"] = protocol
    body, got, _ = run_wsgi_app(app, environ, buffered=True)
    assert int(got.split()[0]) == status
    if status == 400:
        assert "Host" in json.loads(b"".join(body))["detail"]


def test_trusted_hosts(make_app, loaded_database):
    client = make_app(loaded_database, TRUSTED_HOSTS=["api.example.org"]).test_client()
    assert client.get("/api/v1/", headers={"Host": "api.example.org"}).status_code == 200
    refused = client.get("/api/v1/", headers={"Host": "evil.example"})
    assert refused.status_code == 400 and "Host not allowed" in refused.json["detail"]
    assert refused.headers["Content-Type"] == "application/json"


def test_one_access_line_per_request(client, caplog):
    with caplog.at_level(logging.INFO, logger="demoserv.access"):
        for path in ("/api/v1/platforms/?name=x", "/api/v1/nothing/"):
            client.get(path).close()
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "demoserv.access"]
    assert [(line["method"], line["path"], line["query"], line["status"]) for line in lines] == [
        ("GET", "/api/v1/platforms/", "name=x", 200),
        ("GET", "/api/v1/nothing/", "", 404),
    ]
    assert all(line["ms"] >= 0 and line["bytes"] > 0 for line in lines)


def test_server_errors_are_logged_with_traceback_and_hidden_from_clients(
    app, client, caplog, monkeypatch
):
    from demoserv.web.views.resources import Serving

    def broken(*args):
        raise RuntimeError("secret internals")

    monkeypatch.setattr(Serving, "fetch_page", broken)
    with caplog.at_level(logging.INFO):
        response = client.get("/api/v1/platforms/")
    assert response.status_code == 500 and b"secret" not in response.data
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert errors and errors[0].exc_info and "secret internals" in str(errors[0].exc_info[1])
    access = [json.loads(r.getMessage()) for r in caplog.records if r.name == "demoserv.access"]
    assert access[-1]["status"] == 500


def raw_request(base, request_line, headers):
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=30)
    connection.putrequest(*request_line, skip_host=True, skip_accept_encoding=True)
    for name, value in headers.items():
        connection.putheader(name, value)
    try:
        connection.endheaders()
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type"), response.read()
    finally:
        connection.close()


def test_hostile_requests_over_http(tmp_path, catalogue_dir):
    load_catalogue(catalogue_dir, tmp_path / "db.sqlite3")
    with Server(tmp_path / "db.sqlite3") as server:
        cases = [
            (("GET", "/api/v1/productions/?ordering=%ff%00"), {"Host": "localhost"}, 400),
            (("GET", "/api/v1/productions/?title=" + "y" * 100_000), {"Host": "localhost"}, 414),
            (("GET", "/api/v1/"), {"Host": "localhost", "X-Big": "z" * 20_000}, 431),
            (("GET", "/api/v1/"), {"Host": "evil.example/path"}, 400),
            (("GET", "/api/v1/"), {"Host": "example.com:abc"}, 400),
            (("BREW", "/api/v1/productions/"), {"Host": "localhost"}, 405),
            (("GET", "/api/v1/productions/%2e%2e/"), {"Host": "localhost"}, 404),
            (("GET", "/api/v1/"), {}, 400),  # HTTP/1.1 without Host
            (("GET", "/api/v1/"), {"Host": "localhost", "Content-Length": "0"}, 200),
        ]
        for request_line, headers, status in cases:
            got, content_type, body = raw_request(server.url, request_line, headers)
            assert (got, content_type) == (status, "application/json"), (request_line, body[:200])
            if status != 200:
                assert list(json.loads(body)) == ["detail"]
