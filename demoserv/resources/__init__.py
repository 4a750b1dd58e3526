"""The registry of resources: one module per resource, each declaring it whole. Every
list of resources elsewhere (the API root, the blueprints, OPTIONS, the OpenAPI document,
the loader's order, the exporter, the schema version of built files) is derived from
``RESOURCES``."""

from . import (
    bbses,
    parties,
    party_series,
    platforms,
    production_types,
    productions,
    releasers,
    root,
)

# In the API root's order.
MODULES = [party_series, platforms, bbses, parties, productions, releasers, production_types]
RESOURCES = [module.resource for module in MODULES]
BY_NAME = {resource.name: resource for resource in RESOURCES}
BLUEPRINTS = [root.blueprint(list(BY_NAME)), *(module.bp for module in MODULES)]
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
assert sorted(LOAD_ORDER) == sorted(BY_NAME), "every resource has its place in the load order"
# The relations shown from both sides, each declared once, by the resource that stores it.
RELATIONS = [relation for name in LOAD_ORDER for relation in BY_NAME[name].relations]
