"""The load side's registry: for each name of the resources' registry, its module in
this package, beside its serving declaration. The loader, the build, the exporter and
the upstream import read every resource from here, in the registry's ``LOAD_ORDER``."""

import importlib

from ...resources import LOAD_ORDER

LOADING = {name: importlib.import_module(f"{__name__}.{name}").loading for name in LOAD_ORDER}
# The resources the upstream's export has: those whose load module has its part of the
# import (``upstream``), in load order.
FROM_UPSTREAM = [name for name in LOAD_ORDER if LOADING[name].upstream is not None]
# The relations shown from both sides, each declared once, by the resource that stores it.
RELATIONS = [relation for name in LOAD_ORDER for relation in LOADING[name].relations]
