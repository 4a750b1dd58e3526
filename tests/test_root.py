"""The API root and the site root lead to what the service serves beside the resources:
the docs page, the OpenAPI document, the status, the changes feed and the /api/adhoc/
paths, by Link headers (RFC 8288) and the site root's index, the API root's body as the
contract fixes it; and the docs page links them too."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from demoserv.resources import NAMES
from demoserv.web.views import adhoc

from .conftest import suite_app

LINK = re.compile(r'<([^>]*)>((?:\s*;\s*[a-z]+="[^"]*")*)')
PARAMETER = re.compile(r'([a-z]+)="([^"]*)"')


def links(header):
    """{relation type: [(target, {parameter: value})]} of a Link header."""
    found = {}
    for target, parameters in LINK.findall(header):
        parameters = dict(PARAMETER.findall(parameters))
        found.setdefault(parameters["rel"], []).append((target, parameters))
    return found


def followed(client, target):
    """The answer at ``target`` (a path, or an address on the test client's host)."""
    parts = urlsplit(target)
    assert parts.netloc in ("", "localhost"), target
    return client.get(parts.path + (f"?{parts.query}" if parts.query else ""))


@pytest.mark.parametrize("path", ["/api/v1/", "/api/v1/.json", "/"])
def test_both_roots_link_the_docs_the_document_the_status_and_the_changes(client, path):
    answer = client.get(path)
    found = links(answer.headers["Link"])
    assert {target for target, _ in found["service-doc"]} == {"/api/v1/docs/"}
    assert {target for target, _ in found["service-desc"]} == {"/api/v1/openapi.json"}
    assert {target for target, _ in found["status"]} == {"/api/v1/status/"}
    related = {parameters["title"]: target for target, parameters in found["related"]}
    assert related == {
        "the changes feed": "/api/v1/changes/",
        "the snapshot: every record in one download": "/api/v1/snapshot/",
        "the upstream's /api/adhoc/ paths": "/api/v1/docs/#adhoc",
    }
    kinds = {
        "/api/v1/docs/": "text/html",
        "/api/v1/openapi.json": "application/json",
        "/api/v1/status/": "application/json",
        "/api/v1/changes/": "application/json",
        "/api/v1/snapshot/": "application/json",
    }
    for target, kind in kinds.items():
        linked = client.get(target)
        assert linked.status_code == 200 and linked.mimetype == kind, target


def test_the_api_roots_body_is_the_contracts(client):
    """The links are headers: the root's body is still each resource's listing, only."""
    answer = client.get("/api/v1/")
    assert answer.status_code == 200
    assert list(answer.json) == list(NAMES)
    assert "Link" in client.head("/api/v1/").headers
    assert "Link" in client.get("/api/v1/?format=jsonp").headers


def test_the_site_root_redirects_with_an_index(client):
    answer = client.get("/")
    assert answer.status_code == 302 and answer.headers["Location"] == "/api/v1/"
    assert answer.mimetype == "application/json"
    index = answer.json
    assert index == {
        "detail": "Moved to /api/v1/.",
        "api": "http://localhost/api/v1/",
        "docs": "http://localhost/api/v1/docs/",
        "openapi": "http://localhost/api/v1/openapi.json",
        "status": "http://localhost/api/v1/status/",
        "changes": "http://localhost/api/v1/changes/",
        "snapshot": "http://localhost/api/v1/snapshot/",
        "adhoc": [f"http://localhost/api/adhoc/{path}" for path in adhoc.PATHS],
    }
    for name, address in index.items():
        for each in [address] if isinstance(address, str) else address:
            if name != "detail":
                assert followed(client, each).status_code == 200, each
    # As sent: the index's addresses carry the Host the client used.
    elsewhere = client.get("/", headers={"Host": "mirror.example:8443"}).json
    assert elsewhere["docs"] == "http://mirror.example:8443/api/v1/docs/"


class Anchors(HTMLParser):
    def __init__(self):
        super().__init__()
        self.in_nav, self.hrefs = False, []

    def handle_starttag(self, tag, attributes):
        if tag == "nav":
            self.in_nav = True
        elif tag == "a" and self.in_nav:
            self.hrefs.append(dict(attributes)["href"])

    def handle_endtag(self, tag):
        if tag == "nav":
            self.in_nav = False


def test_the_docs_page_links_the_roots_the_document_the_status_and_the_changes(client):
    page = client.get("/api/v1/docs/")
    anchors = Anchors()
    anchors.feed(page.get_data(as_text=True))
    targets = [urljoin("/api/v1/docs/", href) for href in anchors.hrefs]
    assert targets == [
        "/api/v1/",
        "/api/v1/openapi.json",
        "/api/v1/status/",
        "/api/v1/changes/",
        "/api/v1/snapshot/",
        "/api/v1/docs/#adhoc",
    ]
    for target in targets[:-1]:
        assert client.get(target).status_code == 200, target
    # The anchor is the heading the page draws before the first /api/adhoc/ path
    # (tests/test_docs_browser.py sees it drawn).
    assert 'element("h3", { id: "adhoc" }' in page.get_data(as_text=True)


def test_the_docs_show_the_link_header_and_the_index_as_served(client):
    """docs/api.md, "Finding what is served": its Link header is the one served, and its
    index is the one served on its host (the /api/adhoc/ list shortened)."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "api.md").read_text()
    section = text.split("### Finding what is served", 1)[1]
    (header,) = re.findall(r"^Link: (.*)$", section, re.MULTILINE)
    assert header == client.get("/api/v1/").headers["Link"]
    shown = json.loads(re.search(r"```json\n(.*?)\n```", section, re.DOTALL)[1])
    served = client.get("/", headers={"Host": "127.0.0.1:8080"}).json
    assert shown["adhoc"] == [served["adhoc"][0], "..."]
    assert {**shown, "adhoc": served["adhoc"]} == served


def test_behind_a_proxy_the_links_carry_its_prefix(loaded_database):
    proxied = suite_app(loaded_database, TRUSTED_PROXIES=1).test_client()
    header = proxied.get("/api/v1/", headers={"X-Forwarded-Prefix": "/mirror"}).headers["Link"]
    targets = [target for each in links(header).values() for target, _ in each]
    assert len(targets) == 6 and all(target.startswith("/mirror/api/v1/") for target in targets)
    # Each address its own answer: the same path without the prefix keeps its own links.
    assert links(proxied.get("/api/v1/").headers["Link"])["status"][0][0] == "/api/v1/status/"
