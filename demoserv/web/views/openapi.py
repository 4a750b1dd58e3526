"""``/api/v1/openapi.json``, generated with apispec from the table of endpoints (each
declares its operations, built with the pieces here from the marshmallow schemas and the
ordering and filter declarations), and ``/api/v1/docs/``, a page that renders it."""

import copy
from importlib import resources as package_files

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import current_app, request
from marshmallow import Schema, fields

from ...api import ordering, parameters
from ...store.values import MAX_ID
from ...version import __version__
from ..conditional import answers_as
from ..db import CatalogueUnavailable, get_catalogue
from ..negotiation import (
    API_PREFIX,
    CALLBACK,
    DOCS_PATH,
    FORMATS,
    HTML_TYPE,
    JAVASCRIPT_TYPE,
    JSON_TYPE,
    MAX_CALLBACK,
    PATH_FORMATS,
)
from . import adhoc
from .endpoints import Endpoint, kept, routed

ERROR = {"$ref": "#/components/schemas/Error"}
ERRORS = {
    "400": "A parameter has a value it cannot take (detail names it), or the request "
    "cannot be answered as sent (its Host header, a body).",
    "404": "No such record, or a page that is not a page of the listing.",
    "406": "The Accept header admits no JSON (nor prefers HTML).",
    "410": "A catalogue version the history of changes does not hold: fetch the lists again.",
    "414": "The path or query string is too long to read.",
    "416": "A Range that the file does not hold.",
    "431": "The request's headers are too long to read.",
    "503": "No catalogue can be read, or too many new listings are being found at once.",
}
# Every request may be refused before it is read (request_limits.py).
REFUSALS = ("400", "414", "431")
NOT_MODIFIED = {
    "description": "Not modified: If-None-Match names this answer's ETag (or is *), or "
    "If-Modified-Since is not before the catalogue's load. No body."
}
# Which filters a catalogue can apply: a filter parameter names the data it needs here,
# and the document served for a catalogue without it does not offer it (``offered``).
FEATURE = "x-demoserv-feature"


class ErrorSchema(Schema):
    detail = fields.String(required=True, metadata={"description": "What was wrong."})


# Refused before the answer's form is negotiated: always JSON.
JSON_ONLY = ("406", "414")
HTML_PAGE = {
    "schema": {
        "type": "string",
        "description": "The browsable page of the JSON answer, for an Accept that prefers "
        "text/html (a browser's) and no format.",
    }
}


def _json(schema, description, html=True):
    """An answer as JSON, and (``html``) as the browsable page of that JSON."""
    content = {JSON_TYPE: {"schema": schema}}
    if html:
        content[HTML_TYPE] = HTML_PAGE
    return {"description": description, "content": content}


def json_or_jsonp(schema, description):
    """A 200 answer: JSON, or (format=jsonp, Accept: application/javascript) the same
    JSON wrapped in a callback, or its browsable page."""
    answer = _json(schema, description)
    answer["content"][JAVASCRIPT_TYPE] = {
        "schema": {"type": "string", "description": "callback(<the JSON body>);"}
    }
    return answer


def errors(*statuses):
    """The error answers ``statuses`` and those of every request (``REFUSALS``), each
    also a browsable page but for ``JSON_ONLY``."""
    return {
        status: _json(ERROR, ERRORS[status], html=status not in JSON_ONLY)
        for status in sorted({*statuses, *REFUSALS})
    }


def answers(ok, *statuses):
    """The answers of a GET under the API's or the upstream's prefixes: ``ok``, 304 to
    a client that holds it (conditional.py), and the errors ``statuses``."""
    return {"200": ok, "304": NOT_MODIFIED, **errors(*statuses)}


def ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def page(name, page_size, detail=None):
    """A page of ``name`` records (at most ``page_size``; None: the whole listing); with
    ``fields=``, a list may name detail fields too."""
    item = ref(name)
    if detail is not None and detail != name:
        item = {
            "anyOf": [item, ref(detail)],
            "description": "A list record; with fields=, the fields named of the detail record.",
        }
    nullable_url = {"type": ["string", "null"], "format": "uri"}
    return {
        "type": "object",
        "required": ["count", "next", "previous", "results"],
        "additionalProperties": False,
        "properties": {
            "count": {
                "type": "integer",
                "minimum": 0,
                "description": "Records in the whole listing.",
            },
            "next": {**nullable_url, "description": "The next page; null on the last."},
            "previous": {**nullable_url, "description": "The previous page; null on the first."},
            "results": {
                "type": "array",
                "items": item,
                **({"maxItems": page_size} if page_size else {}),
            },
        },
    }


def parameter(name, description, schema, **more):
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
        **more,
    }


RENDERING_PARAMETERS = [
    parameter(
        "format",
        parameters.FORMAT,
        {"type": "string", "enum": [*FORMATS, ""]},
    ),
    # Checked whenever it is given, so that one pattern says what the server takes.
    parameter(
        "callback",
        parameters.CALLBACK,
        {"type": "string", "pattern": f"^({CALLBACK.pattern})?$", "maxLength": MAX_CALLBACK},
    ),
]
COMMON_PARAMETERS = [
    *RENDERING_PARAMETERS,
    parameter("fields", parameters.FIELDS, {"type": "string"}),
]
# A page number (at most 18 digits, leading zeros allowed), "last", or empty: page 1.
PAGE_SCHEMA = {"type": "string", "pattern": "^(0*[1-9][0-9]*|last)?$", "maxLength": 18}
ID_PARAMETER = {
    "name": "id",
    "in": "path",
    "required": True,
    "description": "A record id: ASCII digits, from 1 to the largest id.",
    "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
}
SUFFIX_PARAMETER = {
    "name": "suffix",
    "in": "path",
    "required": True,
    "description": "A format suffix in place of the trailing slash: what format= means; "
    "every url in the answer ends likewise.",
    "schema": {"type": "string", "enum": list(PATH_FORMATS)},
}


def _with_suffixes(paths, endpoints):
    """``paths`` and, after each path served with a format suffix too, the same path with
    the suffix in place of its trailing slash (``/api/v1/productions.{suffix}``; the
    root: ``/api/v1/.{suffix}``)."""
    suffixed_paths = {endpoint.document_path for endpoint in endpoints if endpoint.suffixed}
    result = {}
    for path, item in paths.items():
        result[path] = item
        if path not in suffixed_paths:
            continue
        suffixed = (path if path == f"{API_PREFIX}/" else path[:-1]) + ".{suffix}"
        item = copy.deepcopy(item)
        item["parameters"] = [*item.get("parameters", []), SUFFIX_PARAMETER]
        result[suffixed] = item
    return result


def _character_class(characters):
    """A regular expression class of exactly ``characters``, each as ``\\uXXXX`` (read
    alike by ECMA-262, Python's re and the Rust regex crate), consecutive ones as ranges."""
    points = sorted(set(map(ord, characters)))
    ranges = []
    for point in points:
        if ranges and ranges[-1][1] == point - 1:
            ranges[-1][1] = point
        else:
            ranges.append([point, point])
    return "[" + "".join(_class_range(low, high) for low, high in ranges) + "]"


def _class_range(low, high):
    return f"\\u{low:04x}" if low == high else f"\\u{low:04x}-\\u{high:04x}"


def _ordering_pattern(keys):
    # Around each term, exactly what the parser strips from it (ordering.TERM_SPACES).
    space = _character_class(ordering.TERM_SPACES) + "*"
    term = f"{space}-?({'|'.join(keys)}){space}"
    return f"^{term}(,{term})*$"


def list_parameters(resource):
    keys = list(resource.keys)
    described = parameters.describe_parameters(resource, detail=False)
    result = [
        parameter("page", described["page"], PAGE_SCHEMA),
        parameter(
            "ordering",
            described["ordering"],
            {
                "type": "string",
                "pattern": _ordering_pattern(keys),
                "default": resource.default_key,
            },
            example=f"-{keys[1]}",
        ),
    ]
    for item in resource.filters:
        extra = {"style": "form", "explode": True} if item.repeatable else {}
        if item.feature:
            extra[FEATURE] = item.feature
        result.append(parameter(item.parameter, described[item.parameter], item.schema, **extra))
    return result + COMMON_PARAMETERS


def options(description):
    return {
        "summary": f"Describe: {description}",
        "parameters": RENDERING_PARAMETERS,
        "responses": {
            "200": json_or_jsonp(
                {"type": "object"}, "What the resource is and which parameters it takes."
            ),
            **errors("404", "406"),
        },
    }


def methods_only(what, negotiated=True):
    """The OPTIONS answer of a path that is not a resource: no body, only its headers
    (``negotiated``: under the API's prefix, where format= and Accept are read)."""
    return {
        "summary": f"The methods {what} allows",
        **({"parameters": RENDERING_PARAMETERS} if negotiated else {}),
        "responses": {
            "200": {"description": "No body: the Allow header names the methods."},
            **errors(*(["406"] if negotiated else [])),
        },
    }


def register(spec, schema):
    """Add a marshmallow schema's component (unless a nested use added it already) and
    return its name."""
    name = type(schema).__name__.removesuffix("Schema")
    if name not in spec.components.schemas:
        spec.components.schema(name, schema=type(schema))
    # Component names are class names: two classes of one name would share a component.
    refs = spec.plugins[0].converter.refs
    owners = {key[0] for key, ref in refs.items() if ref == name}
    if owners - {type(schema)}:
        raise ValueError(f"two schemas are named {name}Schema; rename one")
    return name


def build(endpoints):
    """The OpenAPI document of ``endpoints`` (and the ``/api/adhoc/`` paths) as a dict."""
    spec = APISpec(
        title="demoserv",
        version=__version__,
        openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        info={"description": "A read-only, paginated JSON API over a demoscene catalogue."},
    )
    spec.components.schema("Error", schema=ErrorSchema)
    for endpoint in endpoints:
        spec.path(
            path=endpoint.document_path,
            parameters=list(endpoint.path_parameters) or None,
            operations=endpoint.operations(spec),
        )
    document = spec.to_dict()
    document["paths"] = _with_suffixes(document["paths"], endpoints)
    document["paths"].update(adhoc.openapi_paths(errors, NOT_MODIFIED))
    return document


DOCS_TYPE = "text/html; charset=utf-8"
DOCS_PAGE = package_files.files(__package__).joinpath("docs.html").read_bytes()


def renamed(value, old, new):
    """``value`` with every ``old`` property (and required entry) called ``new``."""
    if isinstance(value, dict):
        return {
            (new if key == old else key): (
                [new if item == old else item for item in item_value]
                if key == "required" and isinstance(item_value, list)
                else renamed(item_value, old, new)
            )
            for key, item_value in value.items()
        }
    if isinstance(value, list):
        return [renamed(item, old, new) for item in value]
    return value


def offered(value, features):
    """The document ``value`` for a catalogue that holds ``features`` (None: unknown,
    every filter offered): without the filters it cannot apply, and without their
    ``FEATURE`` marks."""
    if isinstance(value, dict):
        return {key: offered(item, features) for key, item in value.items() if key != FEATURE}
    if isinstance(value, list):
        return [offered(item, features) for item in value if _applies(item, features)]
    return value


def _applies(item, features):
    needed = item.get(FEATURE) if isinstance(item, dict) else None
    return needed is None or features is None or needed in features


def _features():
    try:
        return get_catalogue().features
    except CatalogueUnavailable:
        return None  # nothing can be listed: every filter is described


def _kept_document():
    """This document, built once an app and kept for each set of features (the
    filters a catalogue can apply), with the field name the app serves."""
    cache = kept("openapi_document")
    features = _features()
    spec = cache.find(("document", features))
    if spec is None:
        spec = offered(build(routed().endpoints), features)
        spec = renamed(spec, "service_url", current_app.config["SERVICE_URL_FIELD"])
        cache.keep(("document", features), spec, len(current_app.json.dumps(spec)))
    return spec


def document():
    """This document, with the request's server."""
    return {**_kept_document(), "servers": [{"url": request.site_root}]}


def kept_with_document(key, make):
    """What ``make()`` makes of this app's document (the browsable page's forms: their
    fields' names and their text), kept beside it under ``key`` and the catalogue's
    features (the filters the document offers)."""
    cache = kept("openapi_document")
    key = (key, _features())
    made = cache.find(key)
    if made is None:
        made = make()
        cache.keep(key, made, sum(map(len, made[1:])) + 1024)
    return made


def query_parameters(name):
    """The query parameters this app's document gives the GET of the endpoint ``name``
    (the browsable page's form is made of them)."""
    endpoint = next(each for each in routed().endpoints if each.name == name)
    operation = _kept_document()["paths"][endpoint.document_path]["get"]
    return [item for item in operation.get("parameters", ()) if item["in"] == "query"]


@answers_as(DOCS_TYPE)
def docs():
    return current_app.response_class(DOCS_PAGE, content_type=DOCS_TYPE)


ENDPOINTS = [
    Endpoint(
        "/openapi.json",
        "openapi_document",
        document,
        lambda spec: {
            "get": {
                "summary": "This document: for the catalogue served, it offers only the "
                "filters that catalogue can apply",
                "parameters": RENDERING_PARAMETERS,
                "responses": answers(json_or_jsonp({"type": "object"}, "OpenAPI 3.1."), "406"),
            },
            "options": methods_only("this document"),
        },
        # The document (about 300 KB of JSON, one for each set of features); not a setting.
        kept_bytes=4 * 1024 * 1024,
    ),
    Endpoint(
        DOCS_PATH.removeprefix(API_PREFIX),
        "docs_page",
        docs,
        lambda spec: {
            "get": {
                "summary": "A page that renders this document",
                "responses": answers({"description": "HTML", "content": {"text/html": {}}}),
            },
            "options": methods_only("the docs page", negotiated=False),
        },
    ),
]
