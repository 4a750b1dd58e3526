"""Production types: Demo, Intro, Tracked Music, Graphics, ... each with its supertype."""

from .. import filters, records, tables
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
    record_schema = records.ProductionTypeRecord()
    summarised = True  # a production's or competition's summary may create one


resource = ProductionTypes()


def production_type_list():
    return resource.answer_list()


def production_type_detail(record_id):
    return resource.answer_detail(record_id)


bp = resource.blueprint(production_type_list, production_type_detail)
