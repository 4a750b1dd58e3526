"""How releasers are loaded: their catalogue record, the nested lists and the
memberships they store, their part of the upstream import, and their detail records'
assembly."""

from marshmallow import fields

from ...resources.releasers import resource
from ...store import tables
from .. import records
from . import storage
from .loading import Loading, side_rows


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


MEMBERSHIPS = storage.Relation(
    tables.memberships,
    storage.RelationSide("releasers", (("member_of", "group"),), "member_id", "member_position"),
    storage.RelationSide(
        "releasers",
        (("members", "member"), ("subgroups", "subgroup")),
        "group_id",
        "group_position",
    ),
    names=("member", "group"),
)


MEMBER_OF = side_rows(tables.memberships, MEMBERSHIPS.left)


MEMBERS = side_rows(
    tables.memberships, MEMBERSHIPS.right, tables.memberships, tables.releasers.c.is_group
).join(tables.releasers, tables.releasers.c.id == tables.memberships.c.member_id)


class ReleasersLoading(Loading):
    resource = resource
    record_schema = ReleaserRecord()
    created_by_summaries = True  # a nick's releaser summary may create one
    derived_columns = {**storage.NAME_KEY, **storage.TIMESTAMPS}
    nested_lists = (
        storage.NestedList("nicks", tables.releaser_nicks),
        storage.NestedList("external_links", tables.releaser_links),
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
    relations = (MEMBERSHIPS,)

    def complete_detail(self, build, rows):
        super().complete_detail(build, rows)
        by_id = {}
        for row in rows:
            # Whether a nick is the primary one is the record's, not the stored nick's.
            for nick in row["nicks"]:
                nick["is_primary_nick"] = nick["name"] == row["name"]
            # Relations, not nested lists: a releaser's groups, members and subgroups.
            row.update(member_of=[], members=[], subgroups=[])
            by_id[row["id"]] = row
        ids = list(by_id)
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


loading = ReleasersLoading()
