"""How production types are loaded: their catalogue record and their part of the
upstream import (each type's supertype from the type tree)."""

from ...resources.production_types import resource
from ...store import tables
from .. import records
from . import storage
from .loading import Loading


def _supertype_of(connection):
    """The upstream's supertype of a type, by the type tree's materialised paths: music
    or graphics under their roots, production elsewhere."""
    roots = {
        internal: path
        for path, internal in connection.execute(
            "SELECT path, internal_name FROM stage.productions_productiontype"
        )
        if internal in ("music", "graphics")
    }
    return lambda path: next(
        (name for name, root in roots.items() if path.startswith(root)), "production"
    )


class ProductionTypesLoading(Loading):
    resource = resource
    record_schema = records.ProductionTypeRecord()
    created_by_summaries = True  # a production's or competition's summary may create one
    upstream = storage.Upstream(
        tables={
            "productions_productiontype": {
                "id": "int",
                "path": "text",
                "name": "text",
                "internal_name": "text",
            }
        },
        required={"productions_productiontype": ("name", "path")},
        functions={"supertype_of": (1, _supertype_of)},
        fills=(
            storage.Fill(
                tables.production_types,
                {
                    "id": "id",
                    "name": "name",
                    "supertype": "supertype_of(path)",
                    "name_key": "name_key(name)",
                },
                "FROM stage.productions_productiontype",
            ),
        ),
    )


loading = ProductionTypesLoading()
