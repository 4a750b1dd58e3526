"""The browsable HTML page (demoserv/web/browsable.py): what a browser gets, what every
other client keeps getting, the page's structure in the upstream's order, its form, its
errors and its escaping (CONTRACT.md, "Request shapes the upstream also serves")."""

import gzip
import re
from html import unescape
from html.parser import HTMLParser
from urllib.parse import urlencode

import orjson
import pytest

from demoserv.loader.sources import load_catalogue
from demoserv.web.pagination import page_numbers

from . import catalogue_factory

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
HTML_TYPE = "text/html; charset=utf-8"
LISTS = [
    "/api/v1/party_series/",
    "/api/v1/platforms/",
    "/api/v1/bbses/",
    "/api/v1/parties/",
    "/api/v1/productions/",
    "/api/v1/releasers/",
    "/api/v1/production_types/",
    "/api/v1/changes/",
]


class Page(HTMLParser):
    """A page's links (href, text) in document order, and its form's fields."""

    def __init__(self, text):
        super().__init__()
        self.links, self.fields, self.labels, self.scripts = [], {}, set(), 0
        self._link = self._select = None
        self.feed(text)

    def handle_starttag(self, tag, attributes):
        attributes = dict(attributes)
        if tag == "a":
            self._link = [attributes.get("href"), ""]
        elif tag == "input":
            self.fields[attributes["name"]] = attributes.get("value", "")
        elif tag == "select":
            self._select = attributes["name"]
            self.fields[self._select] = None
        elif (
            tag == "option"
            and self._select
            and ("selected" in attributes or self.fields[self._select] is None)
        ):
            self.fields[self._select] = attributes["value"]
        elif tag == "label":
            self.labels.add(attributes["for"].removeprefix("field-"))
        elif tag == "script":
            self.scripts += 1

    def handle_endtag(self, tag):
        if tag == "a" and self._link:
            self.links.append(tuple(self._link))
            self._link = None
        elif tag == "select":
            self._select = None

    def handle_data(self, data):
        if self._link:
            self._link[1] += data.strip()


def html(client, path, **headers):
    response = client.get(path, headers={"Accept": BROWSER, **headers})
    assert response.headers["Content-Type"] == HTML_TYPE, (path, response.data[:200])
    return response


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/",
        "/api/v1/productions/?ordering=-id&page=2",
        "/api/v1/releasers/?is_group=true",
        "/api/v1/status/",
        "/api/v1/changes/",
        "/api/v1/nothing/",
        "/api/v1/productions/?ordering=nope",
    ],
)
def test_a_browser_gets_a_page_every_other_client_its_json(client, path):
    plain = client.get(path)
    for accept in ("*/*", "application/json", "text/html, application/json"):
        same = client.get(path, headers={"Accept": accept})
        assert (same.status_code, same.headers, same.data) == (
            plain.status_code,
            plain.headers,
            plain.data,
        ), accept
    assert plain.headers["Content-Type"] == "application/json"
    assert "Content-Security-Policy" not in plain.headers
    page = html(client, path)
    assert page.status_code == plain.status_code
    assert page.data.startswith(b"<!DOCTYPE html>")
    assert "Accept" in page.headers["Vary"] and page.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert "default-src 'none'" in page.headers["Content-Security-Policy"]
    if plain.status_code == 200:
        assert page.headers["ETag"] != plain.headers["ETag"]
    # Asked for a format, a browser gets the JSON every client gets.
    for asked in ("format=json", "format=api", "format=jsonp"):
        address = path + ("&" if "?" in path else "?") + asked
        browser = client.get(address, headers={"Accept": BROWSER})
        other = client.get(address)
        assert (browser.headers, browser.data) == (other.headers, other.data), address
        assert not browser.headers["Content-Type"].startswith("text/html")


def test_suffixes_options_and_adhoc_keep_their_types(client):
    for path in ("/api/v1/productions.json", "/api/v1/.api", "/api/adhoc/eq/demos/"):
        browser = client.get(path, headers={"Accept": BROWSER})
        assert (browser.headers, browser.data) == (client.get(path).headers, client.get(path).data)
    described = client.options("/api/v1/productions/", headers={"Accept": BROWSER})
    assert described.headers["Content-Type"] == "application/json"
    assert described.json["renders"] == ["application/json", "text/html", "application/javascript"]


def test_the_page_is_cached_and_compressed_as_its_own_answer(client):
    page = html(client, "/api/v1/parties/", **{"Accept-Encoding": "gzip"})
    assert page.headers["Content-Encoding"] == "gzip" and page.headers["ETag"].endswith('-gzip"')
    assert gzip.decompress(page.data).startswith(b"<!DOCTYPE html>")
    again = html(client, "/api/v1/parties/", **{"If-None-Match": page.headers["ETag"]})
    assert again.status_code == 304 and again.data == b""
    other = client.get("/api/v1/parties/", headers={"If-None-Match": page.headers["ETag"]})
    assert other.status_code == 200 and other.headers["Content-Type"] == "application/json"
    head = client.head("/api/v1/parties/", headers={"Accept": BROWSER})
    assert head.headers["Content-Type"] == HTML_TYPE and head.data == b""


def test_links_come_in_the_upstreams_order_and_a_script_reads_the_last_page(
    make_app, loaded_database
):
    """As the PHP script that reads the upstream's page does: it asks with a browser's
    Accept, takes the last page number by its position among the page's links (brand,
    breadcrumbs, the format menu, then the paginator), then asks for each page's JSON."""
    client = make_app(loaded_database, page_sizes={"productions": 3}).test_client()
    count = client.get("/api/v1/productions/").json["count"]
    final = -(-count // 3)
    assert final > 5  # the paginator shows 1 2 3 … final
    links = Page(html(client, "/api/v1/productions/").get_data(as_text=True)).links
    assert [text for _, text in links[:14]] == [
        "demoserv",
        "Api Root",
        "Production List",
        "GET",
        "json",
        "api",
        "jsonp",
        "«",
        "1",
        "2",
        "3",
        "…",
        str(final),
        "»",
    ]
    assert [href for href, _ in links[:7]] == [
        "/api/v1/docs/",
        "/api/v1/",
        "/api/v1/productions/",
        "/api/v1/productions/",
        "/api/v1/productions/?format=json",
        "/api/v1/productions/?format=api",
        "/api/v1/productions/?format=jsonp",
    ]
    assert links[7][0] == links[11][0] == "#"  # « on page 1, and the break
    assert links[13][0] == links[9][0] == "http://localhost/api/v1/productions/?page=2"
    last = int(links[12][1])
    answer = client.get(f"/api/v1/productions/?format=json&page={last}").json
    assert answer["next"] is None and answer["previous"] and answer["count"] == count
    assert client.get(f"/api/v1/productions/?format=json&page={last + 1}").status_code == 404
    # The answer's addresses follow the paginator, each a link to itself.
    assert ("http://localhost/api/v1/productions/?page=2",) * 2 in links[14:]
    middle = Page(html(client, "/api/v1/productions/?page=5").get_data(as_text=True)).links
    shown = [text for _, text in middle[7:16]]
    assert shown == ["«", "1", "…", "4", "5", "6", "…", str(final), "»"]


def test_the_answer_is_shown_indented_with_its_addresses_as_links(make_app, loaded_database):
    """The page shows the JSON answer's text indented as orjson indents it (a listing's
    records a few at a time, over more than one piece here), each address a link."""
    client = make_app(loaded_database, page_sizes={"productions": 100}).test_client()
    productions = client.get("/api/v1/productions/").json["results"]
    assert len(productions) > 25
    credited = next(each for each in productions if each["author_nicks"])
    releaser = credited["author_nicks"][0]["releaser"]["id"]
    for path in (
        "/api/v1/productions/",
        "/api/v1/productions/?fields=id,credits",
        f"/api/v1/releasers/{releaser}/",
        f"/api/v1/releasers/{releaser}/productions/",
        "/api/v1/",
    ):
        text = html(client, path).get_data(as_text=True)
        shown = text[text.index("\n\n</span>") + len("\n\n</span>") : text.rindex("</pre>")]
        links = re.findall(r'<a href="([^"]*)">([^<]*)</a>', shown)
        assert all(href == address for href, address in links)
        assert links or "fields=" in path
        plain = unescape(re.sub(r"<a href=[^>]*>|</a>", "", shown))
        assert plain == orjson.dumps(client.get(path).json, option=orjson.OPT_INDENT_2).decode()


def test_a_listings_text_made_in_pieces_is_the_text_made_whole():
    """A listing's text is made ``PIECE`` bytes of records at a time, cut where the next
    record starts. Records that nest records of their own resource (where a cut may
    fall inside a record: the text is then made whole), a record longer than a piece,
    escaped characters and a bare array come out as the whole answer's text would."""
    from demoserv.web import browsable

    def record(number, nested=0, long=0):
        return {
            "url": f"http://h/api/v1/productions/{number}/",
            "title": '<a href="x">&amp;</a> "quoted"' * long,
            "platforms": [{"url": f"http://h/api/v1/platforms/{n}/", "id": n} for n in range(3)],
            "related": [{"url": f"http://h/api/v1/productions/{n}/"} for n in range(nested)],
        }

    plain = [record(n) for n in range(300)]
    plain[40] = record(40, long=browsable.PIECE // 20)
    nesting = [record(n, nested=browsable.PIECE // 20) for n in range(30)]  # over a piece
    envelope = {"count": 300, "next": "http://h/api/v1/productions/?page=2", "previous": None}
    for answer in (
        {**envelope, "results": plain},
        plain,
        plain[:3],
        {**envelope, "results": nesting},
    ):
        body = orjson.dumps(answer)
        whole = browsable._linked(orjson.dumps(answer, option=orjson.OPT_INDENT_2))
        assert b"".join(browsable._text(body)) == whole
    assert len(list(browsable._indented(orjson.dumps(plain)))) > 3
    with pytest.raises(orjson.JSONDecodeError):  # a cut inside a record
        list(browsable._indented(orjson.dumps({**envelope, "results": nesting})))


def test_page_numbers_as_the_upstreams_paginator():
    assert page_numbers(1, 1) == [1]
    assert page_numbers(3, 5) == [1, 2, 3, 4, 5]
    assert page_numbers(1, 3738) == [1, 2, 3, None, 3738]
    assert page_numbers(4, 9) == [1, 2, 3, 4, 5, None, 9]
    assert page_numbers(5, 9) == [1, None, 4, 5, 6, None, 9]
    assert page_numbers(6, 9) == [1, None, 5, 6, 7, 8, 9]
    assert page_numbers(14, 16) == [1, None, 13, 14, 15, 16]
    assert page_numbers(3738, 3738) == [1, None, 3736, 3737, 3738]


def test_a_detail_and_a_sub_listing_have_their_breadcrumbs_and_no_paginator(client):
    record = client.get("/api/v1/releasers/").json["results"][0]["id"]
    for path, crumbs in [
        (f"/api/v1/releasers/{record}/", ["Api Root", "Releaser List", "Releaser Instance"]),
        (
            f"/api/v1/releasers/{record}/productions/",
            ["Api Root", "Releaser List", "Releaser Instance", "Releaser Productions List"],
        ),
    ]:
        page = Page(html(client, path).get_data(as_text=True))
        assert [text for _, text in page.links[1 : len(crumbs) + 1]] == crumbs
        assert "«" not in [text for _, text in page.links] and not page.fields


@pytest.mark.parametrize("path", LISTS)
def test_the_form_untouched_or_filled_asks_a_valid_listing(client, path):
    """A plain GET form of the listing's parameters, each labelled: sent as a browser
    sends it (every field, empty ones too) it asks for the same listing."""
    text = html(client, path).get_data(as_text=True)
    page = Page(text)
    assert page.fields and set(page.fields) == page.labels and page.scripts == 0
    assert not {"page", "format", "callback", "fields"} & set(page.fields)
    sent = html(client, f"{path}?{urlencode(page.fields)}")
    assert sent.status_code == 200, sent.data[-400:]
    plain, filled = client.get(path).json, client.get(f"{path}?{urlencode(page.fields)}").json
    assert _ids(filled) == _ids(plain)
    choice = next(name for name in page.fields if name != "ordering")
    filtered = html(client, f"{path}?{urlencode({**page.fields, choice: 'x'})}")
    assert filtered.status_code in (200, 400) and 'value="x"' in filtered.get_data(as_text=True)


def _ids(answer):
    return answer["count"], [record["id"] for record in answer["results"]]


@pytest.mark.parametrize(
    "path, status, detail",
    [
        ("/api/v1/nothing/", 404, "Not found."),
        ("/api/v1/productions/999999/", 404, "Not found."),
        ("/api/v1/productions/?page=999", 404, "Invalid page."),
        ("/api/v1/productions/?ordering=nope", 400, 'Invalid ordering key \\"nope\\"'),
        ("/api/v1/changes/?since=" + "0" * 32, 410, "fetch the lists again"),
    ],
)
def test_errors_are_pages_with_their_status(client, path, status, detail):
    page = html(client, path)
    assert page.status_code == status
    text = page.get_data(as_text=True)
    assert f"<b>HTTP {status} " in text and detail in text
    assert '<b>Content-Type:</b> <span class="lit">application/json</span>' in text


def test_every_value_is_escaped(make_app, tmp_path):
    records = catalogue_factory.build(seed=5)
    title = '<script>alert(\'x\')</script> & "quoted" "http://x.example/"onclick="y'
    records["productions"][0]["title"] = title
    production = records["productions"][0]["id"]
    load_catalogue(catalogue_factory.write(records, tmp_path / "c"), tmp_path / "db.sqlite3")
    client = make_app(tmp_path / "db.sqlite3").test_client()
    detail = html(client, f"/api/v1/productions/{production}/").get_data(as_text=True)
    assert "<script" not in detail and not re.search(r"<[^>]*onclick", detail)
    assert '"title": "&lt;script&gt;alert(\'x\')&lt;/script&gt; &amp; \\"quoted\\" ' in detail
    injected = '"><i>in</i><script>'
    for path in (
        f"/api/v1/productions/?search={injected}&title={injected}&ordering={injected}",
        f"/api/v1/{injected}/?x={injected}",
    ):
        text = html(client, path).get_data(as_text=True)
        assert "<script" not in text and "<i>in" not in text, path
        assert "&lt;i&gt;in" in text or "%3Ci%3Ein" in text, path
