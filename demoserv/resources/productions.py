"""Productions: demos, intros, music, graphics, ... with their authors, platforms, types,
credits, links, screenshots, parties and competition placings."""

from marshmallow import Schema, fields
from sqlalchemy import select

from ..api import filters
from ..store import tables
from .declaration import Resource
from .summaries import LinkSchema, NickSchema, PartySchema, ProductionSchema, nested_list


class CreditSchema(Schema):
    nick = fields.Nested(NickSchema)
    category = fields.String()
    role = fields.String()


class CompetitionSummarySchema(Schema):
    id = fields.Integer()
    name = fields.String()
    party = fields.Nested(PartySchema)


class PlacingSchema(Schema):
    position = fields.Integer(allow_none=True)
    ranking = fields.String()
    score = fields.String()
    competition = fields.Nested(CompetitionSummarySchema)


class ScreenshotSchema(Schema):
    original_url = fields.String()
    original_width = fields.Integer(allow_none=True)
    original_height = fields.Integer(allow_none=True)
    standard_url = fields.String()
    standard_width = fields.Integer(allow_none=True)
    standard_height = fields.Integer(allow_none=True)
    thumbnail_url = fields.String()
    thumbnail_width = fields.Integer(allow_none=True)
    thumbnail_height = fields.Integer(allow_none=True)


class ProductionDetailSchema(ProductionSchema):
    credits = nested_list(CreditSchema)
    download_links = nested_list(LinkSchema)
    external_links = nested_list(LinkSchema)
    release_parties = nested_list(PartySchema)
    competition_placings = nested_list(PlacingSchema)
    invitation_parties = nested_list(PartySchema)
    screenshots = nested_list(ScreenshotSchema)

    class Meta:
        ordered = True
        fields = (
            "url",
            "service_url",
            "id",
            "title",
            "author_nicks",
            "author_affiliation_nicks",
            "release_date",
            "supertype",
            "platforms",
            "types",
            "credits",
            "download_links",
            "external_links",
            "release_parties",
            "competition_placings",
            "invitation_parties",
            "screenshots",
            "tags",
        )


class Productions(Resource):
    name = "productions"
    title = "Production"
    description = "Demos, intros, music, graphics and other productions of the demoscene."
    table = tables.productions
    details_table = tables.productions_details
    detail_needs = frozenset({"parties", "releasers", "platforms", "production_types"})
    keys = {
        "id": "id",
        "sortable_title": "sortable_title",
        "release_date_date": "release_date_key",
        "supertype": "supertype",
    }
    default_key = "sortable_title"
    filters = (
        filters.TitleEquals("title", "Only productions with this title (exact, case-insensitive)."),
        filters.Search("search", filters.search_help("productions", "title")),
        filters.Tagged(
            "tag",
            "Only productions carrying every one of these tags (repeat it, or separate tags "
            "with commas).",
            link=tables.production_tags,
            owner="production_id",
        ),
        filters.LinkedTo(
            "platform",
            "Only productions for any of these platform ids.",
            link=tables.production_platforms,
            owner="production_id",
            column="platform_id",
        ),
        filters.LinkedTo(
            "production_type",
            "Only productions of any of these type ids.",
            link=tables.production_type_links,
            owner="production_id",
            column="production_type_id",
        ),
        filters.Choice(
            "supertype",
            "Only productions of this supertype.",
            column="supertype",
            choices=("production", "music", "graphics"),
        ),
        filters.DateBound(
            "released_before",
            "Only productions released before this date "
            "(a partial release date counts as its first day).",
            column="release_date_key",
            before=True,
        ),
        filters.DateBound(
            "released_since",
            "Only productions released on or after this date "
            "(a partial release date counts as its first day).",
            column="release_date_key",
            before=False,
        ),
        filters.LinkedTo(
            "author",
            "Only productions credited to any of these releaser ids, as an author or as an "
            "author's group.",
            link=tables.production_nicks,
            owner="production_id",
            column="releaser_id",
        ),
        filters.Flag(
            "has_screenshot",
            "true: only productions with a screenshot (that has a thumbnail); false: only "
            "those without.",
            column="has_screenshot",
        ),
        filters.AtMost(
            "competition_placing_min",
            "Only productions placed at this position or better in a competition.",
            column="best_placing",
        ),
        filters.LinkUrl(
            "link_url",
            "Only productions with a download or external link to exactly this URL.",
            link=tables.production_links,
            owner="production_id",
        ),
        *filters.time_bounds("productions"),
    )
    schema = ProductionSchema()
    detail_schema = ProductionDetailSchema()

    def search_statement(self):
        return select(self.table.c.id, self.table.c.title).order_by(self.table.c.id)


resource = Productions()
