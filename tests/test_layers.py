"""The packages' layers: each module of ``demoserv`` imports only modules of its own
package or of the layers below it (``LAYERS``, as the package docstrings say), the
modules import one another without a circle, and, in a fresh interpreter, the loader's
entry points import nothing of Flask or werkzeug and the serving modules none of the
loader's building code; and a server process and its finder, having served a listing,
import only what serving needs."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "demoserv"

# From the bottom up: a module may import its own layer and those before it.
LAYERS = [
    ["version", "byte_cache"],
    ["store"],
    ["api"],
    ["resources"],
    ["loader"],
    ["settings"],
    ["listings"],
    ["web"],
    ["server"],
    ["cli"],
    ["pytest_plugin", "__main__", ""],  # "": the package's face, demoserv/__init__.py
]
LAYER = {part: number for number, parts in enumerate(LAYERS) for part in parts}


def modules():
    """{module name: the demoserv modules it imports, anywhere in it}."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        is_package = parts[-1] == "__init__"
        name = ".".join(parts[:-1] if is_package else parts)
        package = name if is_package else name.rpartition(".")[0]
        imported = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    base = node.module or ""
                if base.split(".")[0] != "demoserv":
                    continue
                for alias in node.names:  # a submodule, or a name of ``base``
                    whole = f"{base}.{alias.name}"
                    imported.add(whole if _exists(whole) else base)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names if a.name.split(".")[0] == "demoserv")
        found[name] = imported - {name}
    return found


def _exists(name):
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").exists() or (path / "__init__.py").exists()


def layer(module):
    part = module.split(".")[1] if "." in module else ""
    return LAYER[part]


def test_the_architectures_drawing_is_the_order_held_here():
    """docs/architecture.md draws the layers top down, one line each (the face's left
    out): the drawing says what this test holds."""
    docs = (PACKAGE.parent / "docs" / "architecture.md").read_text()
    drawing = docs.split("### Layers\n\n```text\n", 1)[1].split("```", 1)[0]
    drawn = [re.split(r"\s{2,}", line)[0].split(", ") for line in drawing.splitlines()]
    assert drawn[::-1] == LAYERS[:-1]


def test_every_module_has_a_layer():
    assert {module.split(".")[1] if "." in module else "" for module in modules()} <= set(LAYER)


def test_each_module_imports_only_its_layer_and_those_below():
    upward = [
        (module, imported)
        for module, imports in modules().items()
        for imported in sorted(imports)
        if layer(imported) > layer(module)
    ]
    assert upward == []


def test_no_import_circle():
    graph = modules()
    circles, done = [], set()

    def visit(module, path):
        if module in path:
            circles.append(path[path.index(module) :])
            return
        if module in done:
            return
        for imported in sorted(graph.get(module, ())):
            visit(imported, [*path, module])
        done.add(module)

    for module in graph:
        visit(module, [])
    assert circles == []


def test_the_check_sees_imports_where_they_are():
    """Imports inside functions count (the face's), and relative ones resolve."""
    found = modules()
    assert {"demoserv.web.factory", "demoserv.cli.commands"} <= found["demoserv"]
    assert "demoserv.store.tables" in found["demoserv.loader.build"]
    assert layer("demoserv.loader.build") < layer("demoserv.web.factory")


# What a load, an export or a check of a built file starts from.
LOAD_ENTRY_POINTS = [
    "demoserv.loader.sources",
    "demoserv.loader.build",
    "demoserv.loader.export",
    "demoserv.loader.upstream",
    "demoserv.loader.prebuilt",
    "demoserv.loader.rows",
    "demoserv.loader.scratch",
    "demoserv.loader.resources",
    "demoserv.loader.files",
    "demoserv.loader.pgdump",
    "demoserv.loader.fetch",
    "demoserv.loader.install",
    "demoserv.loader.adhoc_answers",
    "demoserv.loader.history",
    "demoserv.loader.feed",
    # The listing arrays are built at load: their builder was the layers' last exception.
    "demoserv.store.listing_arrays",
]
SERVING_MODULES = [
    "demoserv.resources",
    "demoserv.web.views.resources",
    "demoserv.web.views.root",
    "demoserv.web.db",
    "demoserv.web.views.openapi",
    "demoserv.web.views.status",
    "demoserv.web.pipeline",
    "demoserv.api.filters",
    "demoserv.api.ordering",
    "demoserv.listings.columns",
    "demoserv.listings.kept",
    "demoserv.listings.guard",
    "demoserv.listings.finder",
    "demoserv.web.kept_answers",
    "demoserv.web.views.adhoc",
    "demoserv.web.views.changes",
]
BUILDING = [
    "demoserv.loader.build",
    "demoserv.loader.rows",
    "demoserv.loader.upstream",
    "demoserv.loader.scratch",
    "demoserv.loader.sources",
    "demoserv.loader.resources",
    "demoserv.loader.resources.storage",
    "demoserv.loader.files",
    "demoserv.loader.pgdump",
    "demoserv.loader.export",
]


# Run in a fresh interpreter: the libraries the checked modules use and the check does not
# look for are imported once, then each module is imported in a forked child of its own,
# which prints what it left behind.
PROBE = """
import json, os, sys
os.environ["OPENBLAS_NUM_THREADS"] = "1"  # no BLAS threads to lose in a fork
for library in json.loads(sys.argv[2]):
    __import__(library)
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
BOTH_USE = ["marshmallow", "numpy", "orjson", "sqlalchemy"]


def probe(checks, preload=BOTH_USE):
    """{module: the modules of its prefixes that importing it leaves in ``sys.modules``}
    for each (module, prefixes) of ``checks``, each module imported in a process of its
    own forked from one that imported the libraries ``preload`` (none of the prefixes)."""
    assert not {name for _, prefixes in checks for name in prefixes} & set(preload)
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(checks), json.dumps(preload)],
        capture_output=True,
        text=True,
        check=True,
    )
    found = dict(json.loads(line) for line in result.stdout.splitlines())
    assert sorted(found) == sorted(module for module, _ in checks)
    return found


@pytest.fixture(scope="module")
def imported_after():
    return {
        **probe([(module, ["flask", "werkzeug"]) for module in LOAD_ENTRY_POINTS]),
        **probe(
            [(module, BUILDING) for module in SERVING_MODULES],
            preload=[*BOTH_USE, "flask", "jinja2"],  # the web side's, none of the loader
        ),
    }


def test_the_probe_sees_an_import():
    """The probe reports a prefix that the module does import (it would pass any check
    if it saw nothing)."""
    assert "flask" in probe([("demoserv.web.factory", ["flask"])])["demoserv.web.factory"]


@pytest.mark.parametrize("module", LOAD_ENTRY_POINTS)
def test_the_loader_imports_nothing_of_flask(imported_after, module):
    assert imported_after[module] == []


@pytest.mark.parametrize("module", SERVING_MODULES)
def test_the_serving_modules_import_no_building_code(imported_after, module):
    assert imported_after[module] == []


def test_the_server_and_the_launcher_import_neither_the_command_nor_the_app():
    """server/serving.py serves the app it is given: it imports neither the command nor the
    factory (no import circle with cli/commands.py); the launcher imports nothing of the app."""
    command_and_app = ["demoserv.cli.commands", "demoserv.web.factory"]
    found = probe(
        [
            ("demoserv.server.serving", command_and_app),
            ("demoserv.server.launcher", [*command_and_app, "flask", "waitress"]),
        ]
    )
    assert found == {"demoserv.server.serving": [], "demoserv.server.launcher": []}


# What a server process and its finder must not import: the download's HTTP client (with
# ssl's certificates and encodings), the loader's building code, and, in the server, numpy
# (the finder's alone) and, in the finder, the web app. Each weighs on every process.
DOWNLOAD = ["requests", "urllib3", "charset_normalizer", "idna", "certifi"]
SERVER_LEAVES_OUT = [
    *DOWNLOAD,
    *BUILDING,
    "numpy",
    "demoserv.listings.columns",
    "demoserv.store.listing_arrays",
]
FINDER_LEAVES_OUT = [*DOWNLOAD, "flask", "werkzeug", "demoserv.web", "demoserv.loader"]

# The finder's loop on a thread of a forked child (a listing found, as in its own
# process), then a server process's app on the file, asked for a never-seen listing.
SERVING_PROCESSES = """
import json, os, socket, sys, threading
from multiprocessing.connection import Connection

path, listing, leaves_out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])

def left(names):
    return sorted(m for m in sys.modules if any(m == n or m.startswith(n + ".") for n in names))

child = os.fork()
if child == 0:
    from demoserv.api import ordering
    from demoserv.listings import finder
    from demoserv.resources import BY_NAME
    from demoserv.store.reading import named_file

    productions = BY_NAME["productions"]
    released = next(item for item in productions.filters if item.parameter == "released_since")
    conditions = (("released_since", released.normalise(["1994-02-03"])),)
    ours, theirs = (Connection(end.detach()) for end in socket.socketpair())
    threading.Thread(target=finder.serve, args=(theirs,), daemon=True).start()
    assert ours.recv() == finder.READY
    order = ordering.parse(productions, None).cache_key
    ours.send((path, named_file(path), "productions", order, conditions))
    assert ours.recv()[0] == "ids"
    print(json.dumps(["finder", left(leaves_out["finder"])]), flush=True)
    os._exit(0)
assert os.waitpid(child, 0)[1] == 0

from demoserv import serving_app

app = serving_app(database=path)
assert app.test_client().get(listing).status_code == 200
print(json.dumps(["server", left(leaves_out["server"])]), flush=True)
"""


def test_a_server_process_and_its_finder_import_only_what_serving_needs(loaded_database):
    """A server process (``serving_app`` on a loaded file, then a never-seen listing,
    found by its finder) imports neither the download's client nor the building code
    nor numpy; the finder's loop, having found a listing, none of the first two nor
    Flask: each gunicorn worker and each finder carries only what serving needs."""
    leaves_out = {"server": SERVER_LEAVES_OUT, "finder": FINDER_LEAVES_OUT}
    listing = "/api/v1/productions/?released_since=1994-02-03"
    result = subprocess.run(
        [sys.executable, "-c", SERVING_PROCESSES, str(loaded_database), listing]
        + [json.dumps(leaves_out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    found = dict(json.loads(line) for line in result.stdout.splitlines())
    assert found == {"finder": [], "server": []}
