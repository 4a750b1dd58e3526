"""Platforms: computer and console systems and software environments, one page."""

from .. import filters, records, tables
from . import storage
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
    record_schema = records.PlatformRecord()
    summarised = True  # a production's or competition's summary may create one
    upstream = storage.Upstream(
        tables={"platforms_platform": {"id": "int", "name": "text"}},
        required={"platforms_platform": ("name",)},
        fills=(
            storage.Fill(
                tables.platforms,
                {"id": "id", "name": "name", "name_key": "name_key(name)"},
                "FROM stage.platforms_platform",
            ),
        ),
    )
    page_size = None


resource = Platforms()


def platform_list():
    return resource.answer_list()


def platform_detail(record_id):
    return resource.answer_detail(record_id)


bp = resource.blueprint(platform_list, platform_detail)
