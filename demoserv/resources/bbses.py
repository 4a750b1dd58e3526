"""Bulletin board systems, with their BBStros, staff and affiliated groups."""

from marshmallow import Schema, fields

from ..api import filters
from ..store import tables
from .declaration import Resource
from .summaries import (
    NAMED_DETAIL_HEAD,
    ProductionSchema,
    ReleaserNameSchema,
    nested_list,
    record_url,
    service_url,
)


class BBSSchema(Schema):
    url = record_url("bbses")
    service_url = service_url("/bbs/{id}/")
    id = fields.Integer()
    name = fields.String()
    location = fields.String()
    latitude = fields.Float(allow_none=True)
    longitude = fields.Float(allow_none=True)
    tags = fields.List(fields.String())


class StaffSchema(Schema):
    releaser = fields.Nested(ReleaserNameSchema)
    role = fields.String()
    is_current = fields.Boolean()


class AffiliationSchema(Schema):
    group = fields.Nested(ReleaserNameSchema)
    role = fields.String()


class BBSDetailSchema(BBSSchema):
    country_code = fields.String()
    bbstros = nested_list(ProductionSchema)
    staff = nested_list(StaffSchema)
    affiliations = nested_list(AffiliationSchema)

    class Meta:
        fields = (
            *NAMED_DETAIL_HEAD,
            "location",
            "country_code",
            "latitude",
            "longitude",
            "bbstros",
            "staff",
            "affiliations",
            "tags",
        )


class BBSes(Resource):
    name = "bbses"
    title = "BBS"
    description = "Bulletin board systems of the demoscene."
    table = tables.bbses
    details_table = tables.bbses_details
    detail_needs = frozenset({"productions", "releasers"})
    filters = (
        filters.NameEquals("name", "Only BBSes with this name (exact, case-insensitive)."),
        filters.Search("search", filters.search_help("BBSes", "name")),
        filters.Tagged(
            "tag",
            "Only BBSes carrying every one of these tags (repeat it, or separate tags with "
            "commas).",
            link=tables.bbs_tags,
            owner="bbs_id",
        ),
        filters.CountryCode("country_code", "Only BBSes in this country (two letters, any case)."),
    )
    schema = BBSSchema()
    detail_schema = BBSDetailSchema()


resource = BBSes()
