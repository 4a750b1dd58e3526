"""One JSON line per request on the ``demoserv.access`` logger: method, path, status,
duration and size, for a log shipper to parse. Server errors are logged with their
traceback by ``errors``; nothing of them reaches the client."""

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
        if not self.logged:
            self.logged = True
            environ = self.environ
            log.info(
                json.dumps(
                    {
                        "method": environ.get("REQUEST_METHOD", ""),
                        "path": environ.get("PATH_INFO", ""),
                        "query": environ.get("QUERY_STRING", "")[:500],
                        "status": self.status.get("code"),
                        "ms": round((time.perf_counter() - self.started) * 1000, 2),
                        "bytes": self.size,
                    },
                    ensure_ascii=False,
                )
            )


def configure(app):
    """Log to standard error when nothing else has configured logging (waitress-serve,
    flask run); tests and embedding applications keep their own configuration."""
    package = logging.getLogger("demoserv")
    if app.testing or package.handlers or logging.getLogger().handlers:
        return
    package.setLevel(logging.INFO)
    package.propagate = False  # a server may configure the root logger later
    handler = logging.StreamHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    package.addHandler(handler)
    access = logging.getLogger("demoserv.access")
    access.propagate = False
    access_handler = logging.StreamHandler()
    access_handler.setFormatter(logging.Formatter("%(message)s"))
    access.addHandler(access_handler)
