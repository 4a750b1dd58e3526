"""Platforms: computer and console systems and software environments, one page."""

from ..api import filters
from ..store import tables
from .declaration import Resource
from .summaries import PlatformSchema


class Platforms(Resource):
    name = "platforms"
    title = "Platform"
    description = "Computer and console systems and software environments."
    table = tables.platforms
    filters = (
        filters.NameEquals("name", "Only platforms with this name (exact, case-insensitive)."),
        filters.Search("search", filters.search_help("platforms", "name")),
    )
    schema = PlatformSchema()
    page_size = None


resource = Platforms()
