"""The addresses of the request being served: its style (API root, address ending,
site), which resolves the records' stored address markers (``store/templates.py``) and builds
the API root's addresses (``store/addresses.py``); and the addresses a snapshot is written
for (``store/snapshot.py``), the request's among them."""

from flask import current_app, request

from ..store.snapshot import Address
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


def _address(config, site_root):
    return Address(
        site_root + API_PREFIX + "/", config["SITE_URL"].rstrip("/"), config["SERVICE_URL_FIELD"]
    )


def request_address():
    """The snapshot's address for the request being served: its detail answers' own."""
    return _address(current_app.config, request.site_root)


def snapshot_addresses(config, base_urls=()):
    """The addresses a load writes the snapshot for: each of ``SNAPSHOT_URLS`` and of
    ``base_urls`` (a server's own), with ``config``'s site and field name."""
    urls = dict.fromkeys([*config["SNAPSHOT_URLS"], *(url.rstrip("/") for url in base_urls)])
    return tuple(_address(config, url) for url in urls)
