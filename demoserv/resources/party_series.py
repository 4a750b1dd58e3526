"""Party series: the recurring events that parties are editions of."""

from .. import tables
from .common import PartySeriesSchema, Resource


class PartySeries(Resource):
    name = "party_series"
    table = tables.party_series
    schema = PartySeriesSchema()
    title = "Party Series"
    description = "Recurring demoparties, such as Assembly or Revision."


resource = PartySeries()
bp = resource.blueprint()
