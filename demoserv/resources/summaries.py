"""The nested summaries that several resources show (each a list record of its own
resource, or a nested list of records that more than one resource shows), and the fields
that build a record's addresses. Output shapes, shared by the answers and the build."""

from marshmallow import Schema, fields

from ..store.addresses import api_url, site_url
from ..store.values import SECTIONS

URL = {"type": "string", "format": "uri"}  # how an address field is documented
# The first fields of a named record's detail, in the upstream's order.
NAMED_DETAIL_HEAD = ("url", "service_url", "id", "name")


def record_url(resource):
    """The ``url`` field: the record's address in the API."""
    return fields.Function(
        lambda record: api_url(resource, record["id"]),
        metadata={**URL, "description": "The record's address in this API."},
    )


def service_url(path):
    """The ``service_url`` field: the record's public page, ``path`` formatted with id."""
    return fields.Function(
        lambda record: site_url(path.format(id=record["id"])),
        metadata={**URL, "description": "The record's page on the public site."},
    )


def production_service_url():
    return fields.Function(
        lambda record: site_url(f"/{SECTIONS[record['supertype']]}/{record['id']}/"),
        metadata={**URL, "description": "The production's page on the public site."},
    )


def nested_list(schema):
    return fields.List(fields.Nested(schema))


class PlatformSchema(Schema):
    url = record_url("platforms")
    id = fields.Integer()
    name = fields.String()


class ProductionTypeSchema(Schema):
    url = record_url("production_types")
    id = fields.Integer()
    name = fields.String()
    supertype = fields.String()


class ReleaserSchema(Schema):
    url = record_url("releasers")
    id = fields.Integer()
    name = fields.String()
    is_group = fields.Boolean()


class ReleaserNameSchema(Schema):
    """A releaser as memberships and BBS staff show it."""

    url = record_url("releasers")
    id = fields.Integer()
    name = fields.String()


class NickSchema(Schema):
    name = fields.String()
    abbreviation = fields.String()
    releaser = fields.Nested(ReleaserSchema)


class LinkSchema(Schema):
    link_class = fields.String()
    url = fields.String(metadata=URL)


class PartySeriesSchema(Schema):
    url = record_url("party_series")
    service_url = service_url("/parties/series/{id}/")
    id = fields.Integer()
    name = fields.String()
    website = fields.String()


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


class ProductionSchema(Schema):
    url = record_url("productions")
    service_url = production_service_url()
    id = fields.Integer()
    title = fields.String()
    author_nicks = nested_list(NickSchema)
    author_affiliation_nicks = nested_list(NickSchema)
    release_date = fields.String(allow_none=True)
    supertype = fields.String()
    platforms = nested_list(PlatformSchema)
    types = nested_list(ProductionTypeSchema)
    tags = fields.List(fields.String())


class ResultSchema(Schema):
    position = fields.Integer(allow_none=True)
    ranking = fields.String()
    score = fields.String()
    production = fields.Nested(ProductionSchema)
