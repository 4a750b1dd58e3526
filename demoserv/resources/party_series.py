"""Party series: the recurring events that parties are editions of."""

from ..api import filters
from ..store import tables
from .declaration import Resource
from .summaries import PartySchema, PartySeriesSchema, nested_list


class PartySeriesDetailSchema(PartySeriesSchema):
    parties = nested_list(PartySchema)


class PartySeries(Resource):
    name = "party_series"
    title = "Party Series"
    description = "Recurring demoparties, such as Assembly or Revision."
    table = tables.party_series
    details_table = tables.party_series_details
    detail_needs = frozenset({"parties"})
    filters = (
        filters.NameEquals("name", "Only party series with this name (exact, case-insensitive)."),
        filters.Search("search", filters.search_help("party series", "name")),
    )
    schema = PartySeriesSchema()
    detail_schema = PartySeriesDetailSchema()


resource = PartySeries()
