"""How a resource is served: its list, detail, sub-listing and OPTIONS answers, read from
the records built at load (the read models: see ``loader/build.py``), and their
endpoints with their OpenAPI operations — every resource's, derived from its
declaration (``resources/declaration.py``)."""

import functools

import orjson
from flask import current_app, request
from sqlalchemy import bindparam, select

from ...api import filters, ordering
from ...api.parameters import describe_parameters
from ...listings import kept
from ...resources import BY_NAME
from ...store.values import MAX_ID
from .. import pagination
from ..address_style import request_resolver
from ..db import get_catalogue, get_connection
from ..error_handlers import APIError
from ..negotiation import JSON_TYPE, last_arg
from . import openapi
from .endpoints import Endpoint, options_body

RECORD_ID = f"<int(min=1, max={MAX_ID}):record_id>"
CHUNK = 5000  # ids bound in one query: within SQLite's limit on parameters


def parse_fields(value):
    """The field names ``fields=a,b,c`` asks for, or None for every field."""
    if not value:
        return None
    return frozenset(name.strip() for name in value.split(","))


def json_response(body):
    return current_app.response_class(body, mimetype=JSON_TYPE)


def fetch_docs(connection, statement, ids, expand):
    """The records ``ids`` (as ``statement``, which takes ``ids``, finds (id, doc)), in
    that order, each stored record turned into its template by ``expand``."""
    ids = [int(record_id) for record_id in ids]
    docs = []
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        found = dict(connection.execute(statement, {"ids": chunk}).all())
        docs += [expand(found[record_id]) for record_id in chunk]
    return docs


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


class Serving:
    """The answers of a resource, from its declaration (``declaration.Resource``)."""

    def __init__(self, resource):
        self.resource = resource
        self.list_fields = frozenset(self._output_names(resource.schema))
        self._rank_statements = {}
        ids = bindparam("ids", expanding=True)
        table = resource.table
        self.docs_statement = select(table.c.id, table.c.doc).where(table.c.id.in_(ids))
        details = resource.details_table if resource.details_table is not None else table
        self.detail_docs_statement = select(details.c.id, details.c.doc).where(
            details.c.id.in_(ids)
        )
        self.detail_statement = select(details.c.doc).where(details.c.id == bindparam("id"))

    @staticmethod
    def _output_names(schema):
        return [field.data_key or name for name, field in schema.fields.items()]

    @staticmethod
    def by_rank(parsed_ordering, conditions, detail):
        """Whether the listing is a single key's rank range, read from the file, rather
        than one found from the listing arrays (kept, or through the guard)."""
        return not conditions and parsed_ordering.single_key is not None and not detail

    def fetch_page(self, connection, catalogue, parsed_ordering, conditions, detail):
        """(page, record JSON documents) of the listing the request asks for."""
        resource = self.resource
        size = resource.page_size
        if self.by_rank(parsed_ordering, conditions, detail):
            page = pagination.current_page(catalogue.counts.get(resource.name, 0), size)
            statement = self._rank_statements.get(parsed_ordering.cache_key)
            if statement is None:
                statement = self._rank_statements[parsed_ordering.cache_key] = (
                    parsed_ordering.rank_statement(select(resource.table.c.doc))
                )
            bounds = parsed_ordering.rank_bounds(page.start, page.stop, page.count)
            expand = catalogue.expander(resource.name)
            return page, [expand(doc) for doc in connection.execute(statement, bounds).scalars()]
        ids = catalogue.listing(resource, parsed_ordering, conditions)
        page = pagination.current_page(len(ids), size)
        return page, self.fetch_docs(connection, ids[page.start : page.stop], detail)

    def fetch_docs(self, connection, ids, detail=False):
        """The record JSON of ``ids``, in that order."""
        if not len(ids):
            return []
        statement = self.detail_docs_statement if detail else self.docs_statement
        expand = get_catalogue().expander(self.resource.name, self._kind(detail))
        return fetch_docs(connection, statement, ids, expand)

    def _kind(self, detail):
        """Which stored records a detail (or list) answer reads."""
        return "detail" if detail and self.resource.details_table is not None else "list"

    def asked(self, args, catalogue):
        """What ``args`` ask of the list in ``catalogue``: (ordering, conditions, the
        fields asked for, whether they need the detail records)."""
        parsed_ordering = ordering.parse(self.resource, last_arg("ordering", args))
        conditions = filters.parse(self.resource, args, catalogue)
        only = parse_fields(last_arg("fields", args))
        detail = only is not None and not only <= self.list_fields
        return parsed_ordering, conditions, only, detail

    def new_listing(self, args, catalogue, listings):
        """Whether ``args`` ask for a listing that the listings' guard must find: not a
        rank range, and not kept in ``listings`` (the app's cache of them)."""
        parsed_ordering, conditions, _, detail = self.asked(args, catalogue)
        if self.by_rank(parsed_ordering, conditions, detail):
            return False
        return not kept.is_kept(
            listings, catalogue.file_id, self.resource, parsed_ordering, conditions
        )

    def answer_list(self):
        catalogue = get_catalogue()
        parsed_ordering, conditions, only, detail = self.asked(request.args, catalogue)
        page, docs = self.fetch_page(
            get_connection(), catalogue, parsed_ordering, conditions, detail
        )
        return json_response(pagination.envelope_json(page, render(docs, only)))

    def answer_detail(self, record_id):
        doc = get_connection().execute(self.detail_statement, {"id": record_id}).scalar()
        if doc is None:
            raise APIError(404)
        doc = get_catalogue().expander(self.resource.name, self._kind(True))(doc)
        return json_response(render([doc], parse_fields(last_arg("fields")))[1:-1])

    def answer_sub_listing(self, sub_listing, listed, record_id):
        """The list records of ``listed`` (its Serving) that ``sub_listing`` finds."""
        connection = get_connection()
        ids = sub_listing.find(connection, record_id)
        if ids is None:
            raise APIError(404)
        expand = get_catalogue().expander(listed.resource.name)
        docs = fetch_docs(connection, listed.docs_statement, ids, expand)
        return json_response(render(docs, parse_fields(last_arg("fields"))))

    def describe(self, detail):
        """The body of an OPTIONS answer."""
        resource = self.resource
        body = options_body(
            f"{resource.title} {'Instance' if detail else 'List'}",
            resource.description,
            describe_parameters(resource, detail),
        )
        if not detail:
            body["ordering"] = list(resource.keys)
        return body

    def describe_sub_listing(self, name):
        return options_body(
            f"{self.resource.title} {name.replace('_', ' ').title()} List",
            self.resource.sub_listings[name].description,
            self.describe(detail=True)["parameters"],
        )

    def endpoints(self):
        """The list at ``/<name>/`` and the detail at ``/<name>/<id>/``."""
        name = self.resource.name
        return [
            Endpoint(
                f"/{name}/",
                f"{name}_list",
                self.answer_list,
                self._list_operations,
                functools.partial(self.describe, False),
                lists=name,
                new_listing=self.new_listing,
            ),
            Endpoint(
                f"/{name}/{RECORD_ID}/",
                f"{name}_detail",
                self.answer_detail,
                self._detail_operations,
                functools.partial(self.describe, True),
                path_parameters=(openapi.ID_PARAMETER,),
            ),
        ]

    def sub_listing_endpoints(self, served):
        """Each sub-listing at ``/<name>/<id>/<sub>/`` (``served``: the Serving of every
        resource, by name)."""
        name = self.resource.name
        return [
            Endpoint(
                f"/{name}/{RECORD_ID}/{sub_name}/",
                f"{name}_{sub_name}",
                functools.partial(self.answer_sub_listing, sub_listing, served[sub_listing.listed]),
                functools.partial(self._sub_listing_operations, sub_name),
                functools.partial(self.describe_sub_listing, sub_name),
                path_parameters=(openapi.ID_PARAMETER,),
            )
            for sub_name, sub_listing in self.resource.sub_listings.items()
        ]

    def _list_operations(self, spec):
        resource = self.resource
        record = openapi.register(spec, resource.schema)
        detail = openapi.register(spec, resource.detail_schema or resource.schema)
        spec.components.schema(f"{record}Page", openapi.page(record, resource.page_size, detail))
        return {
            "get": {
                "summary": f"{resource.title} list: {resource.description}",
                "parameters": openapi.list_parameters(resource),
                "responses": openapi.answers(
                    openapi.json_or_jsonp(openapi.ref(f"{record}Page"), "One page of the listing."),
                    "404",
                    "406",
                    "503",
                ),
            },
            "options": openapi.options(f"the {resource.title.lower()} list"),
        }

    def _detail_operations(self, spec):
        resource = self.resource
        detail = openapi.register(spec, resource.detail_schema or resource.schema)
        title = resource.title.lower()
        return {
            "get": {
                "summary": f"One {title}",
                "parameters": openapi.COMMON_PARAMETERS,
                "responses": openapi.answers(
                    openapi.json_or_jsonp(openapi.ref(detail), f"The {title}."), "404", "406", "503"
                ),
            },
            "options": openapi.options(f"a {title}"),
        }

    def _sub_listing_operations(self, name, spec):
        sub_listing = self.resource.sub_listings[name]
        listed = BY_NAME[sub_listing.listed]
        record = openapi.register(spec, listed.schema)
        title = self.resource.title.lower()
        return {
            "get": {
                "summary": sub_listing.description,
                "parameters": openapi.COMMON_PARAMETERS,
                "responses": openapi.answers(
                    openapi.json_or_jsonp(
                        {"type": "array", "items": openapi.ref(record)},
                        f"Every such {listed.title.lower()} of the {title}.",
                    ),
                    "404",
                    "406",
                    "503",
                ),
            },
            "options": openapi.options(f"a {title}'s {name.replace('_', ' ')}"),
        }


def endpoints(resources):
    """Every resource's lists and details, then every sub-listing (the OpenAPI
    document's order)."""
    served = {resource.name: Serving(resource) for resource in resources}
    return [
        *(endpoint for serving in served.values() for endpoint in serving.endpoints()),
        *(
            endpoint
            for serving in served.values()
            for endpoint in serving.sub_listing_endpoints(served)
        ),
    ]
