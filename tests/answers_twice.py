"""Every request the suite sends in-process is answered twice: cold, with nothing kept,
and then, if that answer was kept, warm, from what was kept. Status, every header and
the body must be the same byte for byte, and the warm answer must not be built again.
``conftest.py`` puts this in place of ``answer_cache.KeptAnswers`` for the session."""

from demoserv.answer_cache import KeptAnswers, read_whole


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
        self.built = 0

    def _build(self, environ, start_response):
        self.built += 1
        return self._app(environ, start_response)

    def __call__(self, environ, start_response):
        warm_environ = dict(environ)  # before the app adds to it
        self.cache.clear()
        cold = _answer(super().__call__, environ)
        if len(self.cache):
            built = self.built
            warm = _answer(super().__call__, warm_environ)
            assert self.built == built, "a kept answer was built again"
            assert warm == cold, (environ["PATH_INFO"], environ["QUERY_STRING"], cold, warm)
        status, headers, data = cold
        start_response(status, headers)
        return [data]
