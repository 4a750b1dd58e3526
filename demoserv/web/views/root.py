"""``/api/v1/``: the address of every resource's listing (the endpoints that list one);
and ``/``, the site root.

Both lead to what a client can find beside the resources, without a key added to the
API root's body (the contract fixes it): a ``Link`` header (RFC 8288) to the docs page
(``service-doc``), the OpenAPI document (``service-desc``), the status (``status``: RFC
8631's types), and, as ``related``, the changes feed and the docs page's list of the
``/api/adhoc/`` paths. The site root redirects to the API root, as it always has, with
a body that is an index of the same addresses (and each ``/api/adhoc/`` path)."""

from flask import current_app, request, url_for

from ...store.addresses import api_url
from ..address_style import request_style
from . import adhoc, openapi
from .endpoints import Endpoint, options_body

# What the roots lead to: (key in the site root's index, endpoint, relation type, title).
LINKS = (
    ("docs", "api.docs_page", "service-doc", "the API's documentation"),
    ("openapi", "api.openapi_document", "service-desc", "the OpenAPI document"),
    ("status", "api.status", "status", "what this mirror serves"),
    ("changes", "api.changes", "related", "the changes feed"),
    ("snapshot", "api.snapshot", "related", "the snapshot: every record in one download"),
)
ADHOC_ANCHOR = "adhoc"  # the docs page's list of the /api/adhoc/ paths (docs.html)
ADHOC_TITLE = "the upstream's /api/adhoc/ paths"


def endpoints(listing):
    """The API root, which gives the address of each listing among the endpoints
    ``listing``, and the site root."""
    listed = [each.lists for each in listing if each.lists]

    def api_root():
        style = request_style()
        return {name: api_url(name, style=style) for name in listed}

    return [
        Endpoint("/", "api_root", api_root, _operations(listed), describe, headers=links),
        Endpoint("/", "site_root", index, _site_root_operations, headers=links, prefix=""),
    ]


def describe():
    return options_body(
        "Api Root", "The demoscene catalogue: the address of each resource's listing."
    )


def links():
    """The ``Link`` header of both roots: addresses from the site root (``url_for``)."""
    found = [
        f'<{url_for(endpoint)}>; rel="{relation}"; title="{title}"'
        for _, endpoint, relation, title in LINKS
    ]
    docs = url_for("api.docs_page", _anchor=ADHOC_ANCHOR)
    found.append(f'<{docs}>; rel="related"; title="{ADHOC_TITLE}"')
    return {"Link": ", ".join(found)}


def index():
    """The site root: a redirect to the API root, whose body is an index of what the
    service serves, each address absolute (the host as the client sent it)."""
    location = url_for("api.api_root")
    host = f"{request.scheme}://{request.host}"
    body = {
        "detail": f"Moved to {location}.",
        "api": host + location,
        **{key: host + url_for(endpoint) for key, endpoint, _, _ in LINKS},
        "adhoc": [host + url_for(f"adhoc.{path}") for path in adhoc.PATHS],
    }
    response = current_app.json.response(body)
    response.status_code = 302
    response.headers["Location"] = location
    return response


def _operations(listed):
    def operations(spec):
        return {
            "get": {
                "summary": "The address of every listing",
                "parameters": openapi.RENDERING_PARAMETERS,
                "responses": openapi.answers(
                    openapi.json_or_jsonp(
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "required": listed,
                            "properties": {
                                name: {"type": "string", "format": "uri"} for name in listed
                            },
                        },
                        "Listing addresses by resource name.",
                    ),
                    "404",
                    "406",
                ),
            },
            "options": openapi.options("the API root"),
        }

    return operations


def _site_root_operations(spec):
    uri = {"type": "string", "format": "uri"}
    names = ["api", *(key for key, _, _, _ in LINKS)]
    index_schema = {
        "type": "object",
        "additionalProperties": False,
        "required": ["detail", *names, "adhoc"],
        "properties": {
            "detail": {"type": "string", "description": "Where the redirect leads."},
            **{name: uri for name in names},
            "adhoc": {"type": "array", "items": uri},
        },
    }
    return {
        "get": {
            "summary": "The site root: a redirect to the API root, with an index of "
            "the addresses the service serves (the API root, the docs page, this "
            "document, the status, the changes feed, the snapshot and each /api/adhoc/ "
            "path)",
            "responses": {
                "302": {
                    "description": "To the API root.",
                    "headers": {
                        "Location": {"schema": {"type": "string"}},
                        "Link": {
                            "description": "The docs page (service-doc), this document "
                            "(service-desc), the status (status), the changes feed, the "
                            "snapshot and the /api/adhoc/ paths (related), as on the API "
                            "root.",
                            "schema": {"type": "string"},
                        },
                    },
                    "content": {"application/json": {"schema": index_schema}},
                },
                **openapi.errors(),
            },
        },
        "options": openapi.methods_only("the site root", negotiated=False),
    }
