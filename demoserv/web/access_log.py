"""The log: JSON lines on standard error, one format for the service's own lines, the
server's (waitress's) and the access lines, for a log shipper to parse. Every line has
``time`` (UTC, ISO 8601), ``level`` and ``logger``; an access line (logger
``demoserv.access``, one per request) adds ``client``, ``method``, ``path``, ``query``,
``status``, ``bytes``, ``ms`` and ``user_agent``; any other line adds ``message`` (and
``traceback`` for a server error, logged by ``errors``; nothing of it reaches the client)."""

import datetime
import json
import logging
import time

log = logging.getLogger("demoserv.access")


class AccessLog:
    """WSGI middleware, outermost, so that it sees every answer, refused ones too."""

    def __init__(self, app):
        self.app = app

    def __call__(self, environ, start_response):
        started = time.perf_counter()
        status = {}

        def record_start(line, headers, exc_info=None):
            status["code"] = int(line.split(" ", 1)[0])
            return start_response(line, headers, exc_info)

        return _Logged(self.app(environ, record_start), environ, status, started)


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
            "path": environ.get("PATH_INFO", ""),
            "query": environ.get("QUERY_STRING", "")[:500],
            "status": self.status.get("code"),
            "bytes": self.size,
            "ms": round((time.perf_counter() - self.started) * 1000, 2),
            "user_agent": environ.get("HTTP_USER_AGENT", "")[:500],
        }
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
