"""Platforms: computer and console systems and software environments, one page."""

from .. import tables
from .common import PlatformSchema, Resource


class Platforms(Resource):
    name = "platforms"
    table = tables.platforms
    schema = PlatformSchema()
    title = "Platform"
    description = "Computer and console systems and software environments."
    paged = False


resource = Platforms()
bp = resource.blueprint()
