"""Releasers: groups and individual sceners."""

from marshmallow import fields

from .. import tables
from ..links import site_url
from .common import URL, ReleaserSchema, Resource


class ReleaserDetailSchema(ReleaserSchema):
    service_url = fields.Function(
        lambda record: site_url(
            f"/{'groups' if record['is_group'] else 'sceners'}/{record['id']}/"
        ),
        metadata={**URL, "description": "The group's or scener's page on the public site."},
    )

    class Meta:
        fields = ("url", "service_url", "id", "name", "is_group")


class Releasers(Resource):
    name = "releasers"
    table = tables.releasers
    schema = ReleaserSchema()
    detail_schema = ReleaserDetailSchema()
    title = "Releaser"
    description = "Groups and individual sceners who release productions."


resource = Releasers()
bp = resource.blueprint()
