"""Absolute addresses of records: inside the API (``url``) and on the public site
(``service_url``). The only code that builds either.

Records are built once, at load, with markers in place of what depends on the request
or the configuration: ``\\x00A`` the API root, ``\\x00F`` the end of an address (its
trailing slash and ``?format=`` suffix, or a format suffix in its place: ``/``,
``/?format=json``, ``.json``), ``\\x00S`` the site URL. A catalogue never holds a NUL
character in its text, so a marker cannot be data. Records are stored as templates in
which each marker, and the name of the page-address field, is a key of bytes
%-formatting (``shared.to_template``); ``resolver`` puts each request's values, and the
field name that ``SERVICE_URL_FIELD`` asks for, in their place in one pass.
"""

from contextvars import ContextVar
from dataclasses import dataclass

import orjson
from flask import current_app, request

from .rendering import API_PREFIX, response_format


@dataclass(frozen=True)
class LinkStyle:
    api_root: str  # ends with "/"
    suffix: str  # what ends an address: "/", "/?format=..." or ".json" in place of the "/"
    site: str  # no trailing "/"


MARKERS = LinkStyle("\x00A", "\x00F", "\x00S")
_style = ContextVar("demoserv_link_style", default=None)


def request_style():
    """The addresses of the request being served: on a path with a format suffix
    (``/productions.json``) every address carries that suffix in place of its trailing
    slash; otherwise a ``format`` parameter is carried as ``?format=``."""
    return LinkStyle(
        request.site_root + API_PREFIX + "/",
        address_end(request.path_format, response_format()),
        current_app.config["SITE_URL"].rstrip("/"),
    )


def address_end(path_format, query_format):
    """What ends every address of an answer: ``.<path_format>`` in place of the trailing
    slash, or the slash and ``?format=<query_format>``, or the slash alone."""
    if path_format:
        return f".{path_format}"
    return f"/?format={query_format}" if query_format else "/"


def use_style(style):
    """Build addresses in ``style`` until the returned token is reset."""
    return _style.set(style)


def reset_style(token):
    _style.reset(token)


def api_url(resource, record_id=None):
    """``{root}<resource>[/<id>]{suffix}`` (the suffix holds the trailing slash)."""
    style = _style.get() or request_style()
    if record_id is None:
        return f"{style.api_root}{resource}{style.suffix}"
    return f"{style.api_root}{resource}/{record_id}{style.suffix}"


def site_url(path):
    """The public web page at ``path`` (which starts and ends with ``/``)."""
    return (_style.get() or request_style()).site + path


def _escaped(text):
    return orjson.dumps(text)[1:-1]


def resolver(style, service_url_field="service_url"):
    """A function that turns stored record templates (a record as built with MARKERS:
    ``shared.to_template``), or several joined, into ``style``'s JSON."""
    values = {
        b"A": _escaped(style.api_root),
        b"F": _escaped(style.suffix),
        b"S": _escaped(style.site),
        b"N": _escaped(service_url_field),
    }

    def resolve(body):
        return body % values

    return resolve


def request_resolver():
    """``resolver`` for the request being served."""
    return resolver(request_style(), current_app.config["SERVICE_URL_FIELD"])
