"""Production types: Demo, Intro, Tracked Music, Graphics, ... each with its supertype."""

from ..api import filters
from ..store import tables
from .declaration import Resource
from .summaries import ProductionTypeSchema


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


resource = ProductionTypes()
