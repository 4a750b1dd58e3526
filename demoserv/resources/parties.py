"""Parties: the editions of party series, online or at a place, with their invitations,
releases and competitions."""

from marshmallow import Schema, fields

from ..api import filters
from ..store import tables
from .declaration import Resource
from .summaries import (
    NAMED_DETAIL_HEAD,
    LinkSchema,
    PartySchema,
    PartySeriesSchema,
    PlatformSchema,
    ProductionSchema,
    ProductionTypeSchema,
    ResultSchema,
    nested_list,
    service_url,
)


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


resource = Parties()
