"""Productions: demos, intros, music, graphics, ... with their authors, platforms and
types. The nested records of a page are fetched with one query per relation."""
from collections import defaultdict

from marshmallow import Schema, fields
from sqlalchemy import select

from .. import tables
from ..links import site_url
from .common import (
    SECTIONS,
    NickSchema,
    PlatformSchema,
    ProductionTypeSchema,
    Resource,
    record_url,
)


class ProductionSchema(Schema):
    url = record_url("productions")
    service_url = fields.Function(
        lambda record: site_url(f"/{SECTIONS[record['supertype']]}/{record['id']}/")
    )
    id = fields.Integer()
    title = fields.String()
    author_nicks = fields.List(fields.Nested(NickSchema))
    author_affiliation_nicks = fields.List(fields.Nested(NickSchema))
    release_date = fields.String(allow_none=True)
    supertype = fields.String()
    platforms = fields.List(fields.Nested(PlatformSchema))
    types = fields.List(fields.Nested(ProductionTypeSchema))
    tags = fields.List(fields.String())


NICK_LISTS = {"author": "author_nicks", "affiliation": "author_affiliation_nicks"}
# (field, link table, link column, summary table, summary columns)
SUMMARY_RELATIONS = [
    ("platforms", tables.production_platforms, "platform_id", tables.platforms, ("id", "name")),
    (
        "types",
        tables.production_type_links,
        "production_type_id",
        tables.production_types,
        ("id", "name", "supertype"),
    ),
]


def attach_relations(connection, rows):
    """Give each production row its nicks, platforms and types, in loaded order."""
    by_id = {row["id"]: row for row in rows}
    for row in rows:
        row.update(author_nicks=[], author_affiliation_nicks=[], platforms=[], types=[])
    ids = list(by_id)

    nicks, releasers = tables.production_nicks, tables.releasers
    query = (
        select(
            nicks.c.production_id,
            nicks.c.role,
            nicks.c.name,
            nicks.c.abbreviation,
            releasers.c.id,
            releasers.c.name.label("releaser_name"),
            releasers.c.is_group,
        )
        .join(releasers, releasers.c.id == nicks.c.releaser_id)
        .where(nicks.c.production_id.in_(ids))
        .order_by(nicks.c.production_id, nicks.c.role, nicks.c.position)
    )
    for nick in connection.execute(query).mappings():
        by_id[nick["production_id"]][NICK_LISTS[nick["role"]]].append(
            {
                "name": nick["name"],
                "abbreviation": nick["abbreviation"],
                "releaser": {
                    "id": nick["id"],
                    "name": nick["releaser_name"],
                    "is_group": nick["is_group"],
                },
            }
        )

    for field, link, key, target, names in SUMMARY_RELATIONS:
        query = (
            select(link.c.production_id, *(target.c[name] for name in names))
            .join(target, target.c.id == link.c[key])
            .where(link.c.production_id.in_(ids))
            .order_by(link.c.production_id, link.c.position)
        )
        for summary in connection.execute(query).mappings():
            by_id[summary["production_id"]][field].append({name: summary[name] for name in names})


class Productions(Resource):
    name = "productions"
    table = tables.productions
    schema = ProductionSchema()
    title = "Production"
    description = "Demos, intros, music, graphics and other productions of the demoscene."

    def attach(self, connection, rows):
        attach_relations(connection, rows)


bp = Productions().blueprint()
