"""``/api/v1/openapi.json``, generated with apispec from the marshmallow schemas and the
ordering and filter declarations, and ``/api/v1/docs/``, a page that renders it."""

import copy
from importlib import resources as package_files

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from flask import Blueprint, current_app, request
from marshmallow import Schema, fields

from ...api import ordering, parameters
from ...byte_cache import ByteCache
from ...loader import status_facts
from ...resources import BY_NAME, RESOURCES
from ...store.values import MAX_ID
from ...version import __version__
from ..conditional import answers_as
from ..negotiation import API_PREFIX, DOCS_PATH, JAVASCRIPT_TYPE, JSON_TYPE, PATH_FORMATS
from . import adhoc, changes, root
from .status import STATUS_PATH

OPENAPI_PATH = f"{API_PREFIX}/openapi.json"

ERROR = {"$ref": "#/components/schemas/Error"}
ERRORS = {
    "400": "A parameter has a value it cannot take; detail names it.",
    "404": "No such record, or a page that is not a page of the listing.",
    "406": "The Accept header admits no JSON.",
    "410": "A catalogue version the history of changes does not hold: fetch the lists again.",
    "414": "The path or query string is too long to read.",
    "503": "No catalogue can be read.",
}


class ErrorSchema(Schema):
    detail = fields.String(required=True, metadata={"description": "What was wrong."})


def _json(schema, description):
    return {"description": description, "content": {JSON_TYPE: {"schema": schema}}}


def _json_or_jsonp(schema, description):
    """A 200 answer: JSON, or (format=jsonp, Accept: application/javascript) the same
    JSON wrapped in a callback."""
    answer = _json(schema, description)
    answer["content"][JAVASCRIPT_TYPE] = {
        "schema": {"type": "string", "description": "callback(<the JSON body>);"}
    }
    return answer


def _errors(*statuses):
    # Any request may be too long to read (guard.py): 414, whatever the operation.
    return {status: _json(ERROR, ERRORS[status]) for status in (*statuses, "414")}


def _ref(name):
    return {"$ref": f"#/components/schemas/{name}"}


def _page(name, page_size, detail=None):
    """A page of ``name`` records (at most ``page_size``; None: the whole listing); with
    ``fields=``, a list may name detail fields too."""
    item = _ref(name)
    if detail is not None and detail != name:
        item = {
            "anyOf": [item, _ref(detail)],
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


def _parameter(name, description, schema, **more):
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema,
        **more,
    }


COMMON_PARAMETERS = [
    _parameter(
        "format",
        parameters.FORMAT,
        {"type": "string", "enum": ["api", "json", "jsonp", ""]},
    ),
    # Ignored unless the answer is JSONP (as upstream), so any string is valid here.
    _parameter("callback", parameters.CALLBACK, {"type": "string"}),
    _parameter("fields", parameters.FIELDS, {"type": "string"}),
]
SUFFIX_PARAMETER = {
    "name": "suffix",
    "in": "path",
    "required": True,
    "description": "A format suffix in place of the trailing slash: what format= means; "
    "every url in the answer ends likewise.",
    "schema": {"type": "string", "enum": list(PATH_FORMATS)},
}


def _with_suffixes(paths):
    """``paths`` and, after each API path, the same path with a format suffix in place
    of its trailing slash (``/api/v1/productions.{suffix}``; the root: ``/api/v1/.{suffix}``)."""
    result = {}
    for path, item in paths.items():
        result[path] = item
        if path in (OPENAPI_PATH, DOCS_PATH):
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


def _list_parameters(resource):
    keys = list(resource.keys)
    described = parameters.describe_parameters(resource, detail=False)
    result = [
        _parameter("page", described["page"], {"type": "string", "pattern": "^([0-9]+|last)?$"}),
        _parameter(
            "ordering",
            described["ordering"],
            {"type": "string", "pattern": _ordering_pattern(keys)},
            example=f"-{keys[1]}",
        ),
    ]
    for item in resource.filters:
        extra = {"style": "form", "explode": True} if item.repeatable else {}
        result.append(_parameter(item.parameter, described[item.parameter], item.schema, **extra))
    return result + COMMON_PARAMETERS


def _options(description):
    return {
        "summary": f"Describe: {description}",
        "responses": {
            "200": _json_or_jsonp(
                {"type": "object"}, "What the resource is and which parameters it takes."
            ),
            **_errors("400", "404"),
        },
    }


def _methods_only(what):
    """The OPTIONS answer of a path that is not a resource: no body, only its headers."""
    return {
        "summary": f"The methods {what} allows",
        "responses": {"200": {"description": "No body: the Allow header names the methods."}},
    }


def _register(spec, schema):
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


def _status_schema():
    text = {"type": ["string", "null"]}
    source = {
        "type": "object",
        "description": "Where the catalogue came from; null where not known.",
        "additionalProperties": False,
        "required": list(status_facts.SOURCE_KEYS),
        "properties": {
            "kind": {
                "type": ["string", "null"],
                "enum": ["url", "file", "folder", None],
                "description": "An export's address, an export file or a catalogue folder.",
            },
            "source": {**text, "description": "The address, or the file's or folder's name."},
            "etag": {**text, "description": "The ETag the export was sent with."},
            "last_modified": {**text, "description": "The export's Last-Modified."},
            "size": {"type": ["integer", "null"], "minimum": 0, "description": "Bytes."},
            "sha256": {**text, "description": "SHA-256 of the export's bytes, in hex."},
            "export_date": {**text, "description": "The date the dump states, if any."},
        },
    }
    catalogue = {
        "version": {"type": "string", "description": "The records' digest (ETags use it)."},
        "records_since": {
            "type": "string",
            "description": "Since when these records are served (Last-Modified).",
        },
        "loaded_at": {**text, "description": "When this file was built (UTC)."},
        "schema_version": {
            "type": "string",
            "description": "A digest of the declarations the file was built with.",
        },
        "source": source,
    }
    counts = {
        "type": "object",
        "additionalProperties": {"type": "integer", "minimum": 0},
        "description": "Records of each resource.",
    }
    previous = {
        "type": ["object", "null"],
        "description": "The catalogue kept for a rollback; null if none.",
        "additionalProperties": False,
        "required": list(catalogue),
        "properties": catalogue,
    }
    change_counts = {
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "additionalProperties": False,
            "required": ["added", "changed", "removed"],
            "properties": {
                name: {"type": "integer", "minimum": 0} for name in ("added", "changed", "removed")
            },
        },
        "description": "Records added, changed and removed, by resource.",
    }
    load = {"version": {"type": "string"}, "loaded_at": {"type": "string"}}
    changes_facts = {
        "type": ["object", "null"],
        "description": "The history of changes (/api/v1/changes/); null if none.",
        "additionalProperties": False,
        "required": ["last_load", "since"],
        "properties": {
            "last_load": {
                "type": "object",
                "description": "The last load that changed records, and its counts "
                "(empty where it started the history).",
                "additionalProperties": False,
                "required": [*load, "counts"],
                "properties": {**load, "counts": change_counts},
            },
            "since": {
                "type": "object",
                "description": "The oldest load the history holds: how far back it goes.",
                "additionalProperties": False,
                "required": list(load),
                "properties": load,
            },
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [*catalogue, "counts", "changes", "previous"],
        "properties": {
            **catalogue,
            "counts": counts,
            "changes": changes_facts,
            "previous": previous,
        },
    }


def _changes_entry():
    text = {"type": "string"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["resource", "id", "change", "url", "version", "loaded_at"],
        "properties": {
            "resource": {"type": "string", "enum": [resource.name for resource in RESOURCES]},
            "id": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
            "change": {"type": "string", "enum": ["added", "changed", "removed"]},
            "url": {
                "type": ["string", "null"],
                "format": "uri",
                "description": "The record's detail address; null for a removed record.",
            },
            "version": {**text, "description": "The version of the load that last changed it."},
            "loaded_at": {**text, "description": "When that load's records were served (UTC)."},
        },
    }


def _changes_parameters():
    described = changes.PARAMETERS
    names = [resource.name for resource in RESOURCES]
    return [
        _parameter("since", described["since"], {"type": "string", "pattern": "^([0-9a-f]{32})?$"}),
        _parameter("resource", described["resource"], {"type": "string", "enum": [*names, ""]}),
        _parameter("page", described["page"], {"type": "string", "pattern": "^([0-9]+|last)?$"}),
        *(item for item in COMMON_PARAMETERS if item["name"] in described),
    ]


def build():
    """The OpenAPI document as a dict."""
    spec = APISpec(
        title="demoserv",
        version=__version__,
        openapi_version="3.1.0",
        plugins=[MarshmallowPlugin()],
        info={"description": "A read-only, paginated JSON API over a demoscene catalogue."},
    )
    spec.components.schema("Error", schema=ErrorSchema)
    spec.path(
        path=f"{API_PREFIX}/",
        operations={
            "get": {
                "summary": "The address of every listing",
                "responses": {
                    "200": _json_or_jsonp(
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "required": [resource.name for resource in RESOURCES],
                            "properties": {
                                resource.name: {"type": "string", "format": "uri"}
                                for resource in RESOURCES
                            },
                        },
                        "Listing addresses by resource name.",
                    ),
                    **_errors("400", "404", "406"),
                },
            },
            "options": _options("the API root"),
        },
    )
    id_parameter = {
        "name": "id",
        "in": "path",
        "required": True,
        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
    }
    records = {}  # resource -> the component name of its list record
    for resource in RESOURCES:
        record = records[resource.name] = _register(spec, resource.schema)
        detail = _register(spec, resource.detail_schema or resource.schema)
        spec.components.schema(f"{record}Page", _page(record, resource.page_size, detail))
        spec.path(
            path=f"{API_PREFIX}/{resource.name}/",
            operations={
                "get": {
                    "summary": f"{resource.title} list: {resource.description}",
                    "parameters": _list_parameters(resource),
                    "responses": {
                        "200": _json_or_jsonp(_ref(f"{record}Page"), "One page of the listing."),
                        **_errors("400", "404", "406", "503"),
                    },
                },
                "options": _options(f"the {resource.title.lower()} list"),
            },
        )
        spec.path(
            path=f"{API_PREFIX}/{resource.name}/{{id}}/",
            parameters=[id_parameter],
            operations={
                "get": {
                    "summary": f"One {resource.title.lower()}",
                    "parameters": COMMON_PARAMETERS,
                    "responses": {
                        "200": _json_or_jsonp(_ref(detail), f"The {resource.title.lower()}."),
                        **_errors("400", "404", "406", "503"),
                    },
                },
                "options": _options(f"a {resource.title.lower()}"),
            },
        )
    for resource in RESOURCES:
        title = resource.title.lower()
        for name, sub_listing in resource.sub_listings.items():
            listed = BY_NAME[sub_listing.listed]
            spec.path(
                path=f"{API_PREFIX}/{resource.name}/{{id}}/{name}/",
                parameters=[id_parameter],
                operations={
                    "get": {
                        "summary": sub_listing.description,
                        "parameters": COMMON_PARAMETERS,
                        "responses": {
                            "200": _json_or_jsonp(
                                {"type": "array", "items": _ref(records[listed.name])},
                                f"Every such {listed.title.lower()} of the {title}.",
                            ),
                            **_errors("400", "404", "406", "503"),
                        },
                    },
                    "options": _options(f"a {title}'s {name.replace('_', ' ')}"),
                },
            )
    spec.components.schema("Status", _status_schema())
    spec.path(
        path=STATUS_PATH,
        operations={
            "get": {
                "summary": "What this mirror serves, for monitors",
                "description": "The served catalogue's source, the export's validators and "
                "own date, when it was loaded, its version and record counts, and the "
                "previous catalogue kept for a rollback. Not cached (no ETag).",
                "parameters": COMMON_PARAMETERS,
                "responses": {
                    "200": _json_or_jsonp(
                        _ref("Status"), "The served catalogue and the previous one."
                    ),
                    **_errors("400", "404", "406", "503"),
                },
            },
            "options": _options("the mirror's status"),
        },
    )
    spec.components.schema("ChangesEntry", _changes_entry())
    spec.components.schema("ChangesPage", _page("ChangesEntry", changes.PAGE_SIZE))
    spec.path(
        path=changes.CHANGES_PATH,
        operations={
            "get": {
                "summary": "The records added, changed or removed since a catalogue version",
                "description": "One entry per record whose detail record differs between "
                "the version since and the one served (the net change), ordered by the "
                "load that last changed it, then resource and id. Built at load: see "
                "docs/changes.md.",
                "parameters": _changes_parameters(),
                "responses": {
                    "200": _json_or_jsonp(_ref("ChangesPage"), "One page of the changes."),
                    **_errors("400", "404", "406", "410", "503"),
                },
            },
            "options": _options("the changes feed"),
        },
    )
    spec.path(
        path=OPENAPI_PATH,
        operations={
            "get": {
                "summary": "This document",
                "responses": {"200": _json_or_jsonp({"type": "object"}, "OpenAPI 3.1.")},
            },
            "options": _methods_only("this document"),
        },
    )
    spec.path(
        path=DOCS_PATH,
        operations={
            "get": {
                "summary": "A page that renders this document",
                "responses": {"200": {"description": "HTML", "content": {"text/html": {}}}},
            },
            "options": _methods_only("the docs page"),
        },
    )
    document = spec.to_dict()
    document["paths"] = _with_suffixes(document["paths"])
    document["paths"].update(root.openapi_paths())
    document["paths"].update(adhoc.openapi_paths())
    return document


bp = Blueprint("openapi", __name__)
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


KEPT = "demoserv.web.views.openapi"
# The document (about 180 KB of JSON), built once an app; not a setting: nothing to tune.
KEPT_BYTES = 4 * 1024 * 1024


@bp.record_once
def _keep_document(state):
    state.app.extensions[KEPT] = ByteCache(KEPT_BYTES)


@bp.route(OPENAPI_PATH)
def document():
    kept = current_app.extensions[KEPT]
    spec = kept.find("document")  # of no served file: the same for every catalogue
    if spec is None:
        spec = renamed(build(), "service_url", current_app.config["SERVICE_URL_FIELD"])
        kept.keep("document", spec, len(current_app.json.dumps(spec)))
    return {**spec, "servers": [{"url": request.site_root}]}


@bp.route(DOCS_PATH)
@answers_as(DOCS_TYPE)
def docs():
    return current_app.response_class(DOCS_PAGE, content_type=DOCS_TYPE)
