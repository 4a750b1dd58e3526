"""Releasers: groups and individual sceners, with their nicks, memberships and links;
and the productions each is credited with."""

import functools

from marshmallow import Schema, fields
from sqlalchemy import literal_column, or_, select

from ..api import filters
from ..store import tables
from ..store.addresses import site_url
from .declaration import Resource, SubListing
from .summaries import (
    NAMED_DETAIL_HEAD,
    URL,
    LinkSchema,
    ReleaserNameSchema,
    ReleaserSchema,
    nested_list,
)


class ReleaserNickSchema(Schema):
    name = fields.String()
    abbreviation = fields.String()
    is_primary_nick = fields.Boolean()
    variants = fields.List(fields.String())


class GroupMembershipSchema(Schema):
    group = fields.Nested(ReleaserNameSchema)
    is_current = fields.Boolean()


class MemberSchema(Schema):
    member = fields.Nested(ReleaserNameSchema)
    is_current = fields.Boolean()


class SubgroupSchema(Schema):
    subgroup = fields.Nested(ReleaserNameSchema)
    is_current = fields.Boolean()


class ReleaserDetailSchema(ReleaserSchema):
    service_url = fields.Function(
        lambda record: site_url(
            f"/{'groups' if record['is_group'] else 'sceners'}/{record['id']}/"
        ),
        metadata={**URL, "description": "The group's or scener's page on the public site."},
    )
    nicks = nested_list(ReleaserNickSchema)
    member_of = nested_list(GroupMembershipSchema)
    members = nested_list(MemberSchema)
    subgroups = nested_list(SubgroupSchema)
    external_links = nested_list(LinkSchema)

    class Meta:
        fields = (
            *NAMED_DETAIL_HEAD,
            "is_group",
            "nicks",
            "member_of",
            "members",
            "subgroups",
            "external_links",
        )


def credited(connection, releaser_id, member):
    """The ids of the productions crediting the releaser (as author; with
    ``member``, as an affiliation or through a subgroup), newest first, undated
    first, ties by id descending; None for an unknown releaser."""
    releasers, nicks, productions = tables.releasers, tables.production_nicks, tables.productions
    found = connection.execute(select(releasers.c.id).where(releasers.c.id == releaser_id))
    if found.first() is None:
        return None
    if member:
        subgroups = (
            select(tables.memberships.c.member_id)
            .join(releasers, releasers.c.id == tables.memberships.c.member_id)
            .where(tables.memberships.c.group_id == releaser_id, releasers.c.is_group)
        )
        credit = or_(
            (nicks.c.releaser_id == releaser_id) & (nicks.c.role == "affiliation"),
            nicks.c.releaser_id.in_(subgroups) & (nicks.c.role == "author"),
        )
    else:
        credit = (nicks.c.releaser_id == releaser_id) & (nicks.c.role == "author")
    return (
        connection.execute(
            select(productions.c.id)
            .where(productions.c.id.in_(select(nicks.c.production_id).where(credit)))
            .order_by(productions.c.release_date_key.desc().nulls_first(), productions.c.id.desc())
        )
        .scalars()
        .all()
    )


class Releasers(Resource):
    name = "releasers"
    title = "Releaser"
    description = "Groups and individual sceners who release productions."
    table = tables.releasers
    details_table = tables.releasers_details
    detail_needs = frozenset({"releasers"})
    filters = (
        filters.NameEquals("name", "Only releasers with this name (exact, case-insensitive)."),
        filters.Search(
            "search", filters.search_help("releasers", "name, a nick or a nick variant")
        ),
        filters.Flag(
            "is_group", "true: only groups; false: only individual sceners.", column="is_group"
        ),
        filters.CountryCode(
            "country_code",
            "Only releasers from this country (two letters, any case).",
            feature="releasers_country_code",
        ),
        *filters.time_bounds("releasers"),
    )
    schema = ReleaserSchema()
    detail_schema = ReleaserDetailSchema()
    sub_listings = {
        "productions": SubListing(
            "productions",
            "A releaser's productions: those that credit one of its nicks as an author. "
            "Newest first, undated first, ties by id descending. Not paged.",
            functools.partial(credited, member=False),
        ),
        "member_productions": SubListing(
            "productions",
            "Productions of a releaser's groups: those that credit one of its nicks as an "
            "affiliation, or are authored by one of its subgroups. Newest first, undated "
            "first, ties by id descending. Not paged.",
            functools.partial(credited, member=True),
        ),
    }

    def search_statement(self):
        """A releaser's name, then every nick's name and variants."""
        nicks = literal_column(
            "(SELECT group_concat(nicks.name || ' ' || (SELECT coalesce(group_concat("
            "variants.value, ' '), '') FROM json_each(nicks.variants) AS variants), ' ') "
            "FROM releaser_nicks AS nicks WHERE nicks.releaser_id = releasers.id)"
        )
        return select(self.table.c.id, self.table.c.name, nicks).order_by(self.table.c.id)


resource = Releasers()
