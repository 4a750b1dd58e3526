"""Releasers: groups and individual sceners."""
from marshmallow import fields

from .. import tables
from ..links import site_url
from .common import ReleaserSchema, Resource


class ReleaserDetailSchema(ReleaserSchema):
    service_url = fields.Function(
        lambda record: site_url(
            f"/{'groups' if record['is_group'] else 'sceners'}/{record['id']}/"
        )
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


bp = Releasers().blueprint()
