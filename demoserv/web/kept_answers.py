"""Answers kept whole: a repeated request is answered with the bytes built for it the
first time, before Flask sees it.

An answer that ``caching`` labels (an ETag: a 200 or a 304 under the API prefix) is
fully determined by the catalogue it was built from and what the client sent that the
app reads: the method, the address (scheme, Host, script root, path and query as sent,
after the proxy headers) and the Accept, Accept-Encoding, If-None-Match and
If-Modified-Since headers. Those raw values are the key; the status line, every header
and the body are what is kept. Nothing else is: errors, redirects, OPTIONS and the
status page are built every time.

Each request compares the served file with the one the kept answers came from (the
``stat`` that ``db`` does anyway); the cache, a ``byte_cache.ByteCache`` of
``ANSWER_CACHE_BYTES``, is emptied by a new file and keeps no answer built from a file
no longer served, so no answer of an old catalogue is served after a load or a
rollback. Requests for ever new addresses push out only answers asked for once, never
the pages clients come back to. A request whose headers may be too large for ``guard``
is left to it.
"""

from .db import CatalogueUnavailable
from .request_limits import MAX_HEADERS

# In the WSGI environ of an answer ``caching`` labelled: the catalogue it was built from.
BUILT_FROM = "demoserv.built_from"
# In the WSGI environ of a request looked for among the kept answers: its key and the
# catalogue it found served, which admission reads rather than finding them again.
LOOKED_UP = "demoserv.looked_up"
ENTRY_OVERHEAD = 1024  # bytes an answer costs beside its strings: objects, table slots
KEPT_STATUSES = ("200", "304")
KEPT_METHODS = ("GET", "HEAD")


def request_key(environ):
    """What an answer can depend on, as the client sent it; None for a request whose
    answer is never kept (another method, a body, which the app refuses, or headers
    ``request_limits`` may refuse)."""
    method = environ["REQUEST_METHOD"]
    if method not in KEPT_METHODS or _header_bytes(environ) > MAX_HEADERS:
        return None
    if environ.get("CONTENT_LENGTH", "0") not in ("", "0") or "HTTP_TRANSFER_ENCODING" in environ:
        return None
    get = environ.get
    return (
        method,
        get("wsgi.url_scheme"),
        get("HTTP_HOST"),
        get("SERVER_NAME"),
        get("SERVER_PORT"),
        get("SCRIPT_NAME", ""),
        get("PATH_INFO", ""),
        get("QUERY_STRING", ""),
        get("HTTP_ACCEPT"),
        get("HTTP_ACCEPT_ENCODING"),
        get("HTTP_IF_NONE_MATCH"),
        get("HTTP_IF_MODIFIED_SINCE"),
    )


def _header_bytes(environ):
    """At least the bytes ``guard`` counts for the headers (``HTTP_`` is longer than
    nothing, and CONTENT_TYPE as long as Content-Type)."""
    size = sum(
        len(name) + len(environ.get(name, "")) for name in ("CONTENT_TYPE", "CONTENT_LENGTH")
    )
    for name, value in environ.items():
        if name[:5] == "HTTP_":  # a loop: several times cheaper than sum() over a filter
            size += len(name) + len(value)
    return size


def read_whole(body):
    """A WSGI answer's body as bytes; the iterable closed, as the server would."""
    try:
        return b"".join(body)
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()


class Answer:
    """A status line, its headers and body, as the app gave them to the server."""

    __slots__ = ("status", "headers", "body", "size")

    def __init__(self, key, status, headers, body):
        self.status, self.headers, self.body = status, headers, body
        strings = [*filter(None, key[1:]), status, *(part for pair in headers for part in pair)]
        self.size = len(body) + sum(map(len, strings)) + ENTRY_OVERHEAD


class KeptAnswers:
    """WSGI middleware inside the proxy headers: a kept answer, or the app's, kept in
    ``cache`` (a ``ByteCache``) if ``caching`` labelled it."""

    def __init__(self, app, cache, database):
        self.app, self.cache, self.database = app, cache, database

    def __call__(self, environ, start_response):
        key = request_key(environ)
        if key is None:
            return self.app(environ, start_response)
        try:
            catalogue = self.database.current()
        except CatalogueUnavailable:
            return self.app(environ, start_response)  # the app answers 503 if it must
        environ[LOOKED_UP] = (key, catalogue)
        answer = self.cache.find(key, catalogue.file_id)
        if answer is not None:
            start_response(answer.status, list(answer.headers))
            return [answer.body]
        return self._built(key, environ, start_response)

    def _built(self, key, environ, start_response):
        started = []

        def record_start(status, headers, exc_info=None):
            started[:] = (status, headers)
            return start_response(status, headers, exc_info)

        body = self.app(environ, record_start)
        built_from = environ.get(BUILT_FROM)
        if built_from is None or not started or started[0][:3] not in KEPT_STATUSES:
            return body
        data = read_whole(body)
        status, headers = started
        answer = Answer(key, status, list(headers), data)
        self.cache.keep(key, answer, answer.size, built_from.file_id)
        return [data]
