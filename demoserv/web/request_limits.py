"""Requests the service refuses before reading them: an unusable or missing Host
header, a request line or headers too long to be a client's honest request, and a
request body.

The absolute URLs in every answer are built from the Host header, so a Host that is
not a host name or address (``evil.example/path``, a port of letters, control
characters) is a 400, and so is an HTTP/1.1 request without one (RFC 9112 section 3.2);
``TRUSTED_HOSTS`` (Flask's setting) limits which hosts are served at all. The API is
read-only and takes no request body: one on a method that takes none (GET, HEAD,
OPTIONS) is a 400, one over ``MAX_BODY`` bytes a 413, both before the body is read
(``demoserv serve`` refuses them in its parser, with the same answer). Limits are well
above any real request to this API.
"""

import re

from flask import current_app, request
from werkzeug.exceptions import SecurityError
from werkzeug.sansio.utils import host_is_trusted

from .error_handlers import READ_METHODS, APIError

MAX_PATH = 2048  # bytes of the path
MAX_QUERY = 8192  # bytes of the query string
MAX_HEADERS = 16384  # bytes of all header names and values
MAX_BODY = 8192  # bytes of a request body read at the most (waitress's default: 1 GiB)

_HOST = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*\.?"
    r"|\[[0-9A-Fa-f:.]+\])"
    r"(?::[0-9]{1,5})?"
)


def body_refusal(method, length, chunked):
    """(status, detail) refusing a request body of ``length`` bytes (chunked: of a
    length unknown yet) sent with ``method``; None for a request it may carry."""
    if not length and not chunked:
        return None
    if method in READ_METHODS:  # the API's methods, which take no body
        article = "An" if method == "OPTIONS" else "A"
        return 400, f"{article} {method} request takes no body: send it without one."
    if length > MAX_BODY:
        return 413, "Request entity too large: this API takes no request bodies."
    return None


def refuse_unusable():
    environ = request.environ
    refusal = body_refusal(
        request.method, request.content_length or 0, "HTTP_TRANSFER_ENCODING" in environ
    )
    if refusal is not None:
        raise APIError(*refusal)
    if (
        len(environ.get("PATH_INFO", "")) > MAX_PATH
        or len(environ.get("QUERY_STRING", "")) > MAX_QUERY
    ):
        raise APIError(414)
    size = sum(len(name) + len(value) for name, value in request.headers.items())
    if size > MAX_HEADERS:
        raise APIError(431)
    host = environ.get("HTTP_HOST")
    if host is None and environ.get("SERVER_PROTOCOL") == "HTTP/1.1":
        raise APIError(400, "An HTTP/1.1 request must carry a Host header.")
    if host is not None and not _HOST.fullmatch(host):
        raise APIError(
            400, "Invalid Host header: expected a host name or address, and a port number."
        )
    trusted = current_app.config["TRUSTED_HOSTS"]
    if trusted and not host_is_trusted(request.host.lower(), trusted):
        # Host names are case-insensitive (Flask's own check is not).
        raise SecurityError(f"Host {request.host!r} is not trusted.")
