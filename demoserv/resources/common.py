"""What every resource shares: the record URL fields, the nested summaries, and the
list and detail views built from a resource's declaration."""

import functools

from flask import Blueprint, request
from marshmallow import Schema, fields
from sqlalchemy import bindparam, select

from .. import filters, pagination
from .. import ordering as ordering_keys
from ..db import get_catalogue, get_connection
from ..errors import APIError
from ..links import api_url, site_url
from ..rendering import FORMAT_HELP, JSON_TYPE, last_arg
from ..serialize import compile_dumper

MAX_ID = 2**63 - 1  # SQLite's integer range; a larger id cannot name a record
SECTIONS = {"production": "productions", "music": "music", "graphics": "graphics"}


URL = {"type": "string", "format": "uri"}  # how an address field is documented


def record_url(resource):
    """The ``url`` field: the record's address in the API."""
    return fields.Function(
        lambda record: api_url(resource, record["id"]),
        metadata={**URL, "description": "The record's address in this API."},
    )


def service_url(path):
    """The ``service_url`` field: the record's public page, ``path`` formatted with id."""
    return fields.Function(
        lambda record: site_url(path.format(id=record["id"])),
        metadata={**URL, "description": "The record's page on the public site."},
    )


class PlatformSchema(Schema):
    url = record_url("platforms")
    id = fields.Integer()
    name = fields.String()


class ProductionTypeSchema(Schema):
    url = record_url("production_types")
    id = fields.Integer()
    name = fields.String()
    supertype = fields.String()


class ReleaserSchema(Schema):
    url = record_url("releasers")
    id = fields.Integer()
    name = fields.String()
    is_group = fields.Boolean()


class NickSchema(Schema):
    name = fields.String()
    abbreviation = fields.String()
    releaser = fields.Nested(ReleaserSchema)


class PartySeriesSchema(Schema):
    url = record_url("party_series")
    service_url = service_url("/parties/series/{id}/")
    id = fields.Integer()
    name = fields.String()
    website = fields.String()


def parse_fields(value):
    """The field names ``fields=a,b,c`` asks for, or None for every field."""
    if not value:
        return None
    return frozenset(name.strip() for name in value.split(","))


@functools.lru_cache(maxsize=256)
def dumper(schema, only=None):
    """The compiled dumper of ``schema``, limited to the fields ``only`` names (unknown
    names are ignored; the schema's order is kept)."""
    if only is None:
        return compile_dumper(schema)
    return compile_dumper(type(schema)(only=[name for name in schema.fields if name in only]))


class Resource:
    """A resource's declaration: its table, schemas and descriptions. A resource module
    subclasses it where its records need more than one table row each."""

    name = None  # the path segment, e.g. "productions"
    table = None
    schema = None  # list record
    detail_schema = None  # defaults to the list record
    title = None  # e.g. "Production"
    description = None
    paged = True  # False: the whole listing is one page

    def __init__(self):
        self.record_query = select(*self.columns())
        self.ids_statement = self.record_query.where(
            self.table.c.id.in_(bindparam("ids", expanding=True))
        )
        self._rank_statements = {}  # by ordering, built once each

    def columns(self):
        return [column for column in self.table.columns if column.name in self.schema.fields]

    def attach(self, connection, rows):
        """Add to ``rows`` (dicts) what they need beyond their own columns."""

    def fetch_listing(self, connection, catalogue, ordering, conditions):
        """(page, rows) of the listing the request asks for.

        Unfiltered and in one key's order, a page is a range of that key's rank.
        Otherwise the listing's ids are found and ordered once per catalogue file, and
        a page is a lookup of its ids.
        """
        size = pagination.PAGE_SIZE if self.paged else None
        if not conditions and ordering.single_key is not None:
            page = pagination.current_page(catalogue.counts.get(self.name, 0), size)
            statement = self._rank_statements.get(ordering.cache_key)
            if statement is None:
                statement = self._rank_statements[ordering.cache_key] = ordering.rank_statement(
                    self.record_query
                )
            bounds = ordering.rank_bounds(page.start, page.stop, page.count)
            rows = [dict(row) for row in connection.execute(statement, bounds).mappings().all()]
        else:
            ids = catalogue.remember(
                ("ids", ordering.cache_key, conditions.key),
                lambda: ordering.sorted_ids(connection, conditions.clauses),
            )
            page = pagination.current_page(len(ids), size)
            rows = self.fetch_ids(connection, ids[page.start : page.stop])
        if rows:
            self.attach(connection, rows)
        return page, rows

    def fetch_ids(self, connection, ids):
        """The records with ``ids``, in that order, without what ``attach`` adds."""
        found = connection.execute(self.ids_statement, {"ids": list(ids)}).mappings().all()
        by_id = {row["id"]: row for row in found}
        return [dict(by_id[record_id]) for record_id in ids]

    def fetch_one(self, connection, record_id):
        query = self.record_query.where(self.table.c.id == record_id)
        row = connection.execute(query).mappings().first()
        if row is None:
            return None
        rows = [dict(row)]
        self.attach(connection, rows)
        return rows[0]

    def describe(self, detail):
        """The body of an OPTIONS answer."""
        keys = list(ordering_keys.KEYS[self.name])
        parameters = {
            "format": FORMAT_HELP,
            "fields": "Comma-separated field names: only these fields of each record.",
        }
        if not detail:
            parameters = {
                "page": 'Page number, from 1; "last" for the last page.'
                + ("" if self.paged else " The whole listing is one page."),
                "ordering": "Comma-separated sort keys, each optionally prefixed with "
                f'"-" for descending: {", ".join(keys)}.',
                **{item.parameter: item.description for item in ordering_keys.FILTERS[self.name]},
                **parameters,
            }
        description = {
            "name": f"{self.title} {'Instance' if detail else 'List'}",
            "description": self.description,
            "renders": [JSON_TYPE],
            "parses": [],
            "parameters": parameters,
        }
        if not detail:
            description["ordering"] = keys
        return description

    def blueprint(self):
        """The blueprint serving ``/api/v1/<name>/`` and ``/api/v1/<name>/<id>/``."""
        bp = Blueprint(self.name, __name__, url_prefix="/api/v1")
        detail_schema = self.detail_schema or self.schema

        def list_view():
            if request.method == "OPTIONS":
                return self.describe(detail=False)
            ordering = ordering_keys.parse(self.name, last_arg("ordering"))
            conditions = filters.parse(ordering_keys.FILTERS[self.name], self.table, request.args)
            page, rows = self.fetch_listing(get_connection(), get_catalogue(), ordering, conditions)
            dump = dumper(self.schema, parse_fields(last_arg("fields")))
            return pagination.envelope(page, [dump(row) for row in rows])

        def detail_view(record_id):
            if request.method == "OPTIONS":
                return self.describe(detail=True)
            row = self.fetch_one(get_connection(), record_id)
            if row is None:
                raise APIError(404)
            return dumper(detail_schema, parse_fields(last_arg("fields")))(row)

        add_view(bp, f"/{self.name}/", list_view)
        add_view(bp, f"/{self.name}/<int(min=1, max={MAX_ID}):record_id>/", detail_view)
        return bp


def add_view(bp, rule, view):
    """Route ``rule`` to ``view`` for GET (and so HEAD) and OPTIONS; the view answers
    OPTIONS itself, with a description."""
    view.provide_automatic_options = False
    bp.add_url_rule(rule, view.__name__, view, methods=["GET", "OPTIONS"])
