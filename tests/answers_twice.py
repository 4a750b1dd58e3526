"""Every request the suite sends in-process is answered twice: cold, built as if nothing
were kept, and then, if that answer was kept, warm, from what was kept. Status, every
header and the body must be the same byte for byte, and the warm answer must not be
built again. ``conftest.py`` puts this in place of ``answer_cache.KeptAnswers`` for the
session. Requests on other threads keep answers meanwhile: each thread counts its own
builds, and no request empties what another kept."""

import threading

from demoserv.answer_cache import KeptAnswers, read_whole, request_key
from demoserv.db import CatalogueUnavailable


def _answer(app, environ):
    """(status, headers, body) of ``app``'s answer to ``environ``."""
    started = []

    def start_response(status, headers, exc_info=None):
        started.append((status, list(headers)))

    data = read_whole(app(environ, start_response))
    return (*started[-1], data)


class AnsweredTwice(KeptAnswers):
    def __init__(self, app, cache, database):
        super().__init__(self._build, cache, database)
        self._app = app
        self._thread = threading.local()

    def _build(self, environ, start_response):
        self._thread.built += 1
        return self._app(environ, start_response)

    def _cold(self, environ, start_response):
        """The answer built whatever is kept, and kept where ``KeptAnswers`` keeps it."""
        key = request_key(environ)
        try:
            catalogue = None if key is None else self.database.current()
        except CatalogueUnavailable:
            catalogue = None
        if catalogue is None:
            return self._build(environ, start_response)
        self._thread.kept_as = (key, catalogue)
        self.cache.find(key, catalogue)  # a lookup: the cache follows a switch of files
        return self._built(key, environ, start_response)

    def __call__(self, environ, start_response):
        warm_environ = dict(environ)  # before the app adds to it
        thread = self._thread
        thread.built, thread.kept_as = 0, None
        cold = _answer(self._cold, environ)
        if thread.kept_as is not None and self.cache.find(*thread.kept_as) is not None:
            warm = _answer(super().__call__, warm_environ)
            assert thread.built == 1, "a kept answer was built again"
            assert warm == cold, (environ["PATH_INFO"], environ["QUERY_STRING"], cold, warm)
        status, headers, data = cold
        start_response(status, headers)
        return [data]
