"""The docs page renders the OpenAPI document in a real browser: headless Chromium
against the API served by waitress. Run with ``pytest -m browser`` (README)."""

import subprocess

import pytest

from demoserv.loader.sources import load_catalogue

from . import chromium
from .openapi_check import SPEC
from .test_server import Server

pytestmark = pytest.mark.browser


def test_docs_page_renders_in_chromium(tmp_path, catalogue_dir):
    load_catalogue(catalogue_dir, tmp_path / "db.sqlite3")
    with Server(tmp_path / "db.sqlite3") as server:
        page = subprocess.run(
            [
                chromium.executable(),
                *chromium.FLAGS,
                f"--user-data-dir={tmp_path / 'profile'}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                f"{server.url}/api/v1/docs/",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout
    # The status line is removed once the document has been drawn (and kept, with the
    # error, if it could not be loaded).
    assert 'id="status"' not in page, page[:2000]
    for path in SPEC["paths"]:
        if "get" in SPEC["paths"][path]:
            assert f'data-path="{path}"' in page, path
    for name in SPEC["components"]["schemas"]:
        assert f'id="schema-{name}"' in page, name
    # The page's link to the /api/adhoc/ paths leads to their heading, drawn before them.
    assert 'href="#adhoc"' in page
    heading = page.index('<h3 id="adhoc">')
    assert heading < page.index('data-path="/api/adhoc/') and '"/api/adhoc/' not in page[:heading]
