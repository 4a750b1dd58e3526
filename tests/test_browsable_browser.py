"""The browsable HTML pages in a real browser: headless Chromium, driven over the
DevTools protocol (tests/chromium.py), against the sample catalogue served by waitress.
Run with ``pytest -m browser`` (README). ``DEMOSERV_SCREENSHOT=PATH`` also writes the
screenshot of the productions list that docs/browsable.md shows."""

import json
import os
import re
import urllib.request

import pytest

from demoserv.loader.sources import load_catalogue

from .chromium import Browser
from .test_sample import ROOT
from .test_server import Server

pytestmark = pytest.mark.browser

LINKS_IN_ANSWER = ".response-info a"


def _json(url):
    with urllib.request.urlopen(url) as answer:
        return json.load(answer)


def _pick_production(server):
    """A production of the last page of productions that credits an author and has
    been at a party (chosen through the JSON API, as a person would by reading)."""
    for record in _json(f"{server.url}/api/v1/productions/?page=last")["results"]:
        detail = _json(record["url"])
        if detail["author_nicks"] and detail["release_parties"] + detail["competition_placings"]:
            return record["id"]
    raise AssertionError("no production with an author and a party on the last page")


def test_a_person_browses_the_api_in_chromium(tmp_path):
    load_catalogue(ROOT / "sample", tmp_path / "db.sqlite3")
    # The upstream's site, as a mirror links to it by default (and the docs' picture shows).
    served = Server(tmp_path / "db.sqlite3", DEMOSERV_SITE_URL="https://demozoo.org")
    with served as server, Browser(tmp_path / "profile") as browser:
        api = f"{server.url}/api/v1"
        production = _pick_production(server)
        browser.viewport(1000, 760)
        browser.open(f"{api}/")
        assert browser.run("document.title") == "Api Root – demoserv"
        browser.click(f'{LINKS_IN_ANSWER}[href="{api}/productions/"]')
        assert browser.location == f"{api}/productions/"
        assert browser.run("document.querySelector('h1').textContent") == "Production List"
        # The paginator: page 2, then the last page (the link before », as DRF draws it).
        browser.click('.pagination a[href$="?page=2"]')
        assert browser.location == f"{api}/productions/?page=2"
        screenshot = browser.screenshot()
        last = browser.run("[...document.querySelectorAll('.pagination a')].at(-2).textContent")
        browser.click(".pagination li:nth-last-child(2) a")
        assert browser.location == f"{api}/productions/?page={last}"
        browser.click(f'{LINKS_IN_ANSWER}[href="{api}/productions/{production}/"]')
        assert browser.run("document.querySelector('h1').textContent") == "Production Instance"
        browser.click(f'{LINKS_IN_ANSWER}[href*="/api/v1/releasers/"]')
        assert re.fullmatch(rf"{api}/releasers/\d+/", browser.location)
        assert browser.run("document.querySelector('h1').textContent") == "Releaser Instance"
        browser.open(f"{api}/productions/{production}/")
        browser.click(f'{LINKS_IN_ANSWER}[href*="/api/v1/parties/"]')
        assert re.fullmatch(rf"{api}/parties/\d+/", browser.location)
        assert browser.run("document.querySelector('h1').textContent") == "Party Instance"
        # A filter through the form: a plain GET form, sent as the browser sends it.
        browser.open(f"{api}/productions/")
        browser.run("document.querySelector('details.filters summary').click()")
        browser.run("document.querySelector('#field-search').value = 'reality'")
        browser.run("document.querySelector('#field-ordering').value = '-release_date_date'")
        browser.click("details.filters button[type=submit]")
        assert "search=reality" in browser.location
        assert "ordering=-release_date_date" in browser.location
        assert browser.run("document.querySelector('details.filters').open") is True
        shown = json.loads(
            browser.run("document.querySelector('.response-info').textContent").split("\n\n", 1)[1]
        )
        titles = [record["title"].lower() for record in shown["results"]]
        assert titles and all("reality" in title for title in titles)
        assert shown["count"] < _json(f"{api}/productions/")["count"]
        # Readable on a phone: nothing wider than its screen.
        browser.viewport(390, 844, scale=2, mobile=True)
        browser.open(f"{api}/productions/{production}/")
        assert browser.run(
            "document.documentElement.scrollWidth <= document.documentElement.clientWidth"
        )
        assert browser.run("document.scripts.length") == 0
        requested = browser.requested()
        assert requested and all(url.startswith(server.url + "/") for url in requested), [
            url for url in requested if not url.startswith(server.url + "/")
        ]
        assert browser.errors() == []
    (tmp_path / "productions.png").write_bytes(screenshot)
    if os.environ.get("DEMOSERV_SCREENSHOT"):
        with open(os.environ["DEMOSERV_SCREENSHOT"], "wb") as file:
            file.write(screenshot)
