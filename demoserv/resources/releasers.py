"""Releasers: groups and individual sceners, with their nicks, memberships and links;
and the productions each is credited with."""

from marshmallow import Schema, fields
from sqlalchemy import literal_column, or_, select

from .. import filters, records, tables
from ..addresses import site_url
from ..db import get_catalogue, get_connection
from ..errors import APIError
from ..rendering import last_arg
from . import storage
from .answers import (
    RECORD_ID,
    add_view,
    fetch_docs,
    json_response,
    options_body,
    parse_fields,
    render,
)
from .declaration import IDS, Resource, owned_rows
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


class ReleaserNickRecord(records.RecordSchema):
    name = records.text()
    abbreviation = records.text()
    variants = records.optional_list(records.Text())


def _membership(side):
    return type(
        f"{side.title()}MembershipRecord",
        (records.RecordSchema,),
        {
            side: records.Reference(required=True),
            "is_current": records.StrictBoolean(required=True),
        },
    )


class ReleaserRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    is_group = records.StrictBoolean(required=True)
    nicks = records.relation(fields.Nested(ReleaserNickRecord))
    member_of = records.relation(fields.Nested(_membership("group")))
    members = records.relation(fields.Nested(_membership("member")))
    subgroups = records.relation(fields.Nested(_membership("subgroup")))
    external_links = records.optional_list(fields.Nested(records.LinkRecord))
    country_code = records.country_code(load_default=None, allow_none=True)
    created_at = records.timestamp()
    updated_at = records.timestamp()


NICKS = owned_rows(tables.releaser_nicks, "releaser_id")
MEMBER_OF = owned_rows(tables.memberships, "member_id", "member_position")
MEMBERS = (
    select(tables.memberships, tables.releasers.c.is_group)
    .join(tables.releasers, tables.releasers.c.id == tables.memberships.c.member_id)
    .where(tables.memberships.c.group_id.in_(IDS))
    .order_by(tables.memberships.c.group_id, tables.memberships.c.group_position)
)
PRODUCTION_DOCS = select(tables.productions.c.id, tables.productions.c.doc).where(
    tables.productions.c.id.in_(IDS)
)
LINKS = owned_rows(tables.releaser_links, "releaser_id")


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
    record_schema = ReleaserRecord()
    summarised = True  # a nick's releaser summary may create one
    derived_columns = {**storage.NAME_KEY, **storage.TIMESTAMPS}
    owns = (
        storage.Owned("nicks", tables.releaser_nicks),
        storage.Owned("external_links", tables.releaser_links),
    )
    upstream = storage.Upstream(
        tables={
            "demoscene_releaser": {
                "id": "int",
                "name": "text",
                "is_group": "bool",
                "country_code": "text",
                "created_at": "timestamp",
                "updated_at": "timestamp",
            },
            "demoscene_nick": {
                "id": "int",
                "name": "text",
                "abbreviation": "text",
                "releaser_id": "int",
            },
            "demoscene_nickvariant": {"name": "text", "nick_id": "int"},
            "demoscene_membership": {"is_current": "bool", "group_id": "int", "member_id": "int"},
            "demoscene_releaserexternallink": {
                "link_class": "text",
                "parameter": "text",
                "releaser_id": "int",
            },
        },
        foreign_keys=(
            ("demoscene_nick", "releaser_id", "demoscene_releaser"),
            ("demoscene_nickvariant", "nick_id", "demoscene_nick"),
            ("demoscene_membership", "group_id", "demoscene_releaser"),
            ("demoscene_membership", "member_id", "demoscene_releaser"),
            ("demoscene_releaserexternallink", "releaser_id", "demoscene_releaser"),
        ),
        required={
            "demoscene_releaser": ("name", "is_group"),
            "demoscene_nick": ("name", "releaser_id"),
        },
        fills=(
            storage.Fill(
                tables.releasers,
                {
                    "id": "id",
                    "name": "name",
                    "is_group": "is_group",
                    "country_code": "empty_to_none(country_code)",
                    "created_at": "created_at",
                    "updated_at": "updated_at",
                    "name_key": "name_key(name)",
                },
                "FROM stage.demoscene_releaser",
            ),
            # Each releaser's nicks by name, with their variants by name.
            storage.Fill(
                tables.releaser_nicks,
                {
                    "releaser_id": "n.releaser_id",
                    "position": "row_number() OVER (PARTITION BY n.releaser_id "
                    "ORDER BY n.name, n.line)",
                    "name": "n.name",
                    "abbreviation": "coalesce(n.abbreviation, '')",
                    "variants": "coalesce((SELECT json_group_array(name) FROM (SELECT v.name "
                    "FROM stage.demoscene_nickvariant v WHERE v.nick_id = n.id "
                    "ORDER BY v.name, v.line)), '[]')",
                },
                "FROM stage.demoscene_nick n",
            ),
            # Nested lists joined to the releaser table follow its rows' order (UPSTREAM.md).
            storage.Fill(
                tables.memberships,
                {
                    "member_id": "m.member_id",
                    "group_id": "m.group_id",
                    "is_current": "m.is_current",
                    "member_position": "row_number() OVER (PARTITION BY m.member_id "
                    "ORDER BY g.line, m.line)",
                    "group_position": "row_number() OVER (PARTITION BY m.group_id "
                    "ORDER BY r.line, m.line)",
                },
                "FROM stage.demoscene_membership m "
                "JOIN stage.demoscene_releaser g ON g.id = m.group_id "
                "JOIN stage.demoscene_releaser r ON r.id = m.member_id "
                "WHERE true ON CONFLICT DO NOTHING",
            ),
            storage.Links(tables.releaser_links, "demoscene_releaserexternallink", "releaser_id"),
        ),
    )
    relations = (
        storage.Both(
            tables.memberships,
            storage.Side("releasers", (("member_of", "group"),), "member_id", "member_position"),
            storage.Side(
                "releasers",
                (("members", "member"), ("subgroups", "subgroup")),
                "group_id",
                "group_position",
            ),
            names=("member", "group"),
        ),
    )

    def complete_detail(self, build, rows):
        by_id = {}
        for row in rows:
            row.update(nicks=[], member_of=[], members=[], subgroups=[], external_links=[])
            by_id[row["id"]] = row
        ids = list(by_id)
        for row in build.rows(NICKS, ids):
            record = by_id[row["releaser_id"]]
            record["nicks"].append(
                {
                    "name": row["name"],
                    "abbreviation": row["abbreviation"],
                    "is_primary_nick": row["name"] == record["name"],
                    "variants": row["variants"],
                }
            )
        member_of = build.rows(MEMBER_OF, ids)
        members = build.rows(MEMBERS, ids)
        names = build.records(
            "releasers",
            {row["group_id"] for row in member_of} | {row["member_id"] for row in members},
        )
        for row in member_of:
            by_id[row["member_id"]]["member_of"].append(
                {"group": names[row["group_id"]], "is_current": row["is_current"]}
            )
        for row in members:
            field, key = ("subgroups", "subgroup") if row["is_group"] else ("members", "member")
            by_id[row["group_id"]][field].append(
                {key: names[row["member_id"]], "is_current": row["is_current"]}
            )
        for row in build.rows(LINKS, ids):
            by_id[row["releaser_id"]]["external_links"].append(
                {"link_class": row["link_class"], "url": row["url"]}
            )

    def search_statement(self):
        """A releaser's name, then every nick's name and variants."""
        nicks = literal_column(
            "(SELECT group_concat(nicks.name || ' ' || (SELECT coalesce(group_concat("
            "variants.value, ' '), '') FROM json_each(nicks.variants) AS variants), ' ') "
            "FROM releaser_nicks AS nicks WHERE nicks.releaser_id = releasers.id)"
        )
        return select(self.table.c.id, self.table.c.name, nicks).order_by(self.table.c.id)

    def credited(self, connection, releaser_id, member):
        """The ids of the productions crediting the releaser (as author; with
        ``member``, as an affiliation or through a subgroup), newest first, undated
        first, ties by id descending; None for an unknown releaser."""
        releasers, nicks, productions = self.table, tables.production_nicks, tables.productions
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
                .order_by(
                    productions.c.release_date_key.desc().nulls_first(), productions.c.id.desc()
                )
            )
            .scalars()
            .all()
        )

    def answer_credited(self, releaser_id, member):
        connection = get_connection()
        ids = self.credited(connection, releaser_id, member)
        if ids is None:
            raise APIError(404)
        docs = fetch_docs(connection, PRODUCTION_DOCS, ids, get_catalogue().expander("productions"))
        return json_response(render(docs, parse_fields(last_arg("fields"))))


resource = Releasers()

SUB_RESOURCES = {
    "productions": "A releaser's productions: those that credit one of its nicks as an "
    "author. Newest first, undated first, ties by id descending. Not paged.",
    "member_productions": "Productions of a releaser's groups: those that credit one of its "
    "nicks as an affiliation, or are authored by one of its subgroups. Newest first, undated "
    "first, ties by id descending. Not paged.",
}


def releaser_list():
    return resource.answer_list()


def releaser_detail(record_id):
    return resource.answer_detail(record_id)


def releaser_productions(record_id):
    return resource.answer_credited(record_id, member=False)


def releaser_member_productions(record_id):
    return resource.answer_credited(record_id, member=True)


def _describe_credited(name):
    return lambda: options_body(
        f"Releaser {name.replace('_', ' ').title()} List",
        SUB_RESOURCES[name],
        resource.describe(detail=True)["parameters"],
    )


bp = resource.blueprint(releaser_list, releaser_detail)
add_view(
    bp,
    f"/releasers/{RECORD_ID}/productions/",
    releaser_productions,
    _describe_credited("productions"),
)
add_view(
    bp,
    f"/releasers/{RECORD_ID}/member_productions/",
    releaser_member_productions,
    _describe_credited("member_productions"),
)
