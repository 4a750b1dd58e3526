"""Production types: Demo, Intro, Tracked Music, Graphics, ... each with its supertype."""

from .. import tables
from .common import ProductionTypeSchema, Resource


class ProductionTypes(Resource):
    name = "production_types"
    table = tables.production_types
    schema = ProductionTypeSchema()
    title = "Production Type"
    description = "Kinds of production, each of supertype production, music or graphics."


resource = ProductionTypes()
bp = resource.blueprint()
