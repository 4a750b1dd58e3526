"""The load side's registry: for each name of the resources' registry (``NAMES``), its
module in this package, beside its serving declaration. The loader, the build, the
exporter and the upstream import read every resource from here, in ``LOAD_ORDER``."""

import importlib

from ...resources import NAMES

# Load order: what a record refers to is read before it, so that summaries can be checked.
LOAD_ORDER = [
    "platforms",
    "production_types",
    "releasers",
    "party_series",
    "parties",
    "bbses",
    "productions",
]
assert sorted(LOAD_ORDER) == sorted(NAMES), "every resource has its place in the load order"
LOADING = {name: importlib.import_module(f"{__name__}.{name}").loading for name in LOAD_ORDER}
# The relations shown from both sides, each declared once, by the resource that stores it.
RELATIONS = [relation for name in LOAD_ORDER for relation in LOADING[name].relations]
