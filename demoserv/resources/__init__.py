"""The registry of resources: their names, in the API root's order and in the loader's,
and one serving declaration per name (``resources/<name>.py``, plain data). Every list
of resources on the serving side (the API root, the blueprints, OPTIONS, the OpenAPI
document) is derived from ``RESOURCES``, and the load side's registry
(``loader/resources``) from ``LOAD_ORDER``. Imports nothing of Flask: the build reads
the declarations too."""

import copy
import importlib

# In the API root's order.
NAMES = [
    "party_series",
    "platforms",
    "bbses",
    "parties",
    "productions",
    "releasers",
    "production_types",
]
# The loader's order: what a record refers to is read before it, so that summaries can be
# checked. (The catalogue's version digests the records in this order.)
LOAD_ORDER = [
    "platforms",
    "production_types",
    "releasers",
    "party_series",
    "parties",
    "bbses",
    "productions",
]
RESOURCES = [importlib.import_module(f"{__name__}.{name}").resource for name in NAMES]
BY_NAME = {resource.name: resource for resource in RESOURCES}


def with_page_sizes(sizes):
    """``RESOURCES``, each one ``sizes`` names ({name: records a page}) a copy serving
    pages of that size: what an app made with ``page_sizes`` serves."""
    resized = []
    for resource in RESOURCES:
        if resource.name in sizes:
            resource = copy.copy(resource)
            resource.page_size = sizes[resource.name]
        resized.append(resource)
    return resized


assert list(BY_NAME) == NAMES, "each module declares the resource it is named after"
assert sorted(LOAD_ORDER) == sorted(NAMES), "every resource has its place in the load order"
