"""Parties: the editions of party series, online or at a place."""

from marshmallow import Schema, fields
from sqlalchemy import select

from .. import tables
from .common import PartySeriesSchema, Resource, record_url, service_url


class PartySchema(Schema):
    url = record_url("parties")
    service_url = service_url("/parties/{id}/")
    id = fields.Integer()
    name = fields.String()
    tagline = fields.String()
    start_date = fields.String()
    end_date = fields.String()
    location = fields.String()
    is_online = fields.Boolean()
    country_code = fields.String()
    latitude = fields.Float(allow_none=True)
    longitude = fields.Float(allow_none=True)
    website = fields.String()


class PartyDetailSchema(PartySchema):
    party_series = fields.Nested(PartySeriesSchema, allow_none=True)


class Parties(Resource):
    name = "parties"
    table = tables.parties
    schema = PartySchema()
    detail_schema = PartyDetailSchema()
    title = "Party"
    description = "Demoparties: editions of party series, held at a place or online."

    def fetch_one(self, connection, record_id):
        party = self.table
        series = tables.party_series
        query = (
            select(
                *self.columns(),
                series.c.id.label("series_id"),
                series.c.name.label("series_name"),
                series.c.website.label("series_website"),
            )
            .outerjoin(series, party.c.party_series_id == series.c.id)
            .where(party.c.id == record_id)
        )
        row = connection.execute(query).mappings().first()
        if row is None:
            return None
        record = dict(row)
        series_id = record.pop("series_id")
        name, website = record.pop("series_name"), record.pop("series_website")
        record["party_series"] = (
            None if series_id is None else {"id": series_id, "name": name, "website": website}
        )
        return record


resource = Parties()
bp = resource.blueprint()
