"""Bulletin board systems."""

from marshmallow import Schema, fields

from .. import tables
from .common import Resource, record_url, service_url


class BBSSchema(Schema):
    url = record_url("bbses")
    service_url = service_url("/bbs/{id}/")
    id = fields.Integer()
    name = fields.String()
    location = fields.String()
    latitude = fields.Float(allow_none=True)
    longitude = fields.Float(allow_none=True)
    tags = fields.List(fields.String())


class BBSes(Resource):
    name = "bbses"
    table = tables.bbses
    schema = BBSSchema()
    title = "BBS"
    description = "Bulletin board systems of the demoscene."


resource = BBSes()
bp = resource.blueprint()
