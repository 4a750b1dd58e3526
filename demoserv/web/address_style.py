"""The addresses of the request being served: its style (API root, address ending,
site), which resolves the records' stored address markers (``store/templates.py``) and builds
the API root's addresses (``store/addresses.py``)."""

from flask import current_app, request

from ..store.templates import LinkStyle, resolver
from .negotiation import API_PREFIX, response_format


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


def request_resolver():
    """``resolver`` for the request being served."""
    return resolver(request_style(), current_app.config["SERVICE_URL_FIELD"])
