"""The log on standard error, one format for the service's own lines, the server's
(waitress's) and the access lines, chosen by ``LOG_FORMAT``: ``json`` (JSON lines, for a
log shipper to parse), ``text`` (a line for a person to read) or ``auto`` (the default:
text when standard error is a terminal, JSON lines otherwise).

A JSON line has ``time`` (UTC, ISO 8601), ``level`` and ``logger``; an access line
(logger ``demoserv.access``, one per request) adds ``client``, ``method``, ``path``,
``query``, ``status``, ``bytes``, ``ms`` and ``user_agent``; any other line adds
``message`` (and ``traceback`` for a server error, logged by ``errors``; nothing of it
reaches the client). A text line has the same time, then the level, the logger and the
message; an access line the time, client, method, path and query, status, bytes,
duration and user agent. Text is written ``printable``: what a client sent can neither
move a terminal's cursor nor split a line; only a traceback follows on lines of its
own, indented.

Requests a flood sends and that are refused at once (``TALLIED`` in their environ: the
refusals of ``admission.py`` while the listings' guard is full) are counted rather than
logged one by one: one line at most a second (logger ``demoserv.access``, ``refused``,
``clients``, ``seconds``) says how many, from how many client addresses, so that
writing the log neither costs readers more than refusing nor fills a disk."""

import datetime
import json
import logging
import textwrap
import threading
import time

from ..loader.progress import printable

log = logging.getLogger("demoserv.access")
TALLIED = "demoserv.access.tallied"  # in a request's environ: counted, not logged alone
TALLY_SECONDS = 1.0  # the longest a refusal waits to be counted in a line


class AccessLog:
    """WSGI middleware, outermost, so that it sees every answer, refused ones too."""

    def __init__(self, app, clock=time.monotonic):
        self.app = app
        self.tally = Tally(clock)

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        status = {}

        def record_start(line, headers, exc_info=None):
            status["code"] = int(line.split(" ", 1)[0])
            return start_response(line, headers, exc_info)

        body = self.app(environ, record_start)
        if environ.get(TALLIED):
            self.tally.count(environ.get("REMOTE_ADDR", ""))
            return body
        self.tally.flush()
        return _Logged(body, environ, status, started)


class Tally:
    """Refusals counted by client address, said in one line once ``TALLY_SECONDS`` have
    passed since the first of them (at the next request, refused or not)."""

    def __init__(self, clock):
        self._clock = clock
        self._clients, self._refused, self._since = set(), 0, None
        self._lock = threading.Lock()

    def count(self, client):
        with self._lock:
            if self._since is None:
                self._since = self._clock()
            self._refused += 1
            if len(self._clients) < 1000:  # enough to say "many"
                self._clients.add(client)
        self.flush()

    def flush(self):
        """Log the line if its time has come."""
        if self._since is None or self._clock() - self._since < TALLY_SECONDS:
            return
        with self._lock:
            if self._since is None:
                return
            line = {
                "refused": self._refused,
                "clients": len(self._clients),
                "seconds": round(self._clock() - self._since, 2),
            }
            self._clients, self._refused, self._since = set(), 0, None
        log.info(
            "%d requests for new listings refused at once while the guard was full, "
            "from %d client addresses, in %.2f s",
            line["refused"],
            line["clients"],
            line["seconds"],
            extra={"tally": line},
        )


class _Logged:
    """The answer's body, counted as the server sends it; logged when it is closed."""

    def __init__(self, body, environ, status, started):
        self.body, self.environ, self.status, self.started = body, environ, status, started
        self.size = 0
        self.logged = False

    def __iter__(self):
        try:
            for chunk in self.body:
                self.size += len(chunk)
                yield chunk
        finally:
            self._log()

    def close(self):
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            self._log()  # for a body never read to its end

    def _log(self):
        if self.logged:
            return
        self.logged = True
        environ = self.environ
        line = {
            "client": environ.get("REMOTE_ADDR", ""),
            "method": environ.get("REQUEST_METHOD", ""),
            "path": _sent(environ.get("PATH_INFO", "")),
            "query": environ.get("QUERY_STRING", "")[:500],
            "status": self.status.get("code"),
            "bytes": self.size,
            "ms": round((time.perf_counter() - self.started) * 1000, 2),
            "user_agent": _sent(environ.get("HTTP_USER_AGENT", ""))[:500],
        }
        # The message alone is the access line's JSON too, for handlers of other formats.
        log.info(json.dumps(line, ensure_ascii=False), extra={"access": line})


def _sent(value):
    """A WSGI string (the bytes sent, as Latin-1) as the UTF-8 text clients send; as
    Latin-1 where the bytes are not UTF-8."""
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def _time(record):
    return (
        datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


class JSONLines(logging.Formatter):
    """A log record as one JSON line (see the module's docstring)."""

    def format(self, record):
        line = {"time": _time(record), "level": record.levelname, "logger": record.name}
        access = getattr(record, "access", None)
        if access is not None:
            line.update(access)
        else:
            line["message"] = record.getMessage()
            line.update(getattr(record, "tally", ()))
            if record.exc_info:
                line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


class TextLines(logging.Formatter):
    """A log record as a line for a person at a terminal (see the module's docstring):
    ``TIME LEVEL LOGGER: MESSAGE``, or for an access line ``TIME CLIENT METHOD
    PATH?QUERY STATUS BYTES bytes MS ms "USER AGENT"``."""

    def format(self, record):
        time = _time(record)
        access = getattr(record, "access", None)
        if access is not None:
            query = f"?{access['query']}" if access["query"] else ""
            status = "-" if access["status"] is None else access["status"]
            return printable(
                f"{time} {access['client']} {access['method']} {access['path']}{query} "
                f'{status} {access["bytes"]} bytes {access["ms"]} ms "{access["user_agent"]}"'
            )
        line = f"{time} {record.levelname} {record.name}: {printable(record.getMessage())}"
        if record.exc_info:
            line += "\n" + textwrap.indent(self.formatException(record.exc_info), "  ")
        return line


def formatter(log_format, stream):
    """The formatter of ``log_format`` (one of ``settings.LOG_FORMATS``) for lines
    written to ``stream``: ``auto`` is text on a terminal, JSON lines otherwise."""
    if log_format == "auto":
        isatty = getattr(stream, "isatty", None)
        log_format = "text" if isatty is not None and isatty() else "json"
    return TextLines() if log_format == "text" else JSONLines()


def configure(app):
    """Log the service's and the server's lines on standard error, in the format of the
    ``LOG_FORMAT`` setting, when nothing else has configured logging (demoserv serve,
    waitress-serve, flask run); tests and embedding applications keep their own
    configuration."""
    package = logging.getLogger("demoserv")
    if app.testing or package.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(app.config["LOG_FORMAT"], handler.stream))
    for name in ("demoserv", "waitress"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # a server may configure the root logger later
        logger.addHandler(handler)
