"""Absolute addresses of records: inside the API (``url``) and on the public site
(``service_url``). The only code that builds either.

Records are built once, at load, with markers in place of what depends on the request
or the configuration: ``\\x00A`` the API root, ``\\x00F`` the ``?format=`` suffix,
``\\x00S`` the site URL. ``resolve`` puts each request's values in their place, and
renames the page-address field when ``SERVICE_URL_FIELD`` asks for the upstream's name.
A catalogue never holds a NUL character in its text, so a marker cannot be data.
"""

from contextvars import ContextVar
from dataclasses import dataclass

import orjson
from flask import current_app, request

from .rendering import API_PREFIX, response_format


@dataclass(frozen=True)
class LinkStyle:
    api_root: str  # ends with "/"
    suffix: str  # "" or "?format=..."
    site: str  # no trailing "/"


MARKERS = LinkStyle("\x00A", "\x00F", "\x00S")
_style = ContextVar("demoserv_link_style", default=None)


def request_style():
    """The addresses of the request being served."""
    fmt = response_format()
    return LinkStyle(
        request.site_root + API_PREFIX + "/",
        f"?format={fmt}" if fmt else "",
        current_app.config["SITE_URL"].rstrip("/"),
    )


def use_style(style):
    """Build addresses in ``style`` until the returned token is reset."""
    return _style.set(style)


def reset_style(token):
    _style.reset(token)


def api_url(resource, record_id=None):
    """``{root}<resource>/[<id>/]{suffix}``."""
    style = _style.get() or request_style()
    if record_id is None:
        return f"{style.api_root}{resource}/{style.suffix}"
    return f"{style.api_root}{resource}/{record_id}/{style.suffix}"


def site_url(path):
    """The public web page at ``path`` (which starts and ends with ``/``)."""
    return (_style.get() or request_style()).site + path


def _escaped(text):
    return orjson.dumps(text)[1:-1]


def resolver(style, service_url_field="service_url"):
    """A function that turns record JSON built with MARKERS into ``style``'s JSON."""
    replacements = [
        (b"\\u0000A", _escaped(style.api_root)),
        (b"\\u0000F", _escaped(style.suffix)),
        (b"\\u0000S", _escaped(style.site)),
    ]
    if service_url_field != "service_url":
        # Only a key can be followed by '":' unescaped, so no value is touched.
        replacements.append((b'"service_url":', b'"' + service_url_field.encode() + b'":'))

    def resolve(body):
        for marker, value in replacements:
            body = body.replace(marker, value)
        return body

    return resolve


def request_resolver():
    """``resolver`` for the request being served."""
    return resolver(request_style(), current_app.config["SERVICE_URL_FIELD"])
