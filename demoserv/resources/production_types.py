"""Production types: Demo, Intro, Tracked Music, Graphics, ... each with its supertype."""

from .. import filters, records, tables
from . import storage
from .declaration import Resource
from .summaries import ProductionTypeSchema


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


class ProductionTypes(Resource):
    name = "production_types"
    title = "Production Type"
    description = "Kinds of production, each of supertype production, music or graphics."
    table = tables.production_types
    filters = (
        filters.NameEquals(
            "name", "Only production types with this name (exact, case-insensitive)."
        ),
    )
    schema = ProductionTypeSchema()
    record_schema = records.ProductionTypeRecord()
    summarised = True  # a production's or competition's summary may create one
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


resource = ProductionTypes()


def production_type_list():
    return resource.answer_list()


def production_type_detail(record_id):
    return resource.answer_detail(record_id)


bp = resource.blueprint(production_type_list, production_type_detail)
