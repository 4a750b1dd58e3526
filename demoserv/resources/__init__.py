"""One module per resource, each exposing its blueprint as ``bp``."""

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

RESOURCES = [
    party_series.resource,
    platforms.resource,
    bbses.resource,
    parties.resource,
    productions.resource,
    releasers.resource,
    production_types.resource,
]
BLUEPRINTS = [
    root.bp,
    party_series.bp,
    platforms.bp,
    bbses.bp,
    parties.bp,
    productions.bp,
    releasers.bp,
    production_types.bp,
]
