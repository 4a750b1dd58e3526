"""Serving and loading meet only in the shared layer: in a fresh interpreter, the
loader's entry points import nothing of Flask or werkzeug, and the serving modules
import none of the loader's building code."""

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


def imported_after(module, prefixes):
    """The modules starting with one of ``prefixes`` that importing ``module`` in a
    fresh interpreter leaves in ``sys.modules``."""
    code = (
        f"import sys, {module}\n"
        f"prefixes = {tuple(prefixes)!r}\n"
        "print(' '.join(sorted(m for m in sys.modules if m.split('.')[0] in prefixes "
        "or m in prefixes)))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    return result.stdout.split()


@pytest.mark.parametrize("module", LOAD_ENTRY_POINTS)
def test_the_loader_imports_nothing_of_flask(module):
    assert imported_after(module, ["flask", "werkzeug"]) == []


@pytest.mark.parametrize("module", SERVING_MODULES)
def test_the_serving_modules_import_no_building_code(module):
    assert imported_after(module, BUILDING) == []
