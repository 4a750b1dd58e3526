"""What every resource shares: the record URL fields, the nested summaries, and the
list and detail views built from a resource's declaration."""
from flask import Blueprint, request
from marshmallow import Schema, fields
from sqlalchemy import select

from .. import ordering as ordering_keys
from .. import pagination
from ..db import get_catalogue, get_connection
from ..errors import APIError
from ..links import api_url, site_url
from ..rendering import JSON_TYPE, last_arg
from ..serialize import compile_dumper

MAX_ID = 2**63 - 1  # SQLite's integer range; a larger id cannot name a record
SECTIONS = {"production": "productions", "music": "music", "graphics": "graphics"}


def record_url(resource):
    """The ``url`` field: the record's address in the API."""
    return fields.Function(lambda record: api_url(resource, record["id"]))


def service_url(path):
    """The ``service_url`` field: the record's public page, ``path`` formatted with id."""
    return fields.Function(lambda record: site_url(path.format(id=record["id"])))


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
        self._statements = {}  # page statements by ordering, built once each

    def columns(self):
        return [column for column in self.table.columns if column.name in self.schema.fields]

    def attach(self, connection, rows):
        """Add to ``rows`` (dicts) what they need beyond their own columns."""

    def fetch_page(self, connection, ordering, page, catalogue):
        """The rows of ``page`` in ``ordering``, with what ``attach`` adds."""
        statement = self._statements.get(ordering.cache_key)
        if statement is None:
            statement = self._statements[ordering.cache_key] = ordering.statement(
                select(*self.columns())
            )
        rows = ordering.rows(
            connection,
            statement,
            page.start,
            page.stop,
            page.count,
            lambda: catalogue.remember(
                ("order", ordering.cache_key), lambda: ordering.all_ids(connection)
            ),
        )
        if rows:
            self.attach(connection, rows)
        return rows

    def fetch_one(self, connection, record_id):
        query = select(*self.columns()).where(self.table.c.id == record_id)
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
            "format": 'Optional: "api" or "json". The body stays JSON; every url '
            'gets "?format=<value>".',
        }
        if not detail:
            parameters = {
                "page": 'Page number, from 1; "last" for the last page.'
                + ("" if self.paged else " The whole listing is one page."),
                "ordering": "Comma-separated sort keys, each optionally prefixed with "
                f'"-" for descending: {", ".join(keys)}.',
                **parameters,
            }
        return {
            "name": f"{self.title} {'Instance' if detail else 'List'}",
            "description": self.description,
            "renders": [JSON_TYPE],
            "parses": [],
            "ordering": keys,
            "parameters": parameters,
        }

    def blueprint(self):
        """The blueprint serving ``/api/v1/<name>/`` and ``/api/v1/<name>/<id>/``."""
        bp = Blueprint(self.name, __name__, url_prefix=f"/api/v1/{self.name}")
        dump_record = compile_dumper(self.schema)
        dump_detail = compile_dumper(self.detail_schema or self.schema)

        def list_view():
            if request.method == "OPTIONS":
                return self.describe(detail=False)
            ordering = ordering_keys.parse(self.name, last_arg("ordering"))
            count = get_catalogue().counts.get(self.name, 0)
            page = pagination.current_page(count, pagination.PAGE_SIZE if self.paged else None)
            rows = self.fetch_page(get_connection(), ordering, page, get_catalogue())
            return pagination.envelope(page, [dump_record(row) for row in rows])

        def detail_view(record_id):
            if request.method == "OPTIONS":
                return self.describe(detail=True)
            row = self.fetch_one(get_connection(), record_id)
            if row is None:
                raise APIError(404)
            return dump_detail(row)

        for rule, view in (("/", list_view), (f"/<int(max={MAX_ID}):record_id>/", detail_view)):
            view.provide_automatic_options = False
            bp.add_url_rule(rule, view.__name__, view, methods=["GET", "OPTIONS"])
        return bp
