"""The browsable HTML page of an API answer, for browsers, as the upstream's Django REST
framework draws one (its ``BrowsableAPIRenderer``): the brand, the breadcrumbs of the
path, the view's name and description, the format menu (``GET`` and the ``json``,
``api`` and ``jsonp`` forms), the query parameters as a plain GET form, a listing's
paginator, then the request and the answer: its status, its ``Allow``, ``Content-Type``
and ``Vary`` headers and its JSON indented, each address in it a link. The links
come in DRF's order (brand, breadcrumbs, format menu, paginator), so that a program
reading the upstream's page by position reads this one alike.

It is made from the JSON answer the view gave, when ``negotiation.negotiate`` chose it
(``request.html``); like every answer it is kept and compressed, under an ETag of its
own (``negotiation.representation_key``). It is self-contained: its one style sheet is
inline, and its Content-Security-Policy allows that sheet alone (by its hash), no
script, no request to any host and forms sent to this host only. Every value is
escaped: the JSON text as a whole, before its quoted addresses become links.
"""

import base64
import hashlib
import re
from collections import namedtuple
from importlib import resources as package_files
from urllib.parse import quote

import orjson
from flask import current_app, request
from jinja2 import Environment, StrictUndefined
from markupsafe import Markup
from werkzeug.exceptions import HTTPException
from werkzeug.http import HTTP_STATUS_CODES

from ..byte_cache import ByteCache
from . import pagination
from .negotiation import (
    ALLOW,
    API_PREFIX,
    DOCS_PATH,
    HTML_CONTENT_TYPE,
    JSON_TYPE,
    described,
    last_arg,
)
from .views import openapi

# A listing's page as ``pagination.envelope_json`` writes it: its records follow RESULTS.
ENVELOPE_START = b'{"count":'
RESULTS = b',"results":['
PIECE = 6 * 1024  # bytes of a listing's JSON made into the page at once (``_indented``)
BREADCRUMBS = "demoserv.web.browsable.breadcrumbs"  # the app's extension: kept ones
BREADCRUMBS_BYTES = 64 * 1024  # a few hundred bytes a path, a few paths an app
MENU_FORMATS = ("json", "api", "jsonp")  # the upstream's renderers' order
# The headers shown, as DRF shows them: those of the JSON answer the page renders.
SHOWN_HEADERS = (("Allow", ALLOW), ("Content-Type", JSON_TYPE), ("Vary", "Accept"))
# Parameters the form leaves out: the page's own, and those that change its form.
NOT_IN_FORM = ("page", "format", "callback", "fields")
# A field of the form: choices, (value, label) pairs, or None for a text input.
Field = namedtuple("Field", "name value help choices")

_TEMPLATES = Environment(
    autoescape=True, trim_blocks=True, lstrip_blocks=True, undefined=StrictUndefined
)
SOURCE = package_files.files(__package__).joinpath("browsable.html").read_text()
TEMPLATE = _TEMPLATES.from_string(SOURCE)
FORM = _TEMPLATES.from_string(
    package_files.files(__package__).joinpath("browsable_form.html").read_text()
)
_STYLE = re.search(r"<style>(.*?)</style>", SOURCE, re.DOTALL)[1]
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        f"style-src 'sha256-{base64.b64encode(hashlib.sha256(_STYLE.encode()).digest()).decode()}'",
        "img-src data:",  # the empty icon: no request for /favicon.ico
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
# A JSON string that is an address, up to the next quote: the text is escaped already
# (no "<", no raw "&"), so an escaped quote inside (``\"``) only ends the link early.
_QUOTED_ADDRESS = re.compile(rb'"(https?://[^"]*)"')
# Around the address, twice; no rel="nofollow": the page's robots meta says it for all.
_LINK = (b'"<a href="', b'">', b'</a>"')
CONTENT = "\x00content\x00"  # where the answer's text goes in the rendered template


def render(response):
    """The JSON answer as its HTML page, when negotiated; redirects and 304s stay."""
    if not request.html or response.mimetype != JSON_TYPE or 300 <= response.status_code < 400:
        return response
    response.set_data(_page(response))
    response.headers["Content-Type"] = HTML_CONTENT_TYPE
    response.headers["Content-Security-Policy"] = CONTENT_SECURITY_POLICY
    return response


def _page(response):
    """The page's bytes: the template's, and the answer's between them."""
    status = response.status_code
    view = None if request.routing_exception else current_app.view_functions[request.endpoint]
    describe = described(view)
    about = describe() if describe else {"name": HTTP_STATUS_CODES.get(status, "Error")}
    full_path = pagination.request_url(quote(request.root_path + request.path))
    page = TEMPLATE.render(
        name=about["name"],
        description=about.get("description", ""),
        brand=quote(request.root_path + DOCS_PATH),
        breadcrumbs=_breadcrumbs(),
        path=quote(request.root_path + request.path),
        full_path=full_path,
        formats=list(zip(MENU_FORMATS, pagination.with_values(full_path, "format", MENU_FORMATS))),
        form=_form(about) if describe else "",
        **_paginator(request.page),
        method=request.method,
        status=f"{status} {HTTP_STATUS_CODES.get(status, '')}",
        headers=SHOWN_HEADERS,
        content=Markup(CONTENT),
    )
    # The answer's text, a page of records, goes in as bytes, joined once with the rest:
    # nothing of the request follows it in the template, so the last mark is its place.
    head, _, tail = page.rpartition(CONTENT)
    return b"".join([head.encode(), *_text(response.get_data()), tail.encode()])


def _paginator(listing):
    """The paginator of a listing's page (none for a listing of one page, as DRF's):
    its page links, and the previous and the next page."""
    if listing is None or listing.last == 1:
        return {"page_links": None, "previous": None, "next": None}
    return pagination.paginator(listing, pagination.request_url())


def _text(body):
    """The answer's JSON text ``body`` as the page shows it (``_indented``, ``_linked``),
    in pieces."""
    try:
        return [_linked(piece) for piece in _indented(body)]
    except orjson.JSONDecodeError:  # a piece cut where no record ends: the text whole
        return [_linked(orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2))]


def _indented(body):
    """The JSON text ``body`` indented by 2, as orjson indents it (DRF's page indents by
    4, which would cost a pass over every line, about what the JSON answer costs whole),
    in pieces: a listing's or an array's records about ``PIECE`` bytes of JSON at a
    time, each parsed, indented (and linked, by ``_text``) before the next is parsed.
    So the memory of a piece is used again for the next, where a page's worth at once
    (orjson's working memory, the records, the texts) is over the server's mmap
    threshold (``factory.MMAP_THRESHOLD``), mapped and faulted in anew on every page,
    which cost about as much as the work itself."""
    if len(body) > PIECE:
        at = body.find(RESULTS) if body.startswith(ENVELOPE_START) else -1
        # A quote inside a string is escaped: RESULTS is the envelope's own key.
        if at > 0 and not body.endswith(RESULTS + b"]}"):
            head = orjson.loads(body[:at] + b"}")
            text = orjson.dumps({**head, "results": []}, option=orjson.OPT_INDENT_2)
            # ... "results": []\n} with the records between its brackets, a level deeper
            yield text[: -len(b"]\n}")] + b"\n"
            yield from _records(body, at + len(RESULTS), len(body) - 2, b"\n  ")
            yield b"\n  ]\n}"
            return
        if body.startswith(b"[{"):
            yield b"[\n"
            yield from _records(body, 1, len(body) - 1, b"\n")
            yield b"\n]"
            return
    yield orjson.dumps(orjson.loads(body), option=orjson.OPT_INDENT_2)


def _records(body, start, end, newline):
    """The records of the JSON array between ``start`` and ``end`` in ``body`` (within
    its brackets) at depth 1 (``newline``: a line's start at that depth), indented
    about ``PIECE`` bytes of JSON at a time, separated as orjson separates them. A piece
    is cut before the next record: where a ``}`` is followed by the start of the first
    record up to its address's last ``/`` (or its first key), which a nested object of
    another resource does not repeat, and a string cannot hold (its quotes are
    escaped). A cut inside a record, in a nested record of the same resource, leaves a
    piece that is not JSON: ``JSONDecodeError``."""
    first = body[start : body.find(b",", start)]  # {"url":"http://host/api/v1/productions/1/"
    signature = b"}," + first[: max(first.rfind(b"/", 0, len(first) - 2), first.find(b":")) + 1]
    view = memoryview(body)
    while start < end:
        stop = end
        if end - start > PIECE:
            cut = body.rfind(signature, start, start + PIECE)
            if cut <= start:
                cut = body.find(signature, start + PIECE, end)  # a record over PIECE
            if cut > start:
                stop = cut + 1
        text = orjson.dumps(
            orjson.loads(b"".join((b"[", view[start:stop], b"]"))), option=orjson.OPT_INDENT_2
        )
        # Without its brackets: "[\n" and "\n]", or "\n  ]" once a level deeper.
        text = (
            text[2:-2] if newline == b"\n" else text.replace(b"\n", newline)[2 : -len(newline) - 1]
        )
        yield text
        if stop < end:
            yield b",\n"
        start = stop + 1


def _linked(text):
    """The JSON ``text`` escaped for the text of an element (``&``, ``<`` and ``>``),
    each quoted address in it a link to itself (as DRF's ``urlize_quoted_links`` makes
    them: to its own page, for a browser), with no step of Python's per address."""
    text = text.replace(b"&", b"&amp;").replace(b"<", b"&lt;").replace(b">", b"&gt;")
    parts = _QUOTED_ADDRESS.split(text)  # text, address, text, ..., text
    urls = parts[1::2]
    if not urls:
        return text
    start, middle, end = _LINK
    # text, then (start, address, middle, address, end, text) an address
    pieces = [parts[0], *[start, None, middle, None, end, None] * len(urls)]
    pieces[2::6] = urls
    pieces[4::6] = urls
    pieces[6::6] = parts[2::2]
    return b"".join(pieces)


def _breadcrumbs():
    """The breadcrumbs of the request's path (``_found_breadcrumbs``); those of a path
    without a record's id (a listing's, the root's: a few an app) are found once an
    app."""
    if request.url_rule is None or request.view_args:
        return _found_breadcrumbs()
    kept = current_app.extensions.get(BREADCRUMBS)
    if kept is None:
        kept = current_app.extensions.setdefault(BREADCRUMBS, ByteCache(BREADCRUMBS_BYTES))
    key = (request.root_path, request.path)
    crumbs = kept.find(key)
    if crumbs is None:
        crumbs = _found_breadcrumbs()
        kept.keep(key, crumbs, sum(len(name) + len(path) for name, path in crumbs) + 256)
    return crumbs


def _found_breadcrumbs():
    """(name, path) of the request's path and of each path above it that an API view
    answers, from the API root down, as DRF finds them (its ``get_breadcrumbs``)."""
    adapter = current_app.url_map.bind_to_environ(request.environ)
    crumbs = []
    path = request.path
    while path.startswith(API_PREFIX + "/"):
        try:
            endpoint, _ = adapter.match(path, method="GET")
        except HTTPException:
            endpoint = None
        describe = described(current_app.view_functions.get(endpoint))
        if describe is not None:
            crumbs.append((describe()["name"], quote(request.root_path + path)))
        path = path[: path.rstrip("/").rfind("/") + 1]
    return crumbs[::-1]


def _form(about):
    """The form of the query parameters that the OpenAPI document gives this GET but the
    page's and the format's (empty without any), each with the request's value. A
    request that gives none of them (a page of a listing) gets the form every such
    request gets: made once an app, and kept beside the document it is made of; one
    that gives some, the form of those values, kept there too (the next page of a
    filtered listing asks for it again; values asked for once push out only others
    asked for once)."""
    name = request.endpoint.partition(".")[2]
    path = quote(request.root_path + request.path)
    names, untouched = openapi.kept_with_document(
        ("browsable form", name, path), lambda: _untouched_form(name, about, path)
    )
    args = request.args
    given = {each: last_arg(each) for each in names if each in args}
    if not any(given.values()):
        return untouched
    return openapi.kept_with_document(
        ("browsable form", name, path, tuple(given.items())),
        lambda: (names, _made_form(_form_parameters(name), about, path, given)),
    )[1]


def _form_parameters(name):
    return [each for each in openapi.query_parameters(name) if each["name"] not in NOT_IN_FORM]


def _untouched_form(name, about, path):
    """(the form's parameters' names, the form with none of them given)."""
    parameters = _form_parameters(name)
    form = _made_form(parameters, about, path, {}) if parameters else Markup()
    return tuple(each["name"] for each in parameters), form


def _made_form(parameters, about, path, given):
    """The form of ``parameters`` with the values ``given`` ({name: value}), a choice of
    values where a parameter has few (``about``, the OPTIONS body, names the ordering
    keys)."""
    fields = []
    for parameter in parameters:
        name, schema = parameter["name"], parameter["schema"]
        value = given.get(name) or ""
        choices = None
        if name == "ordering":
            # Never empty: an empty ordering is a 400, an empty filter no filter.
            value = value or schema["default"]
            choices = [
                (sign + key, f"{key} - {'descending' if sign else 'ascending'}")
                for key in about["ordering"]
                for sign in ("", "-")
            ]
            if value not in (choice for choice, _ in choices):
                choices.insert(0, (value, value))
        elif "enum" in schema:
            choices = [(choice, choice or "(any)") for choice in sorted(schema["enum"], key=bool)]
        fields.append(Field(name, value, parameter["description"], choices))
    return Markup(FORM.render(fields=fields, path=path, filtered=any(given.values())))
