"""Parties: the editions of party series, online or at a place, with their invitations,
releases and competitions."""

from marshmallow import Schema, fields

from .. import filters, records, tables
from . import storage
from .declaration import Resource, owned_rows
from .summaries import (
    NAMED_DETAIL_HEAD,
    LinkSchema,
    PartySchema,
    PartySeriesSchema,
    PlatformSchema,
    ProductionSchema,
    ProductionTypeSchema,
    nested_list,
    service_url,
)


class ResultSchema(Schema):
    position = fields.Integer(allow_none=True)
    ranking = fields.String()
    score = fields.String()
    production = fields.Nested(ProductionSchema)


class CompetitionSchema(Schema):
    id = fields.Integer()
    service_url = service_url("/competitions/{id}/")
    name = fields.String()
    shown_date = fields.String(allow_none=True)
    platform = fields.Nested(PlatformSchema, allow_none=True)
    production_type = fields.Nested(ProductionTypeSchema, allow_none=True)
    results = nested_list(ResultSchema)


class PartyDetailSchema(PartySchema):
    party_series = fields.Nested(PartySeriesSchema, allow_none=True)
    invitations = nested_list(ProductionSchema)
    releases = nested_list(ProductionSchema)
    competitions = nested_list(CompetitionSchema)
    external_links = nested_list(LinkSchema)

    class Meta:
        fields = (
            *NAMED_DETAIL_HEAD,
            "tagline",
            "party_series",
            "start_date",
            "end_date",
            "location",
            "is_online",
            "country_code",
            "latitude",
            "longitude",
            "website",
            "invitations",
            "releases",
            "competitions",
            "external_links",
        )


class ResultRecord(records.RecordSchema):
    position = records.StrictInteger(required=True, allow_none=True)
    ranking = records.text()
    score = records.text()
    production = records.Reference(required=True)


class CompetitionRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    shown_date = records.partial_date(allow_none=True, load_default=None)
    platform = records.Reference(records.PlatformRecord(), allow_none=True, load_default=None)
    production_type = records.Reference(
        records.ProductionTypeRecord(), allow_none=True, load_default=None
    )
    results = records.optional_list(fields.Nested(ResultRecord))


class PartyRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    tagline = records.text()
    start_date = records.partial_date()
    end_date = records.partial_date()
    location = records.text()
    is_online = records.StrictBoolean(required=True)
    country_code = records.country_code(required=True)
    latitude = records.coordinate(90)
    longitude = records.coordinate(180)
    website = records.text()
    party_series = records.Reference(allow_none=True, load_default=None)
    invitations = records.relation(records.Reference())
    releases = records.relation(records.Reference())
    competitions = records.relation(fields.Nested(CompetitionRecord))
    external_links = records.optional_list(fields.Nested(records.LinkRecord))


def _productions(link):
    return owned_rows(link, "party_id", "party_position", (link.c.party_id, link.c.production_id))


INVITATIONS = _productions(tables.party_invitations)
RELEASES = _productions(tables.party_releases)
COMPETITIONS = owned_rows(tables.competitions, "party_id").order_by(
    tables.competitions.c.id  # of those known only from placings
)
RESULTS = owned_rows(tables.placings, "competition_id", "result_position")
LINKS = owned_rows(tables.party_links, "party_id")


class Parties(Resource):
    name = "parties"
    title = "Party"
    description = "Demoparties: editions of party series, held at a place or online."
    table = tables.parties
    details_table = tables.parties_details
    detail_needs = frozenset({"party_series", "productions", "platforms", "production_types"})
    keys = {
        "id": "id",
        "name": "name_key",
        "start_date_date": "start_date_key",
        "end_date_date": "end_date_key",
        "country_code": "country_code",
    }
    filters = (
        filters.NameEquals("name", "Only parties with this name (exact, case-insensitive)."),
        filters.Search("search", filters.search_help("parties", "name")),
        filters.CountryCode(
            "country_code", "Only parties in this country (two letters, any case)."
        ),
        filters.IdEquals(
            "party_series",
            "Only editions of the party series with this id.",
            column="party_series_id",
        ),
        filters.DateBound(
            "start_date_before",
            "Only parties that started before this date.",
            column="start_date_key",
            before=True,
        ),
        filters.DateBound(
            "start_date_since",
            "Only parties that started on or after this date.",
            column="start_date_key",
            before=False,
        ),
    )
    schema = PartySchema()
    detail_schema = PartyDetailSchema()
    record_schema = PartyRecord()
    derived_columns = {**storage.NAME_KEY, **storage.date_keys("start_date", "end_date")}
    owns = (storage.Owned("external_links", tables.party_links),)

    def complete_detail(self, build, rows):
        by_id = {}
        for row in rows:
            row.update(invitations=[], releases=[], competitions=[], external_links=[])
            by_id[row["id"]] = row
        ids = list(by_id)
        series = build.records("party_series", {row["party_series_id"] for row in rows} - {None})
        for row in rows:
            row["party_series"] = series.get(row["party_series_id"])
        competitions = build.rows(COMPETITIONS, ids)
        results = {}
        for row in build.rows(RESULTS, [row["id"] for row in competitions]):
            results.setdefault(row["competition_id"], []).append(row)
        links = {
            field: build.rows(statement, ids)
            for field, statement in (("invitations", INVITATIONS), ("releases", RELEASES))
        }
        wanted = {row["production_id"] for rows in links.values() for row in rows}
        wanted.update(row["production_id"] for rows in results.values() for row in rows)
        productions = build.records("productions", wanted)
        platforms = build.records("platforms", {row["platform_id"] for row in competitions})
        types = build.records(
            "production_types", {row["production_type_id"] for row in competitions}
        )
        for field, rows_of_field in links.items():
            for row in rows_of_field:
                by_id[row["party_id"]][field].append(productions[row["production_id"]])
        for row in competitions:
            by_id[row["party_id"]]["competitions"].append(
                {
                    "id": row["id"],
                    "name": row["name"],
                    "shown_date": row["shown_date"],
                    "platform": platforms.get(row["platform_id"]),
                    "production_type": types.get(row["production_type_id"]),
                    "results": [
                        {
                            "position": result["position"],
                            "ranking": result["ranking"],
                            "score": result["score"],
                            "production": productions[result["production_id"]],
                        }
                        for result in results.get(row["id"], ())
                    ],
                }
            )
        for row in build.rows(LINKS, ids):
            by_id[row["party_id"]]["external_links"].append(
                {"link_class": row["link_class"], "url": row["url"]}
            )


resource = Parties()


def party_list():
    return resource.answer_list()


def party_detail(record_id):
    return resource.answer_detail(record_id)


bp = resource.blueprint(party_list, party_detail)
