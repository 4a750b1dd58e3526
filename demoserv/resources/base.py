"""What every resource shares: the declaration a resource module fills in, the nested
summaries several resources show, and the list and detail answers served from the
records built at load (the read models: see ``catalogue/build.py``)."""

import functools

import orjson
from flask import Blueprint, current_app, request
from marshmallow import Schema, fields
from sqlalchemy import bindparam, select

from .. import filters, ordering, pagination
from ..db import get_catalogue, get_connection
from ..errors import APIError
from ..links import api_url, request_resolver, site_url
from ..parameters import describe_parameters
from ..rendering import JSON_TYPE, PATH_FORMAT, PATH_FORMAT_ARG, last_arg
from ..shared import MAX_ID, SECTIONS
from . import stored

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


def production_service_url():
    return fields.Function(
        lambda record: site_url(f"/{SECTIONS[record['supertype']]}/{record['id']}/"),
        metadata={**URL, "description": "The production's page on the public site."},
    )


def nested_list(schema):
    return fields.List(fields.Nested(schema))


# Nested summaries that several resources show.


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


class ReleaserNameSchema(Schema):
    """A releaser as memberships and BBS staff show it."""

    url = record_url("releasers")
    id = fields.Integer()
    name = fields.String()


class NickSchema(Schema):
    name = fields.String()
    abbreviation = fields.String()
    releaser = fields.Nested(ReleaserSchema)


class LinkSchema(Schema):
    link_class = fields.String()
    url = fields.String(metadata=URL)


class PartySeriesSchema(Schema):
    url = record_url("party_series")
    service_url = service_url("/parties/series/{id}/")
    id = fields.Integer()
    name = fields.String()
    website = fields.String()


class PartySchema(Schema):
    url = record_url("parties")
    service_url = service_url("/parties/{id}/")
    id = fields.Integer()
    name = fields.String()
    tagline = fields.String()
    start_date = fields.String()
    end_date = fields.String()
    location = fields.String()
    is_online = fields.Boolean()
    country_code = fields.String()
    latitude = fields.Float(allow_none=True)
    longitude = fields.Float(allow_none=True)
    website = fields.String()


class ProductionSchema(Schema):
    url = record_url("productions")
    service_url = production_service_url()
    id = fields.Integer()
    title = fields.String()
    author_nicks = nested_list(NickSchema)
    author_affiliation_nicks = nested_list(NickSchema)
    release_date = fields.String(allow_none=True)
    supertype = fields.String()
    platforms = nested_list(PlatformSchema)
    types = nested_list(ProductionTypeSchema)
    tags = fields.List(fields.String())


def parse_fields(value):
    """The field names ``fields=a,b,c`` asks for, or None for every field."""
    if not value:
        return None
    return frozenset(name.strip() for name in value.split(","))


def json_response(body):
    return current_app.response_class(body, mimetype=JSON_TYPE)


class Resource:
    """A resource's declaration. A resource module makes one instance (a subclass where
    its records need more than their own row) and its views call its methods."""

    name = None  # the path segment, e.g. "productions"
    title = None  # e.g. "Production"
    description = None
    table = None
    details_table = None  # None: the detail record is the list record
    keys = {"id": "id", "name": "name_key"}  # ordering key -> its sort column
    default_key = "name"
    filters = ()
    schema = None  # list record
    detail_schema = None  # defaults to the list record
    record_schema = None  # a line of its catalogue file
    detail_needs = frozenset()  # resources whose list records its detail records nest
    # How its records are stored at load (see stored.py): columns derived from fields,
    # and the nested lists stored as rows of their own tables.
    derived_columns = stored.NAME_KEY
    owns = ()
    # How the upstream's export fills its tables, if the import does not (stored.Upstream).
    upstream = None
    # Fields of its record schema that are one side of a relation shown from both sides
    # and written, in an export, by the other side's records.
    written_by_other_side = ()
    paged = True  # False: the whole listing is one page

    def __init__(self):
        self.sort_keys = ordering.sort_keys(self.table, self.keys)
        self.detail_schema = self.detail_schema or self.schema
        self.list_fields = frozenset(self._output_names(self.schema))
        self._rank_statements = {}
        ids = bindparam("ids", expanding=True)
        self.docs_statement = select(self.table.c.id, self.table.c.doc).where(
            self.table.c.id.in_(ids)
        )
        details = self.details_table if self.details_table is not None else self.table
        self.detail_docs_statement = select(details.c.id, details.c.doc).where(
            details.c.id.in_(ids)
        )
        self.detail_statement = select(details.c.doc).where(details.c.id == bindparam("id"))

    @staticmethod
    def _output_names(schema):
        return [field.data_key or name for name, field in schema.fields.items()]

    # Building the read models (catalogue/build.py calls these at load).

    def complete(self, build, rows):
        """Add to the record ``rows`` (dicts of the record table's columns) what their
        list records need beyond their own columns."""

    def complete_detail(self, build, rows):
        """Likewise for the detail records (after ``complete``)."""

    def search_statement(self):
        """(id, text, ...) of every record in id order: the texts ``search`` looks in."""
        return select(self.table.c.id, self.table.c.name).order_by(self.table.c.id)

    # Serving.

    def fetch_page(self, connection, catalogue, parsed_ordering, conditions, detail):
        """(page, record JSON documents) of the listing the request asks for."""
        size = pagination.PAGE_SIZE if self.paged else None
        if not conditions and parsed_ordering.single_key is not None and not detail:
            page = pagination.current_page(catalogue.counts.get(self.name, 0), size)
            statement = self._rank_statements.get(parsed_ordering.cache_key)
            if statement is None:
                statement = self._rank_statements[parsed_ordering.cache_key] = (
                    parsed_ordering.rank_statement(select(self.table.c.doc))
                )
            bounds = parsed_ordering.rank_bounds(page.start, page.stop, page.count)
            expand = catalogue.expander(self.name)
            return page, [expand(doc) for doc in connection.execute(statement, bounds).scalars()]
        ids = catalogue.listing(self, parsed_ordering, conditions, connection)
        page = pagination.current_page(len(ids), size)
        return page, self.fetch_docs(connection, ids[page.start : page.stop], detail)

    def fetch_docs(self, connection, ids, detail=False):
        """The record JSON of ``ids``, in that order."""
        if not len(ids):
            return []
        statement = self.detail_docs_statement if detail else self.docs_statement
        ids = [int(record_id) for record_id in ids]
        found = dict(connection.execute(statement, {"ids": ids}).all())
        expand = get_catalogue().expander(self.name, self._kind(detail))
        return [expand(found[record_id]) for record_id in ids]

    def _kind(self, detail):
        """Which stored records a detail (or list) answer reads."""
        return "detail" if detail and self.details_table is not None else "list"

    def answer_list(self):
        parsed_ordering = ordering.parse(self, last_arg("ordering"))
        catalogue = get_catalogue()
        conditions = filters.parse(self, request.args, catalogue)
        only = parse_fields(last_arg("fields"))
        detail = only is not None and not only <= self.list_fields
        page, docs = self.fetch_page(
            get_connection(), catalogue, parsed_ordering, conditions, detail
        )
        return json_response(pagination.envelope_json(page, self.render(docs, only)))

    def answer_detail(self, record_id):
        doc = get_connection().execute(self.detail_statement, {"id": record_id}).scalar()
        if doc is None:
            raise APIError(404)
        doc = get_catalogue().expander(self.name, self._kind(True))(doc)
        return json_response(self.render([doc], parse_fields(last_arg("fields")))[1:-1])

    @staticmethod
    def render(docs, only=None):
        """A JSON array of the records ``docs`` (built with link markers) as this request
        sees them: its addresses, field name and field selection."""
        body = request_resolver()(b"[" + b",".join(docs) + b"]")
        if only is None:
            return body
        return orjson.dumps(
            [
                {name: value for name, value in record.items() if name in only}
                for record in orjson.loads(body)
            ]
        )

    def describe(self, detail):
        """The body of an OPTIONS answer."""
        description = {
            "name": f"{self.title} {'Instance' if detail else 'List'}",
            "description": self.description,
            "renders": [JSON_TYPE],
            "parses": [],
            "parameters": describe_parameters(self, detail),
        }
        if not detail:
            description["ordering"] = list(self.keys)
        return description

    def blueprint(self, list_view, detail_view):
        """The blueprint serving ``list_view`` at ``/api/v1/<name>/`` and ``detail_view`` at
        ``/api/v1/<name>/<id>/``."""
        bp = Blueprint(self.name, __name__, url_prefix="/api/v1")
        add_view(bp, f"/{self.name}/", list_view, lambda: self.describe(detail=False))
        add_view(bp, f"/{self.name}/{RECORD_ID}/", detail_view, lambda: self.describe(detail=True))
        return bp


RECORD_ID = f"<int(min=1, max={MAX_ID}):record_id>"


def add_view(bp, rule, view, describe):
    """Route ``rule`` (which ends with ``/``) to ``view`` for GET (and so HEAD), and
    OPTIONS to ``describe()``; and the same path with a format suffix in place of its
    trailing slash (``.../productions.json``: rendering.negotiate reads the suffix)."""

    @functools.wraps(view)
    def routed(**kwargs):
        kwargs.pop(PATH_FORMAT_ARG, None)
        if request.method == "OPTIONS":
            return describe()
        return view(**kwargs)

    routed.provide_automatic_options = False
    for each in (rule, suffixed(rule)):
        bp.add_url_rule(each, view.__name__, routed, methods=["GET", "OPTIONS"])


def suffixed(rule):
    """``rule`` with a format suffix in place of its trailing slash (the API root keeps
    its slash: ``/api/v1/.json``)."""
    return (rule if rule.endswith("/api/v1/") else rule[:-1]) + "." + PATH_FORMAT
