"""Fixtures: one small deterministic catalogue, loaded once, and an app serving it."""

import contextlib
import os
import socket

import pytest

from demoserv import create_app
from demoserv.loader.sources import load_catalogue
from demoserv.store.snapshot import Address
from demoserv.web.kept_answers import KeptAnswers

from . import catalogue_factory
from .answers_twice import AnsweredTwice
from .openapi_check import ValidatingClient

pytest_plugins = ["pytester"]  # tests/test_pytest_plugin.py runs client projects' tests

SITE_URL = "https://site.example"
# The test catalogue's random seed; any seed gives a catalogue the suite must pass on.
SEED = int(os.environ.get("DEMOSERV_TEST_SEED", "1"))
# The page sizes in-process apps serve in the suite: small, so that a small catalogue
# spans pages, and each its own, so that a mix-up of resources shows. An app made with
# ``page_sizes=None`` serves the contract's sizes, as the resources declare them.
SMALL_PAGE_SIZES = {
    "party_series": 7,
    "bbses": 8,
    "parties": 9,
    "productions": 10,
    "releasers": 11,
    "production_types": 5,
}


@pytest.fixture(scope="session")
def catalogue():
    """The test catalogue as {resource: [file record, ...]}."""
    return catalogue_factory.build(seed=SEED)


@pytest.fixture(scope="session")
def catalogue_dir(catalogue, tmp_path_factory):
    return catalogue_factory.write(catalogue, tmp_path_factory.mktemp("catalogue"))


# The address the test client's requests come to (its Host is localhost), as the suite's
# apps serve it: the snapshot of the suite's database is written for it.
TEST_CLIENT_ADDRESS = Address("http://localhost/api/v1/", SITE_URL, "service_url")


@pytest.fixture(scope="session")
def loaded_database(catalogue_dir, tmp_path_factory):
    """A database file built from the test catalogue, its snapshot written for the
    test client; tests must not replace it."""
    path = tmp_path_factory.mktemp("db") / "catalogue.sqlite3"
    load_catalogue(catalogue_dir, path, snapshot_at=[TEST_CLIENT_ADDRESS])
    return path


def suite_app(database, kept_answers_class=AnsweredTwice, page_sizes=SMALL_PAGE_SIZES, **config):
    """An app serving ``database`` as the suite's apps do: no seed built, a test client
    that checks every answer against the OpenAPI document, and each request answered
    cold and, when its answer is kept, warm as well, the two compared
    (tests/answers_twice.py)."""
    app = create_app(
        {"TESTING": True, "DATABASE": str(database), "SEED_DIR": "", **config},
        kept_answers_class=kept_answers_class,
        page_sizes=page_sizes,
    )
    app.test_client_class = ValidatingClient
    return app


def module_client():
    """A ``client`` fixture for a module whose tests only read: one app for the whole
    module (made with ``suite_app``, as ``app`` is), where each test would make its own.
    A module takes it as ``client = module_client()``."""

    @pytest.fixture(scope="module")
    def client(loaded_database):
        return suite_app(loaded_database, SITE_URL=SITE_URL).test_client()

    return client


@pytest.fixture
def make_app():
    def make(database, **options):
        return suite_app(database, **{"SITE_URL": SITE_URL, **options})

    return make


@pytest.fixture
def app(make_app, loaded_database):
    return make_app(loaded_database)


@pytest.fixture
def kept_app(make_app, loaded_database):
    """An app that keeps answers as served, across requests (not answered twice)."""
    return make_app(loaded_database, kept_answers_class=KeptAnswers)


@contextlib.contextmanager
def refusing_url(path="/"):
    """``http://127.0.0.1:PORT<path>`` at a port bound and held, so that no other process
    (another test worker) takes it, but not listening: connections are refused."""
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        yield f"http://127.0.0.1:{bound.getsockname()[1]}{path}"


def walk(client, url, limit=100):
    """Every page of a listing from ``url``, following ``next`` (at most ``limit`` pages)."""
    pages = []
    while url is not None:
        assert len(pages) < limit, "next links do not end"
        response = client.get(url)
        assert response.status_code == 200, (url, response.json)
        pages.append(response.json)
        url = response.json["next"]
    return pages
