"""One module per resource, each exposing its blueprint as ``bp``."""
from . import bbses, parties, party_series, platforms, production_types, productions, releasers, root

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
