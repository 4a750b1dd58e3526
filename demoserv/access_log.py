"""The log: JSON lines on standard error, one format for the service's own lines, the
server's (waitress's) and the access lines, for a log shipper to parse. Every line has
``time`` (UTC, ISO 8601), ``level`` and ``logger``; an access line (logger
``demoserv.access``, one per request) adds ``client``, ``method``, ``path``, ``query``,
``status``, ``bytes``, ``ms`` and ``user_agent``; any other line adds ``message`` (and
``traceback`` for a server error, logged by ``errors``; nothing of it reaches the client).

Requests turned away while new listings are being found for others (503, ``listing``
marks them ``TURNED_AWAY``) are logged at most one a second: a client that sends new
listings without pause would otherwise fill the log, and writing it would take the time
the turn-away saves. The next line logged says how many were left out
(``"turned_away"``)."""

import datetime
import json
import logging
import threading
import time

log = logging.getLogger("demoserv.access")

TURNED_AWAY = "demoserv.turned_away"  # in the WSGI environ of a request turned away
TURNED_AWAY_EVERY = 1.0  # seconds between two logged lines of requests turned away


class _LeftOut:
    """The requests turned away and not logged, since the last line."""

    def __init__(self, clock=time.monotonic):
        self._lock = threading.Lock()
        self._clock = clock
        self._count = 0
        self._logged_at = None

    def take(self, turned_away):
        """None if this request is left out of the log; otherwise how many were before it."""
        with self._lock:
            if turned_away:
                now = self._clock()
                if self._logged_at is not None and now - self._logged_at < TURNED_AWAY_EVERY:
                    self._count += 1
                    return None
                self._logged_at = now
            count, self._count = self._count, 0
            return count


class AccessLog:
    """WSGI middleware, outermost, so that it sees every answer, refused ones too."""

    def __init__(self, app, clock=time.monotonic):
        self.app = app
        self.left_out = _LeftOut(clock)

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        status = {}

        def record_start(line, headers, exc_info=None):
            status["code"] = int(line.split(" ", 1)[0])
            return start_response(line, headers, exc_info)

        return _Logged(self.app(environ, record_start), environ, status, started, self.left_out)


class _Logged:
    """The answer's body, counted as the server sends it; logged when it is closed."""

    def __init__(self, body, environ, status, started, left_out):
        self.body, self.environ, self.status, self.started = body, environ, status, started
        self.left_out = left_out
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
        left_out = self.left_out.take(environ.get(TURNED_AWAY, False))
        if left_out is None:
            return
        line = {
            "client": environ.get("REMOTE_ADDR", ""),
            "method": environ.get("REQUEST_METHOD", ""),
            "path": environ.get("PATH_INFO", ""),
            "query": environ.get("QUERY_STRING", "")[:500],
            "status": self.status.get("code"),
            "bytes": self.size,
            "ms": round((time.perf_counter() - self.started) * 1000, 2),
            "user_agent": environ.get("HTTP_USER_AGENT", "")[:500],
        }
        if left_out:
            line["turned_away"] = left_out
        # The message alone is the access line's JSON too, for handlers of other formats.
        log.info(json.dumps(line, ensure_ascii=False), extra={"access": line})


class JSONLines(logging.Formatter):
    """A log record as one JSON line (see the module's docstring)."""

    def format(self, record):
        line = {
            "time": datetime.datetime.fromtimestamp(record.created, datetime.timezone.utc)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
        }
        access = getattr(record, "access", None)
        if access is not None:
            line.update(access)
        else:
            line["message"] = record.getMessage()
            if record.exc_info:
                line["traceback"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


def configure(app):
    """Log the service's and the server's lines as JSON lines on standard error, when
    nothing else has configured logging (demoserv serve, waitress-serve, flask run);
    tests and embedding applications keep their own configuration."""
    package = logging.getLogger("demoserv")
    if app.testing or package.handlers or logging.getLogger().handlers:
        return
    handler = logging.StreamHandler()
    handler.setFormatter(JSONLines())
    for name in ("demoserv", "waitress"):
        logger = logging.getLogger(name)
        logger.setLevel(logging.INFO)
        logger.propagate = False  # a server may configure the root logger later
        logger.addHandler(handler)
