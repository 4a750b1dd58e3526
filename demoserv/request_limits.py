"""Requests the service refuses before reading them: an unusable Host header, and a
request line or headers too long to be a client's honest request.

The absolute URLs in every answer are built from the Host header, so a Host that is
not a host name or address (``evil.example/path``, a port of letters, control
characters) is a 400; ``TRUSTED_HOSTS`` (Flask's setting) limits which hosts are
served at all. Limits are well above any real request to this API.
"""

import re

from flask import current_app, request
from werkzeug.exceptions import SecurityError
from werkzeug.sansio.utils import host_is_trusted

from .errors import APIError

MAX_PATH = 2048  # bytes of the path
MAX_QUERY = 8192  # bytes of the query string
MAX_HEADERS = 16384  # bytes of all header names and values

_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
    r"|\[[0-9A-Fa-f:.]+\])"
    r"(?::[0-9]{1,5})?"
)


def refuse_unusable():
    environ = request.environ
    if (
        len(environ.get("PATH_INFO", "")) > MAX_PATH
        or len(environ.get("QUERY_STRING", "")) > MAX_QUERY
    ):
        raise APIError(414)
    size = sum(len(name) + len(value) for name, value in request.headers.items())
    if size > MAX_HEADERS:
        raise APIError(431)
    host = environ.get("HTTP_HOST")
    if host is not None and not _HOST.fullmatch(host):
        raise APIError(
            400, "Invalid Host header: expected a host name or address, and a port number."
        )
    trusted = current_app.config["TRUSTED_HOSTS"]
    if trusted and not host_is_trusted(request.host.lower(), trusted):
        # Host names are case-insensitive (Flask's own check is not).
        raise SecurityError(f"Host {request.host!r} is not trusted.")
