"""Absolute addresses of records: inside the API (``url``) and on the public site
(``service_url``). The only code that builds either.

Records are built once, at load, with markers in place of what depends on the request
or the configuration, and stored as templates (``stored.py`` defines the
format); ``request_resolver`` fills in a request's values.
"""

from contextvars import ContextVar

from flask import current_app, request

from .rendering import API_PREFIX, response_format
from .stored import LinkStyle, resolver

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


def request_resolver():
    """``resolver`` for the request being served."""
    return resolver(request_style(), current_app.config["SERVICE_URL_FIELD"])
