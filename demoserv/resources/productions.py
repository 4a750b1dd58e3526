"""Productions: demos, intros, music, graphics, ... with their authors, platforms and
types. The nested records of a page are fetched with one query per relation."""

from flask import current_app, request
from marshmallow import Schema, fields
from sqlalchemy import bindparam, select

from .. import tables
from ..db import get_connection
from ..errors import APIError
from ..links import site_url
from ..rendering import JSON_TYPE, last_arg
from .common import (
    MAX_ID,
    SECTIONS,
    URL,
    NickSchema,
    PlatformSchema,
    ProductionTypeSchema,
    Resource,
    add_view,
    dumper,
    parse_fields,
    record_url,
)


class ProductionSchema(Schema):
    url = record_url("productions")
    service_url = fields.Function(
        lambda record: site_url(f"/{SECTIONS[record['supertype']]}/{record['id']}/"),
        metadata={**URL, "description": "The production's page on the public site."},
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
BATCH = 5000  # ids per query, well within SQLite's limit on parameters


def _relation_statements():
    """The three statements that fetch a page's nested records, built once; each takes
    the page's production ids as ``ids``."""
    ids = bindparam("ids", expanding=True)
    nicks, releasers = tables.production_nicks, tables.releasers
    nick_statement = (
        select(
            nicks.c.production_id,
            nicks.c.role,
            nicks.c.name,
            nicks.c.abbreviation,
            releasers.c.id,
            releasers.c.name,
            releasers.c.is_group,
        )
        .join(releasers, releasers.c.id == nicks.c.releaser_id)
        .where(nicks.c.production_id.in_(ids))
        .order_by(nicks.c.production_id, nicks.c.role, nicks.c.position)
    )
    summaries = []
    for field, link, key, target, names in (
        ("platforms", tables.production_platforms, "platform_id", tables.platforms, ("id", "name")),
        (
            "types",
            tables.production_type_links,
            "production_type_id",
            tables.production_types,
            ("id", "name", "supertype"),
        ),
    ):
        statement = (
            select(link.c.production_id, *(target.c[name] for name in names))
            .join(target, target.c.id == link.c[key])
            .where(link.c.production_id.in_(ids))
            .order_by(link.c.production_id, link.c.position)
        )
        summaries.append((field, names, statement))
    return nick_statement, summaries


NICK_STATEMENT, SUMMARY_STATEMENTS = _relation_statements()


def attach_relations(connection, rows):
    """Give each production row its nicks, platforms and types, in loaded order."""
    by_id = {}
    for row in rows:
        row.update(author_nicks=[], author_affiliation_nicks=[], platforms=[], types=[])
        by_id[row["id"]] = row
    ids = {"ids": list(by_id)}

    for (
        production_id,
        role,
        name,
        abbreviation,
        releaser_id,
        releaser_name,
        is_group,
    ) in connection.execute(NICK_STATEMENT, ids).all():
        by_id[production_id][NICK_LISTS[role]].append(
            {
                "name": name,
                "abbreviation": abbreviation,
                "releaser": {"id": releaser_id, "name": releaser_name, "is_group": is_group},
            }
        )
    for field, names, statement in SUMMARY_STATEMENTS:
        for production_id, *values in connection.execute(statement, ids).all():
            by_id[production_id][field].append(dict(zip(names, values)))


class Productions(Resource):
    name = "productions"
    table = tables.productions
    schema = ProductionSchema()
    title = "Production"
    description = "Demos, intros, music, graphics and other productions of the demoscene."

    def attach(self, connection, rows):
        attach_relations(connection, rows)

    def fetch_by_releaser(self, connection, releaser_id):
        """A releaser's productions, as author or as an author's group: newest first,
        those without a date last, ties by id (descending); None if no such releaser."""
        releasers, nicks, productions = tables.releasers, tables.production_nicks, self.table
        if (
            connection.execute(select(releasers.c.id).where(releasers.c.id == releaser_id)).first()
            is None
        ):
            return None
        credited = select(nicks.c.production_id).where(nicks.c.releaser_id == releaser_id)
        ids = (
            connection.execute(
                select(productions.c.id)
                .where(productions.c.id.in_(credited))
                .order_by(
                    productions.c.release_date_key.desc().nulls_last(), productions.c.id.desc()
                )
            )
            .scalars()
            .all()
        )
        rows = []
        for start in range(0, len(ids), BATCH):  # within SQLite's limit on parameters
            rows += self.fetch_ids(connection, ids[start : start + BATCH])
        if rows:
            self.attach(connection, rows)
        return rows

    def blueprint(self):
        bp = super().blueprint()

        def releaser_productions(record_id):
            if request.method == "OPTIONS":
                return {
                    "name": "Releaser Production List",
                    "description": "A releaser's productions, as author or as an author's "
                    "group: newest first, undated last, ties by id. Not paged.",
                    "renders": [JSON_TYPE],
                    "parses": [],
                    "parameters": {"fields": "Comma-separated field names: only these fields."},
                }
            rows = self.fetch_by_releaser(get_connection(), record_id)
            if rows is None:
                raise APIError(404)
            dump = dumper(self.schema, parse_fields(last_arg("fields")))
            return current_app.json.response([dump(row) for row in rows])

        add_view(
            bp,
            f"/releasers/<int(min=1, max={MAX_ID}):record_id>/productions/",
            releaser_productions,
        )
        return bp


resource = Productions()
bp = resource.blueprint()
