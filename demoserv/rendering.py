"""How responses under the API prefix are negotiated, encoded and labelled.

- ``format=api`` or ``format=json`` is accepted (the body is JSON either way, and every
  ``url`` in it carries the suffix); any other value is a 400.
- Without ``format``, an ``Accept`` header that admits no JSON gets a 406.
- Every response under the prefix, errors and redirects included, carries
  ``Allow``, ``Content-Type: application/json``, ``Vary: Accept`` and CORS headers
  that let any origin read it; every response carries ``X-Content-Type-Options``.
"""

from functools import cached_property
from urllib.parse import quote

import orjson
from flask import Request, Response, request
from flask.json.provider import JSONProvider
from werkzeug.routing import RequestRedirect

from .errors import APIError

API_PREFIX = "/api/v1"
DOCS_PATH = API_PREFIX + "/docs/"  # the one HTML page under the prefix
FORMATS = ("api", "json")
FORMAT_HELP = (
    'Optional: "api" or "json" (empty: none). The body stays JSON; every url in it '
    'gets "?format=<value>".'
)
ALLOW = "GET, HEAD, OPTIONS"
JSON_TYPE = "application/json"


class APIResponse(Response):
    """Werkzeug drops entity headers from a 304; the API keeps Allow, Content-Type and
    Last-Modified on every answer, as its contract asks."""

    def get_wsgi_headers(self, environ):
        headers = super().get_wsgi_headers(environ)
        if self.status_code == 304:
            for name in ("Allow", "Content-Type", "Last-Modified"):
                if name in self.headers and name not in headers:
                    headers[name] = self.headers[name]
        return headers


class APIRequest(Request):
    """A request and the state the pipeline gives it (on the request itself, never on
    ``g``, which a test client may share between requests). The host is kept as the
    client sent it: Werkzeug's own addresses (url_root, base_url) decode punycode."""

    #: The ``format`` asked for ("" for none), set by ``negotiate``.
    response_format = ""
    #: This answer's ETag while it can still be a 200, set by ``caching``.
    etag = None

    @cached_property
    def site_root(self):
        """``scheme://host[/script root]``, the host exactly as sent."""
        return f"{self.scheme}://{self.host}{quote(self.root_path)}"

    @cached_property
    def address(self):
        """The request's URL without its query, the host exactly as sent."""
        return self.site_root + quote(self.path)


class OrjsonProvider(JSONProvider):
    """Flask's JSON provider on orjson: several times faster on large pages."""

    def dumps(self, obj, **kwargs):
        return orjson.dumps(obj).decode()

    def loads(self, s, **kwargs):
        return orjson.loads(s)

    def response(self, *args, **kwargs):
        obj = self._prepare_response_obj(args, kwargs)
        return self._app.response_class(orjson.dumps(obj), mimetype=JSON_TYPE)


def last_arg(name):
    """A query parameter's last value, as Django's QueryDict.get gives it, or None."""
    values = request.args.getlist(name)
    return values[-1] if values else None


def under_api_prefix():
    """Whether the request is for anything under the prefix: the API and its docs."""
    path = request.path
    return path == API_PREFIX or path.startswith(API_PREFIX + "/")


def is_api_request():
    """Whether the request is for the JSON API: everything under the prefix but the
    docs page."""
    return under_api_prefix() and request.path != DOCS_PATH


def response_format():
    """The requested ``format`` value ("" when none)."""
    return request.response_format


def negotiate():
    if not is_api_request():
        return
    requested = last_arg("format") or ""
    if requested and requested not in FORMATS:
        raise APIError(
            400,
            f'Invalid value for "format": expected one of {", ".join(FORMATS)}.',
        )
    request.response_format = requested
    redirect = isinstance(request.routing_exception, RequestRedirect)  # not an answer to negotiate
    if not requested and not redirect and not _accepts_json():
        raise APIError(406)


def _accepts_json():
    """Whether the Accept header admits JSON: the most specific media range that
    matches ``application/json`` (exact, then ``application/*``, then ``*/*``) has a
    non-zero quality. Parameters other than q (``charset=utf-8``) do not matter."""
    header = request.headers.get("Accept", "").strip()
    if not header:
        return True
    specificity = {JSON_TYPE: 3, "application/*": 2, "*/*": 1, "*": 1}
    best, quality = 0, 0.0
    for media_range in header.split(","):
        media_type, *parameters = (part.strip() for part in media_range.split(";"))
        rank = specificity.get(media_type.lower(), 0)
        if rank <= best:
            continue
        best, quality = rank, 1.0
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            if name.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
    return quality > 0


def label(response):
    response.headers["X-Content-Type-Options"] = "nosniff"
    if 300 <= response.status_code < 400 and response.mimetype != JSON_TYPE:
        # Werkzeug's redirects have an HTML body; give them the API's shape.
        response.set_data(orjson.dumps({"detail": f"Moved to {response.location}."}))
        response.headers["Content-Type"] = JSON_TYPE
    if not under_api_prefix():
        return response
    response.headers["Allow"] = ALLOW
    if is_api_request():  # the docs page is HTML
        response.headers["Content-Type"] = JSON_TYPE
    response.vary.add("Accept")
    # CORS: any origin may read the API; a preflight (OPTIONS) learns what it may send.
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.headers["Access-Control-Expose-Headers"] = "ETag, Last-Modified, X-Catalogue-Version"
    if request.method == "OPTIONS" and "Access-Control-Request-Method" in request.headers:
        response.headers["Access-Control-Allow-Methods"] = ALLOW
        requested = request.headers.get("Access-Control-Request-Headers")
        if requested:
            response.headers["Access-Control-Allow-Headers"] = requested
        response.headers["Access-Control-Max-Age"] = "86400"
    return response


def init_app(app):
    app.request_class = APIRequest
    app.response_class = APIResponse
    app.json = OrjsonProvider(app)
