"""Party series: the recurring events that parties are editions of."""

from .. import filters, records, tables
from . import storage
from .declaration import Resource, owned_rows
from .summaries import PartySchema, PartySeriesSchema, nested_list

PARTIES = owned_rows(
    tables.parties,
    "party_series_id",
    "series_position",
    (tables.parties.c.party_series_id, tables.parties.c.id),
)


class PartySeriesDetailSchema(PartySeriesSchema):
    parties = nested_list(PartySchema)


class PartySeriesRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    website = records.text()
    parties = records.relation(records.Reference())


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
    record_schema = PartySeriesRecord()
    upstream = storage.Upstream(
        tables={"parties_partyseries": {"id": "int", "name": "text", "website": "text"}},
        required={"parties_partyseries": ("name",)},
        fills=(
            storage.Fill(
                tables.party_series,
                {
                    "id": "id",
                    "name": "name",
                    "website": "coalesce(website, '')",
                    "name_key": "name_key(name)",
                },
                "FROM stage.parties_partyseries",
            ),
        ),
    )

    def complete_detail(self, build, rows):
        by_id = {row["id"]: row for row in rows}
        for row in rows:
            row["parties"] = []
        links = build.rows(PARTIES, list(by_id))
        parties = build.records("parties", {row["id"] for row in links})
        for row in links:
            by_id[row["party_series_id"]]["parties"].append(parties[row["id"]])


resource = PartySeries()


def party_series_list():
    return resource.answer_list()


def party_series_detail(record_id):
    return resource.answer_detail(record_id)


bp = resource.blueprint(party_series_list, party_series_detail)
