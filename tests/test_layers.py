"""Serving and loading meet only in the shared layer: in a fresh interpreter, the
loader's entry points import nothing of Flask or werkzeug, and the serving modules
import none of the loader's building code."""

import json
import subprocess
import sys

import pytest

# What a load, an export or a check of a built file starts from.
LOAD_ENTRY_POINTS = [
    "demoserv.catalogue.sources",
    "demoserv.catalogue.build",
    "demoserv.catalogue.export",
    "demoserv.catalogue.upstream",
    "demoserv.catalogue.prebuilt",
    "demoserv.catalogue.rows",
    "demoserv.catalogue.scratch",
    "demoserv.catalogue.resources",
    "demoserv.catalogue.files",
    "demoserv.catalogue.pgdump",
    "demoserv.catalogue.fetch",
    "demoserv.catalogue.install",
    "demoserv.catalogue.adhoc",
    "demoserv.catalogue.history",
    "demoserv.catalogue.feed",
    # The listing arrays are built at load: their builder was the layers' last exception.
    "demoserv.listing_arrays",
]
SERVING_MODULES = [
    "demoserv.resources",
    "demoserv.resources.answers",
    "demoserv.resources.root",
    "demoserv.db",
    "demoserv.openapi",
    "demoserv.status",
    "demoserv.pipeline",
    "demoserv.filters",
    "demoserv.ordering",
    "demoserv.listing_index",
    "demoserv.listing_cache",
    "demoserv.listing_guard",
    "demoserv.answer_cache",
    "demoserv.adhoc",
    "demoserv.changes",
]
BUILDING = [
    "demoserv.catalogue.build",
    "demoserv.catalogue.rows",
    "demoserv.catalogue.upstream",
    "demoserv.catalogue.scratch",
    "demoserv.catalogue.sources",
    "demoserv.catalogue.resources",
    "demoserv.catalogue.resources.storage",
    "demoserv.catalogue.files",
    "demoserv.catalogue.pgdump",
    "demoserv.catalogue.export",
]


# Run in a fresh interpreter: the libraries both layers use are imported once, then each
# module is imported in a forked child of its own, which prints what it left behind.
PROBE = """
import json, os, sys
os.environ["OPENBLAS_NUM_THREADS"] = "1"  # no BLAS threads to lose in a fork
import marshmallow, numpy, orjson, sqlalchemy
checks = json.loads(sys.argv[1])
for module, prefixes in checks:
    pid = os.fork()
    if pid == 0:
        __import__(module)
        found = sorted(m for m in sys.modules if m.split(".")[0] in prefixes or m in prefixes)
        print(json.dumps([module, found]), flush=True)
        os._exit(0)
    assert os.waitpid(pid, 0)[1] == 0, module
"""
CHECKS = [(module, ["flask", "werkzeug"]) for module in LOAD_ENTRY_POINTS] + [
    (module, BUILDING) for module in SERVING_MODULES
]


def probe(checks):
    """{module: the modules of its prefixes that importing it leaves in ``sys.modules``}
    for each (module, prefixes) of ``checks``, each module imported in a fresh process."""
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(checks)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = dict(json.loads(line) for line in result.stdout.splitlines())
    assert sorted(found) == sorted(module for module, _ in checks)
    return found


@pytest.fixture(scope="module")
def imported_after():
    return probe(CHECKS)


def test_the_probe_sees_an_import():
    """The probe reports a prefix that the module does import (it would pass any check
    if it saw nothing)."""
    assert "flask" in probe([("demoserv.factory", ["flask"])])["demoserv.factory"]


@pytest.mark.parametrize("module", LOAD_ENTRY_POINTS)
def test_the_loader_imports_nothing_of_flask(imported_after, module):
    assert imported_after[module] == []


@pytest.mark.parametrize("module", SERVING_MODULES)
def test_the_serving_modules_import_no_building_code(imported_after, module):
    assert imported_after[module] == []


def test_the_server_and_the_launcher_import_neither_the_command_nor_the_app():
    """serving.py serves the app it is given: it imports neither the command nor the
    factory (no import circle with cli.py); the launcher imports nothing of the app."""
    command_and_app = ["demoserv.cli", "demoserv.factory"]
    found = probe(
        [
            ("demoserv.serving", command_and_app),
            ("demoserv.launcher", [*command_and_app, "flask", "waitress"]),
        ]
    )
    assert found == {"demoserv.serving": [], "demoserv.launcher": []}
