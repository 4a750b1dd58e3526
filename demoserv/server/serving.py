"""The server of ``demoserv serve`` (``demoserv-serve``): waitress with settings that keep
slow and idle clients from locking others out, and with requests of ambiguous length
refused. It serves the app it is given and knows nothing of the command (``cli/commands.py``
makes the app and calls ``serve``).

waitress reads requests on one thread (an asyncore loop) and hands whole requests to
its worker threads, so a slow client costs a connection slot, never a worker. What
locks others out is running out of slots: waitress stops accepting at
``connection_limit`` (100 by default) and keeps an idle connection for
``channel_timeout`` (120 s by default). This server therefore

- allows many connections (``connection_limit``), with ``poll()`` in place of
  ``select()`` (which cannot watch descriptors above 1024) and the process's limit of
  open files raised to fit;
- closes idle connections sooner (``channel_timeout``, checked every
  ``cleanup_interval`` seconds);
- closes a connection whose request has not arrived whole within ``request_timeout``
  seconds of its first byte: waitress itself has no such deadline, so a client sending
  one header byte a second would otherwise keep its slot for days;
- refuses, with a JSON 400 and the connection closed, a request whose length is
  ambiguous (RFC 9112 section 6.1): both ``Content-Length`` and ``Transfer-Encoding``,
  or ``Transfer-Encoding`` in HTTP/1.0. waitress would read such a request as chunked
  and keep the connection open, so that bytes after the chunked body were read as a
  second request (request smuggling behind a proxy that reads the length otherwise);
- refuses a request body before reading it (``request_limits.body_refusal``: the API
  takes none), and reads at most ``MAX_BODY`` bytes of a chunked one;
- reads a connection's pipelined requests one at a time: the next is parsed only once
  the answer to the one before has been sent whole. waitress would queue every request
  of a read at once and serve them on one worker, which then waits, for as long as the
  connection stays open, for a client that never reads to take its answers; so 16
  such clients held all 16 workers. Now such a client costs one answer, and its
  connection is closed as idle after ``channel_timeout`` seconds;
- keeps the connection open after an answer without a body (a 304): waitress closes
  an HTTP/1.1 connection after any answer without ``Content-Length``;
- answers its own errors (a malformed request, headers over waitress's limit) in the
  service's one error shape, ``{"detail": "..."}`` as JSON with ``nosniff`` and CORS
  headers, in place of waitress's plain text.
"""

import logging
import os
import resource
import tempfile
import time
from http import HTTPStatus

import orjson
from waitress.adjustments import Adjustments
from waitress.channel import HTTPChannel
from waitress.parser import HEADER_FIELD_RE, HTTPRequestParser, get_header_lines
from waitress.server import BaseWSGIServer, create_server
from waitress.task import ErrorTask, WSGITask
from waitress.utilities import Error

from ..api.error import DETAILS
from ..web.negotiation import DOCS_PATH
from ..web.request_limits import MAX_BODY, body_refusal

log = logging.getLogger(__name__)

# The settings this server chooses; every other waitress setting keeps its default.
DEFAULTS = {
    "threads": 16,
    "connection_limit": 1000,
    "channel_timeout": 15,
    "cleanup_interval": 2,
    "backlog": 1024,
    "asyncore_use_poll": True,
    "max_request_body_size": MAX_BODY + 1,  # waitress refuses this many bytes or more
}
REQUEST_TIMEOUT = 10  # seconds from a request's first byte to its last
SPARE_FILES = 64  # descriptors besides connections: the database, logs, the listener

AMBIGUOUS_LENGTH = (
    "The request's length is ambiguous: it has both Content-Length and Transfer-Encoding "
    "(or Transfer-Encoding in HTTP/1.0); the connection is closed."
)


# The headers of every error waitress answers itself, as the app's errors carry them.
ERROR_HEADERS = [
    ("Content-Type", "application/json"),
    ("X-Content-Type-Options", "nosniff"),
    ("Access-Control-Allow-Origin", "*"),
]


class Refusal(Error):
    """An error answered by the server before the application sees the request, with
    ``body`` as its whole ``detail``; waitress closes the connection after it."""

    def __init__(self, code, detail):
        super().__init__(detail)
        self.code = code
        self.reason = HTTPStatus(code).phrase  # waitress's Error has 500's


def error_answer(error):
    """Status line, headers and body of any waitress ``error`` in the one error shape:
    the service's wording for its status, then what waitress found (``body``)."""
    if isinstance(error, Refusal):
        detail = error.body
    else:
        detail = DETAILS.get(error.code, f"{error.reason}.")
        if error.body:
            detail = f"{detail[:-1]}: {error.body}."
    return f"{error.code} {error.reason}", list(ERROR_HEADERS), orjson.dumps({"detail": detail})


class JSONErrorTask(ErrorTask):
    """waitress's error answer (closing the connection), in the service's error shape."""

    def execute(self):
        self.status, headers, body = error_answer(self.request.error)
        self.response_headers.extend(headers)
        self.set_close_on_finish()
        self.content_length = len(body)
        self.write(body)


class Task(WSGITask):
    """waitress's task, which keeps an HTTP/1.1 connection open after an answer without
    a body (1xx, 204, 304): waitress closes it after any answer without
    ``Content-Length``, which such an answer must not carry (RFC 9110 section 8.6), so
    that every revalidation cost a new connection and a request pipelined behind a 304
    was never answered."""

    building_headers = False

    def build_response_header(self):
        self.building_headers = True
        try:
            return super().build_response_header()
        finally:
            self.building_headers = False

    def set_close_on_finish(self):
        if (
            self.building_headers
            and not self.has_body
            and self.version == "1.1"
            and self.request.headers.get("CONNECTION", "").lower() != "close"
        ):
            return  # its end is known without a length: the connection stays usable
        super().set_close_on_finish()


class RequestParser(HTTPRequestParser):
    """waitress's parser, which notes when a request began, refuses a request whose
    length is ambiguous or that carries a body (neither is read, and the error answer
    closes the connection, so nothing after the headers is ever read as a request), and
    keeps the bytes that follow a whole request for the channel (``following``)."""

    following = b""  # bytes received after this request: the next requests' beginning

    def __init__(self, adj):
        super().__init__(adj)
        self.started = time.monotonic()

    def received(self, data):
        consumed = super().received(data)
        if self.completed and not self.empty and consumed < len(data):
            self.following = data[consumed:]
            return len(data)  # the channel reads them once this request is answered
        return consumed

    def parse_header(self, header_plus):
        super().parse_header(header_plus)
        names = set()
        for line in get_header_lines(header_plus.partition(b"\r\n")[2]):
            match = HEADER_FIELD_RE.match(line)
            if match:
                names.add(match.group("name").lower())
        if b"transfer-encoding" in names and (b"content-length" in names or self.version == "1.0"):
            self.refuse(Refusal(400, AMBIGUOUS_LENGTH))
            return
        refusal = body_refusal(self.command, self.content_length, self.chunked)
        if refusal is not None:
            self.refuse(Refusal(*refusal))

    def refuse(self, error):
        self.close()  # the body buffer, if any
        self.error = error
        self.body_rcv = None  # the request is complete without its body
        self.chunked = False
        self.content_length = 0
        self.connection_close = True
        self.headers["CONNECTION"] = "close"  # so that no "Keep-Alive" is answered either


class Channel(HTTPChannel):
    """waitress's connection, which reads its requests one at a time (``unread`` holds
    what followed the request being answered until that answer is sent), and closes
    itself when a request has not arrived whole within ``request_timeout`` seconds of
    its first byte."""

    parser_class = RequestParser
    task_class = Task
    error_task_class = JSONErrorTask
    request_timeout = REQUEST_TIMEOUT
    unread = b""

    def received(self, data):
        result = super().received(data)
        if self.requests and self.requests[-1].following:
            self.unread += self.requests[-1].following
            self.requests[-1].following = b""
        return result

    def readable(self):
        # Called by the loop for every connection at least once a loop timeout (1 s),
        # and again as soon as a write has been handled.
        if self.unread and super().readable():
            # The answers before have been sent whole: the next request may be read.
            data, self.unread = self.unread, b""
            self.received(data)
        request = self.request
        if (
            request is not None
            and not request.completed
            and not self.requests
            and time.monotonic() - request.started > self.request_timeout
        ):
            self.will_close = True  # the loop closes it (see HTTPChannel.writable)
        return super().readable()


def raise_open_files_limit(needed):
    """Raise the soft limit of open files to ``needed`` if the hard limit allows;
    returns the limit in force."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        wanted = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
        soft = wanted
    return soft


def make_server(app, *, request_timeout=REQUEST_TIMEOUT, **settings):
    """A waitress server for ``app`` with DEFAULTS overridden by ``settings`` (waitress
    adjustments), whose connections use Channel; call ``run()`` on it."""
    settings = {**DEFAULTS, **settings}
    limit = raise_open_files_limit(settings["connection_limit"] + SPARE_FILES)
    if settings["connection_limit"] + SPARE_FILES > limit:
        log.warning(
            "only %d open files allowed: connection limit lowered from %d to %d",
            limit,
            settings["connection_limit"],
            max(limit - SPARE_FILES, 10),
        )
        settings["connection_limit"] = max(limit - SPARE_FILES, 10)
    channel = type("Channel", (Channel,), {"request_timeout": request_timeout})
    sockets = {}
    server = create_server(app, map=sockets, **settings)
    for dispatcher in list(sockets.values()):
        if isinstance(dispatcher, BaseWSGIServer):
            dispatcher.channel_class = channel
    return server


def check_settings(settings):
    """Raise ValueError naming the option when waitress cannot use ``settings``."""
    try:
        Adjustments(**{**DEFAULTS, **settings})
    except ValueError as error:
        message = str(error)
        if message == "Invalid host/port specified.":
            message = f"--listen {settings['listen']}: no such host, or not HOST:PORT"
        raise ValueError(message.replace("trusted_proxy", "--trusted-proxy").replace("_", "-"))


def base_urls(server):
    """http://HOST:PORT of each address ``server`` listens on."""
    addresses = getattr(server, "effective_listen", None) or [
        (server.effective_host, server.effective_port)
    ]
    return [
        f"http://[{host}]:{port}" if ":" in str(host) else f"http://{host}:{port}"
        for host, port in addresses
    ]


def write_ready_file(path, urls):
    """Write ``urls``, one a line, to ``path`` so that it appears whole or not at all."""
    folder = os.path.dirname(os.path.abspath(path))
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".ready-")
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write("".join(f"{url}\n" for url in urls))
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


class Listener:
    """A waitress server (``make_server``) listening on the addresses of ``settings``
    before the app it serves exists: ``demoserv serve`` takes its addresses first, so
    that a taken port fails at once (OSError), before a catalogue is built or opened.
    Connections wait in the backlog until ``serve`` gives it the app and runs it."""

    def __init__(self, settings, *, request_timeout=REQUEST_TIMEOUT):
        self.app = None
        self.server = make_server(self.answer, request_timeout=request_timeout, **settings)
        self.urls = base_urls(self.server)

    def answer(self, environ, start_response):
        return self.app(environ, start_response)


def serve(listener, app, *, ready_file=None):
    """Serve ``app`` (``serving_app``) on ``listener`` (a ``Listener``) until stopped;
    write the base URLs to ``ready_file`` once the catalogue is ready."""
    listener.app = app
    urls = listener.urls
    catalogue = app.extensions["demoserv.web.db"].describe()
    log.info(
        "Serving on %s: %s, database %s; the API's docs at %s%s",
        ", ".join(urls),
        catalogue,
        app.config["DATABASE"],
        urls[0],
        DOCS_PATH,
    )
    warning = untrusted_hosts_warning(urls, app.config["TRUSTED_HOSTS"])
    if warning:
        log.warning(warning)
    if ready_file:
        # The sockets listen already (connections wait in the backlog until run() reads
        # them) and the catalogue was opened, or built from the seed, by serving_app().
        write_ready_file(ready_file, urls)
    listener.server.run()


def untrusted_hosts_warning(urls, trusted_hosts):
    """The start-up warning when the server listens beyond loopback and trusts any Host
    (which it writes into every url field); None otherwise."""
    hosts = [url.removeprefix("http://").rpartition(":")[0].strip("[]") for url in urls]
    if trusted_hosts or all(host == "::1" or host.startswith("127.") for host in hosts):
        return None
    return (
        f"listening on {', '.join(urls)} with any Host header trusted: set "
        'DEMOSERV_TRUSTED_HOSTS to the names clients use (such as ["api.example.org"])'
    )
