"""Request shapes the upstream serves besides ``?format=``: format suffixes on the path,
JSONP and indented JSON (CONTRACT.md, "Request shapes the upstream also serves"; the
upstream's behaviour as UPSTREAM.md records it)."""

import gzip
import json
import re

import pytest

from demoserv.loader.sources import load_catalogue

from . import catalogue_factory
from .conftest import module_client

client = module_client()  # every test only reads

API = "http://localhost/api/v1/"
JSONP_TYPE = "application/javascript; charset=utf-8"


def _urls(value):
    """Every url, next and previous in a decoded answer."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("url", "next", "previous") and isinstance(item, str):
                yield item
            else:
                yield from _urls(item)
    elif isinstance(value, list):
        for item in value:
            yield from _urls(item)


def _suffixed(value, suffix):
    """``value`` with every API address ending in ``suffix`` instead of its slash."""
    if isinstance(value, dict):
        return {key: _suffixed(item, suffix) for key, item in value.items()}
    if isinstance(value, list):
        return [_suffixed(item, suffix) for item in value]
    if isinstance(value, str) and value.startswith(API):
        return re.sub(r"/(\?|$)", suffix + r"\1", value, count=1)
    return value


@pytest.mark.parametrize("suffix", [".json", ".api"])
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/",
        "/api/v1/productions/",
        "/api/v1/productions/?ordering=-id&page=2",
        "/api/v1/releasers/?is_group=true",
        "/api/v1/parties/",
        "/api/v1/bbses/?fields=url,id,name",
    ],
)
def test_a_suffix_ends_every_address_of_a_listing(client, path, suffix):
    plain = client.get(path)
    address, _, query = path.partition("?")
    suffixed_path = (address if address == "/api/v1/" else address[:-1]) + suffix
    response = client.get(suffixed_path + (f"?{query}" if query else ""))
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.json == _suffixed(plain.json, suffix)
    urls = list(_urls(response.json)) or list(response.json.values())
    assert urls and all(url.startswith(API) for url in urls)
    assert all("/?" not in url and not url.endswith("/") for url in urls), urls
    assert response.headers["ETag"] != plain.headers["ETag"]


def test_a_suffix_on_a_detail_and_a_sub_resource(client):
    listing = client.get("/api/v1/productions/?ordering=id").json["results"]
    first = listing[0]["id"]
    detail = client.get(f"/api/v1/productions/{first}.json")
    assert detail.status_code == 200
    assert detail.json["url"] == f"{API}productions/{first}.json"
    assert detail.json == _suffixed(client.get(f"/api/v1/productions/{first}/").json, ".json")
    credited = next(record for record in listing if record["author_nicks"])
    releaser = credited["author_nicks"][0]["releaser"]["id"]
    for sub in ("productions", "member_productions"):
        plain = client.get(f"/api/v1/releasers/{releaser}/{sub}/").json
        suffixed = client.get(f"/api/v1/releasers/{releaser}/{sub}.api")
        assert suffixed.status_code == 200
        assert suffixed.json == _suffixed(plain, ".api")
    assert plain or client.get(f"/api/v1/releasers/{releaser}/productions/").json


def test_next_and_previous_keep_the_suffix(client):
    page = client.get("/api/v1/productions.json?page=2").json
    assert page["next"] == f"{API}productions.json?page=3"
    assert page["previous"] == f"{API}productions.json"
    last = client.get(page["next"].removeprefix("http://localhost")).json
    assert last["previous"] == f"{API}productions.json?page=2"


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/productions.xml",
        "/api/v1/productions/1.xml",
        "/api/v1/.xml",
        "/api/v1/productions.jsonx",
        "/api/v1/productions.json/",
        "/api/v1/productions/999999.json",
    ],
)
def test_an_unknown_suffix_or_record_is_a_json_404(client, path):
    response = client.get(path)
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/json"
    assert response.json == {"detail": "Not found."}


def test_the_suffix_decides_over_the_format_parameter(client):
    response = client.get("/api/v1/platforms.json?format=jsonp&callback=cb")
    assert response.headers["Content-Type"] == "application/json"
    assert response.json["results"][0]["url"].endswith(".json")
    # A value format= cannot take is still a 400.
    assert client.get("/api/v1/platforms.json?format=xml").status_code == 400


def test_suffixed_paths_answer_head_options_304_and_compression(client):
    path = "/api/v1/productions.json"
    got = client.get(path, headers={"Accept-Encoding": "gzip"})
    assert got.headers["Content-Encoding"] == "gzip"
    assert json.loads(gzip.decompress(got.data))["results"][0]["url"].endswith(".json")
    head = client.head(path)
    assert head.status_code == 200 and head.data == b""
    assert head.headers["ETag"] == client.get(path).headers["ETag"]
    again = client.get(path, headers={"If-None-Match": head.headers["ETag"]})
    assert again.status_code == 304
    options = client.options(path)
    assert options.status_code == 200 and options.json["name"] == "Production List"
    assert client.options("/api/v1/.json").json["name"] == "Api Root"
    # Without the trailing slash, the plain path still redirects with its query.
    moved = client.get("/api/v1/productions?page=2")
    assert moved.status_code == 308
    assert moved.headers["Location"].endswith("/api/v1/productions/?page=2")


def _detail(client, path):
    """``path``, or for "a bbs" the address of the first BBS (a detail record)."""
    if path != "a bbs":
        return path
    return client.get("/api/v1/bbses/").json["results"][0]["url"].removeprefix("http://localhost")


def _unwrapped(response, callback="callback"):
    body = response.get_data()
    assert body.startswith(callback.encode() + b"(") and body.endswith(b");")
    return json.loads(body[len(callback) + 1 : -2])


@pytest.mark.parametrize(
    "path", ["/api/v1/", "/api/v1/productions/?page=2", "a bbs", "/api/v1/platforms/"]
)
def test_jsonp_wraps_the_json(client, path):
    path = _detail(client, path)
    plain = client.get(path)
    join = "&" if "?" in path else "?"
    response = client.get(f"{path}{join}format=jsonp")
    assert response.status_code == 200
    assert response.headers["Content-Type"] == JSONP_TYPE
    assert "Accept" in response.headers["Vary"]
    expected = plain.json
    if path != "/api/v1/":
        # format=jsonp, asked as a parameter, is carried into every url.
        assert all(
            url.endswith("format=jsonp") or "format=jsonp&" in url
            for url in _urls(_unwrapped(response))
        )
    assert _strip_format(_unwrapped(response)) == _strip_format(expected)


def _strip_format(value):
    if isinstance(value, dict):
        return {key: _strip_format(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_strip_format(item) for item in value]
    if isinstance(value, str):
        return re.sub(r"([?&])format=jsonp(&|$)", lambda m: m[1] if m[2] else "", value)
    return value


def test_jsonp_callback_names(client):
    named = client.get("/api/v1/platforms/?format=jsonp&callback=my.app_1$.cb")
    assert _unwrapped(named, "my.app_1$.cb")["count"] >= 1
    # callback= without format=jsonp is ignored, as upstream.
    plain = client.get("/api/v1/platforms/?callback=cb")
    assert plain.headers["Content-Type"] == "application/json" and plain.json["count"] >= 1
    # Accept: application/javascript asks for JSONP; addresses carry no format.
    accepted = client.get(
        "/api/v1/platforms/?callback=cb", headers={"Accept": "application/javascript"}
    )
    assert accepted.headers["Content-Type"] == JSONP_TYPE
    assert _unwrapped(accepted, "cb") == plain.json
    # JSON wins where both are accepted, and */* alone is JSON.
    for accept in ("application/javascript, application/json", "*/*"):
        both = client.get("/api/v1/platforms/", headers={"Accept": accept})
        assert both.headers["Content-Type"] == "application/json"


@pytest.mark.parametrize(
    "callback",
    [
        "alert(1)//",
        "1abc",
        "a..b",
        "a.",
        "<script>",
        "a b",
        "a\u00e9",
        "x" * 101,
        "a;b",
    ],
)
@pytest.mark.parametrize(
    "path, asked",
    [
        ("/api/v1/platforms/", {"format": "jsonp"}),
        # Not JSONP: checked all the same, as the OpenAPI document's one pattern says.
        ("/api/v1/platforms/", {}),
        ("/api/v1/platforms.json", {"format": "jsonp"}),
    ],
)
def test_a_callback_that_is_not_a_name_is_a_json_400(client, callback, path, asked):
    response = client.get(path, query_string={**asked, "callback": callback})
    assert response.status_code == 400
    assert response.headers["Content-Type"] == "application/json"
    assert "callback" in response.json["detail"]
    assert callback.encode() not in response.data or callback == "a"


def test_a_callback_of_100_characters_is_a_name(client):
    name = "x" * 100
    response = client.get(f"/api/v1/platforms/?format=jsonp&callback={name}")
    assert response.status_code == 200 and response.data.startswith(name.encode() + b"(")


def test_jsonp_errors_stay_json(client):
    response = client.get("/api/v1/productions/999999999/?format=jsonp&callback=cb")
    assert response.status_code == 404
    assert response.headers["Content-Type"] == "application/json"
    assert response.json == {"detail": "Not found."}
    bad = client.get("/api/v1/productions/?format=jsonp&ordering=nope")
    assert bad.status_code == 400 and bad.headers["Content-Type"] == "application/json"


def test_jsonp_etags_differ_by_form_and_callback(client):
    path = "/api/v1/platforms/"
    tags = {
        client.get(path).headers["ETag"],
        client.get(path, headers={"Accept": "application/javascript"}).headers["ETag"],
        client.get(path + "?callback=other", headers={"Accept": "application/javascript"}).headers[
            "ETag"
        ],
        client.get(path + "?format=jsonp").headers["ETag"],
        client.get(path + "?format=jsonp&callback=other").headers["ETag"],
        client.get(path, headers={"Accept": "application/json; indent=4"}).headers["ETag"],
    }
    assert len(tags) == 6
    # A 304 to a JSONP request keeps its type; a JSON client's tag does not match JSONP.
    jsonp = client.get(path, headers={"Accept": "application/javascript"})
    again = client.get(
        path,
        headers={"Accept": "application/javascript", "If-None-Match": jsonp.headers["ETag"]},
    )
    assert again.status_code == 304 and again.headers["Content-Type"] == JSONP_TYPE
    assert client.get(path, headers={"If-None-Match": jsonp.headers["ETag"]}).status_code == 200


def test_jsonp_is_compressed_and_head_has_no_body(client):
    response = client.get(
        "/api/v1/productions/?format=jsonp&callback=cb", headers={"Accept-Encoding": "br, gzip"}
    )
    assert response.headers["Content-Encoding"] == "br"
    assert response.headers["Content-Type"] == JSONP_TYPE
    head = client.head("/api/v1/productions/?format=jsonp&callback=cb")
    assert head.data == b"" and head.headers["Content-Type"] == JSONP_TYPE


def _upstream_indent(value, indent):
    """The upstream's renderer: Django REST Framework's JSONRenderer with an indent."""
    text = json.dumps(value, indent=indent, ensure_ascii=False, separators=(",", ": "))
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").encode()


@pytest.mark.parametrize("indent", [1, 2, 4, 8])
@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/",
        "/api/v1/productions/",
        "/api/v1/productions/?fields=id,credits",
        "a bbs",
    ],
)
def test_indent_as_upstream(client, path, indent):
    path = _detail(client, path)
    compact = client.get(path)
    response = client.get(path, headers={"Accept": f"application/json; indent={indent}"})
    assert response.status_code == 200
    assert response.headers["Content-Type"] == "application/json"
    assert response.data == _upstream_indent(compact.json, indent)
    assert response.headers["ETag"] != compact.headers["ETag"]


@pytest.mark.parametrize("indent", ["0", "9", "-1", "x", "", "4.0", "\u0664"])
def test_other_indents_are_compact(client, indent):
    compact = client.get("/api/v1/platforms/").data
    response = client.get(
        "/api/v1/platforms/", headers={"Accept": f"application/json; indent={indent}"}
    )
    assert response.status_code == 200 and response.data == compact


def test_indent_applies_to_errors_and_not_to_jsonp(client):
    error = client.get(
        "/api/v1/productions/?ordering=nope", headers={"Accept": "application/json; indent=2"}
    )
    assert error.status_code == 400 and error.data.startswith(b'{\n  "detail": ')
    jsonp = client.get(
        "/api/v1/platforms/?format=jsonp", headers={"Accept": "application/json; indent=2"}
    )
    assert b"\n" not in jsonp.data


def test_line_separators_are_escaped_in_every_json_and_jsonp_body(make_app, tmp_path):
    """As the upstream's framework writes them: a JSONP script holding U+2028 or U+2029
    raw is a syntax error in JavaScript engines before ES2019."""
    records = catalogue_factory.build(seed=3)
    title = "Line\u2028and\u2029paragraph"
    records["productions"][0]["title"] = title
    production = records["productions"][0]["id"]
    load_catalogue(catalogue_factory.write(records, tmp_path / "c"), tmp_path / "db.sqlite3")
    client = make_app(tmp_path / "db.sqlite3").test_client()
    raw = ("\u2028".encode(), "\u2029".encode())
    for path, headers in [
        (f"/api/v1/productions/{production}/", {}),
        (f"/api/v1/productions/{production}/?format=jsonp", {}),
        (f"/api/v1/productions/?title={title}", {}),
        (f"/api/v1/productions/{production}/", {"Accept": "application/json; indent=4"}),
        (f"/api/v1/productions/?ordering={title}", {}),  # the error names the value
    ]:
        response = client.get(path, headers=headers)
        assert not any(separator in response.data for separator in raw), (path, response.data[:300])
        if response.status_code == 200:
            body = response.data.decode()
            assert "\\u2028" in body and "\\u2029" in body, path
            if "format=jsonp" not in path:
                assert title in json.dumps(response.json, ensure_ascii=False)
