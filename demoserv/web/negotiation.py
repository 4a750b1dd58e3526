"""How responses under the API prefix are negotiated, encoded and labelled.

- ``format=api`` or ``format=json`` is accepted (the body is JSON either way, and every
  ``url`` in it carries the suffix); ``format=jsonp`` answers JSONP; any other value is a
  400. A format suffix on the path (``/productions.json``, ``/productions/1.api``) means
  what ``format=`` means, and wins over it; every ``url`` then ends with the suffix in
  place of its trailing slash.
- Without ``format``, a ``GET`` whose ``Accept`` prefers ``text/html`` to JSON, as
  browsers send it, gets the browsable HTML page of the answer (``browsable.py``), where
  the answer is one of the API's own (``browsable``) or an error; an ``Accept`` header
  that admits JSON gets JSON (indented by N spaces for ``application/json; indent=N``,
  1 to 8); one that admits only ``application/javascript`` gets JSONP; any other gets a
  406.
- JSONP is ``<callback>(<the JSON body>);`` (as the upstream writes it) as
  ``application/javascript``, the name from ``callback=`` (default ``callback``): a
  dotted JavaScript identifier of at most 100 characters, anything else a 400 (whatever
  the format, as the OpenAPI document's pattern says), so that no request makes the
  service emit script of its choosing. Only 200 answers are wrapped; errors stay JSON.
- Every response under the prefix, errors and redirects included, carries ``Allow``,
  ``Content-Type: application/json`` (JSONP answers: ``application/javascript``; HTML
  pages: ``text/html``),
  ``Vary: Accept`` and CORS headers that let any origin read it; every response carries
  ``X-Content-Type-Options``.
"""

import re
from functools import cached_property
from urllib.parse import quote

import orjson
from flask import Request, Response, current_app, request
from flask.json.provider import JSONProvider
from werkzeug.routing import RequestRedirect

from ..store.snapshot import FILES_PATH as SNAPSHOT_FILES_PATH
from ..store.templates import escape_line_separators
from .error_handlers import APIError

API_PREFIX = "/api/v1"
# The upstream's plain views (adhoc.py): their own bytes and types, this pipeline's
# errors, caching, compression and CORS.
ADHOC_PREFIX = "/api/adhoc"
DOCS_PATH = API_PREFIX + "/docs/"  # the one HTML page under the prefix
FORMATS = ("api", "json", "jsonp")
# Formats a path may carry as a suffix (``/productions.json``), and the name of the view
# argument that holds it.
PATH_FORMATS = ("json", "api")
PATH_FORMAT_ARG = "format_suffix"
PATH_FORMAT = f"<any({', '.join(PATH_FORMATS)}):{PATH_FORMAT_ARG}>"
ALLOW = "GET, HEAD, OPTIONS"
JSON_TYPE = "application/json"
JAVASCRIPT_TYPE = "application/javascript"
JSONP_CONTENT_TYPE = "application/javascript; charset=utf-8"
HTML_TYPE = "text/html"
HTML_CONTENT_TYPE = "text/html; charset=utf-8"
# What OPTIONS says the API renders, in the upstream's order (its renderers' media types).
RENDERS = (JSON_TYPE, HTML_TYPE, JAVASCRIPT_TYPE)
DEFAULT_CALLBACK = "callback"
CALLBACK = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*(\.[A-Za-z_$][A-Za-z0-9_$]*)*")
MAX_CALLBACK = 100
MAX_INDENT = 8
_LEADING_SPACES = re.compile(rb"^((?:  )+)", re.MULTILINE)


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

    #: The ``format`` parameter asked for ("" for none), set by ``negotiate``.
    response_format = ""
    #: The format suffix of the path ("json", "api"; "" for none), set by ``negotiate``.
    path_format = ""
    #: The JSONP callback name when the answer is JSONP, else None.
    callback = None
    #: Spaces of indentation of a JSON answer (None: compact).
    indent = None
    #: Whether the answer is the browsable HTML page of its JSON, set by ``negotiate``.
    html = False
    #: The page of a listing the answer shows (``pagination.Page``), set by
    #: ``pagination.envelope_json``: the HTML page's paginator reads it.
    page = None
    #: This answer's ETag while it can still be a 200, set by ``caching``.
    etag = None

    @property
    def trusted_hosts(self):
        """None, whatever ``TRUSTED_HOSTS`` holds: Flask's own check of the Host header
        compares case, so ``request_limits.refuse_unusable`` checks it instead."""
        return None

    @trusted_hosts.setter
    def trusted_hosts(self, hosts):
        pass  # Flask hands TRUSTED_HOSTS to every request; request_limits reads the config itself

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


def last_arg(name, args=None):
    """A query parameter's last value (of ``args``, by default the request's), as
    Django's QueryDict.get gives it, or None."""
    values = (request.args if args is None else args).getlist(name)
    return values[-1] if values else None


def under_api_prefix():
    """Whether the request is for anything under the prefix: the API and its docs."""
    path = request.path
    return path == API_PREFIX or path.startswith(API_PREFIX + "/")


def under_adhoc_prefix():
    return request.path.startswith(ADHOC_PREFIX + "/")


def is_api_request():
    """Whether the request is for the JSON API: everything under the prefix but the
    docs page."""
    return under_api_prefix() and request.path != DOCS_PATH


def response_format():
    """The requested ``format`` value ("" when none)."""
    return request.response_format


def browsable(view, describe):
    """Mark ``view`` as answering with one of the API's own answers, which a browser
    gets as an HTML page; ``describe()`` gives its OPTIONS body (name, description,
    parameters), which the page shows. ``endpoints`` marks every view OPTIONS describes."""
    view.describe = describe
    return view


def described(view):
    """The ``describe`` of a view marked ``browsable``, else None."""
    return getattr(view, "describe", None)


def _may_be_html():
    """Whether the answer may be an HTML page: a GET (or HEAD) of one of the API's own
    answers or of a path no view serves (its error); never a redirect."""
    if request.method not in ("GET", "HEAD"):
        return False
    exception = request.routing_exception
    if exception is not None:
        return not isinstance(exception, RequestRedirect)
    return described(current_app.view_functions.get(request.endpoint)) is not None


def negotiate():
    if not is_api_request():
        return
    path_format = (request.view_args or {}).get(PATH_FORMAT_ARG, "")
    requested = last_arg("format") or ""
    if requested and requested not in FORMATS:
        raise APIError(
            400,
            f'Invalid value for "format": expected one of {", ".join(FORMATS)}.',
        )
    # A format suffix decides the format, whatever format= says (as upstream).
    requested = "" if path_format else requested
    request.response_format = requested
    request.path_format = path_format
    fmt = path_format or requested
    # Checked whether or not the answer is JSONP: one pattern in the document says
    # what the server takes.
    callback = _callback()
    if fmt == "jsonp":
        request.callback = callback
        return
    if not fmt and _may_be_html() and _prefers_html():
        request.html = True
        return
    accepted, parameters = _accepted(JSON_TYPE)
    if accepted:
        request.indent = _indent(parameters)
    elif not fmt and _names_javascript():
        request.callback = callback
    elif not fmt and not isinstance(request.routing_exception, RequestRedirect):
        raise APIError(406)  # a redirect is not an answer to negotiate


def _callback():
    """The JSONP callback name ``callback=`` gives (400 if it could be other script)."""
    name = last_arg("callback") or DEFAULT_CALLBACK
    if len(name) > MAX_CALLBACK or not CALLBACK.fullmatch(name):
        raise APIError(
            400,
            'Invalid value for "callback": expected a JavaScript function name (letters, '
            f"digits, _ and $, parts separated by dots), at most {MAX_CALLBACK} characters.",
        )
    return name


def _indent(parameters):
    """The indentation ``indent=N`` asks for: 1 to MAX_INDENT, else None (compact)."""
    value = parameters.get("indent", "")
    if value.isascii() and value.isdigit() and 1 <= int(value) <= MAX_INDENT:
        return int(value)
    return None


def _names_javascript():
    """Whether the Accept header names ``application/javascript`` itself (not through
    ``*/*``, which a client that wants only JSON may send too) with a non-zero quality."""
    header = request.headers.get("Accept", "")
    return JAVASCRIPT_TYPE in header.lower() and _accepted(JAVASCRIPT_TYPE, exact=True)[0]


def _prefers_html():
    """Whether the Accept header prefers ``text/html`` to JSON, as browsers send it
    (``text/html,...,*/*;q=0.8``): it names ``text/html`` (or ``text/*``), and with a
    higher quality than the range that admits JSON, or an equal one from a more specific
    range (``text/html, */*``; as Django REST framework, the upstream, chooses). ``*/*``,
    no Accept and a tie of equally specific ranges get JSON."""
    html_quality, html_rank, _ = _best_range(HTML_TYPE)
    if html_rank < 2 or not html_quality:
        return False
    json_quality, json_rank, _ = _best_range(JSON_TYPE)
    return (html_quality, html_rank) > (json_quality, json_rank)


def _accepted(media_type, exact=False):
    """Whether the Accept header admits ``media_type`` (an ``application/...`` type),
    and the parameters of the media range that decided it: the most specific range that
    matches (exact, then ``application/*``, then ``*/*``) has a non-zero quality.
    Parameters other than q (``charset=utf-8``, ``indent=4``) do not matter to that."""
    if not request.headers.get("Accept", "").strip():
        return True, {}
    quality, _, chosen = _best_range(media_type, exact)
    return quality > 0, chosen


def _best_range(media_type, exact=False):
    """(quality, specificity, parameters) of the most specific range of the Accept
    header that matches ``media_type``: specificity 3 for the type itself, 2 for its
    ``type/*``, 1 for ``*/*`` (not counted when ``exact``), 0 when none matches."""
    header = request.headers.get("Accept", "").strip()
    specificity = {media_type: 3}
    if not exact:
        specificity.update({media_type.split("/")[0] + "/*": 2, "*/*": 1, "*": 1})
    best, quality, chosen = 0, 0.0, {}
    for media_range in header.split(","):
        kind, *parameters = (part.strip() for part in media_range.split(";"))
        rank = specificity.get(kind.lower(), 0)
        if rank <= best:
            continue
        best, quality, chosen = rank, 1.0, {}
        for parameter in parameters:
            name, _, value = parameter.partition("=")
            name = name.strip().lower()
            chosen[name] = value.strip().strip('"')
            if name == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
    return quality, best, chosen


def indented(body, indent):
    """The JSON ``body`` indented by ``indent`` spaces a level, as the upstream indents
    (Python's ``json.dumps(..., indent=N, ensure_ascii=False, separators=(",", ": "))``,
    U+2028 and U+2029 escaped by ``represent``). orjson indents by two; a JSON text holds
    no raw newline inside a string, so re-indenting its lines is exact. The cost is
    linear in the body, which a page bounds (100 records)."""
    body = orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2)
    if indent != 2:
        body = _LEADING_SPACES.sub(lambda match: b" " * (len(match[1]) // 2 * indent), body)
    return body


def represent(response):
    """The answer's body as negotiated: a 200 wrapped for JSONP, or JSON indented; and
    line separators escaped in every one (the HTML page, which no script reads, shows
    its JSON as it is)."""
    if not is_api_request() or request.html or response.mimetype != JSON_TYPE:
        return response
    original = body = response.get_data()
    if request.callback is not None:
        if response.status_code == 200:
            body = request.callback.encode() + b"(" + body + b");"
            response.headers["Content-Type"] = JSONP_CONTENT_TYPE
    elif request.indent and body and not 300 <= response.status_code < 400:
        body = indented(body, request.indent)
    body = escape_line_separators(body)
    if body is not original:  # most answers: neither wrapped, indented nor escaped
        response.set_data(body)
    return response


def representation_key():
    """What, beside the URL, makes one answer's bytes differ from another's: the
    Accept-negotiated form (the HTML page, JSONP and its callback, or the indentation)."""
    if request.html:
        return "html"
    if request.callback is not None:
        return f"jsonp:{request.callback}"
    return f"json:{request.indent or 0}"


def label(response):
    response.headers["X-Content-Type-Options"] = "nosniff"
    if response.location and response.mimetype != JSON_TYPE:
        # Werkzeug's redirects have an HTML body; give them the API's shape.
        response.set_data(orjson.dumps({"detail": f"Moved to {response.location}."}))
        response.headers["Content-Type"] = JSON_TYPE
    if under_adhoc_prefix() or request.path.startswith(SNAPSHOT_FILES_PATH + "/"):
        response.headers["Allow"] = ALLOW
        return _allow_any_origin(response)
    if not under_api_prefix():
        return response
    response.headers["Allow"] = ALLOW
    if is_api_request():  # the docs page is HTML
        response.headers["Content-Type"] = _content_type(response)
    response.vary.add("Accept")
    return _allow_any_origin(response)


def _content_type(response):
    """An API answer's type: its HTML page's (a 304 of one too), JSONP's for a 200 (or
    its 304) wrapped, else JSON."""
    if request.html and (response.mimetype == HTML_TYPE or response.status_code == 304):
        return HTML_CONTENT_TYPE
    if request.callback is not None and response.status_code in (200, 304):
        return JSONP_CONTENT_TYPE
    return JSON_TYPE


def _allow_any_origin(response):
    """CORS: any origin may read the API; a preflight (OPTIONS) learns what it may send."""
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
