"""Every request the suite sends in-process is answered twice by ``KeptAnswers`` itself:
cold, as if nothing were kept, and then, if that answer was kept, warm, from what was
kept. Status, every header and the body must be the same byte for byte, and the warm
answer must not be built again. ``conftest.py`` puts this in place of
``kept_answers.KeptAnswers`` for the session. Requests on other threads keep answers
meanwhile: each request counts its own builds, and none empties what another kept."""

from demoserv.web.kept_answers import KeptAnswers, read_whole


def _answer(app, environ):
    """(status, headers, body) of ``app``'s answer to ``environ``."""
    started = []

    def start_response(status, headers, exc_info=None):
        started.append((status, list(headers)))

    data = read_whole(app(environ, start_response))
    return (*started[-1], data)


class _Missing:
    """The shared cache as one request's cold answer sees it: every lookup a miss, though
    it still counts (so that a switch of files empties the cache); what is built is kept,
    and where (``kept_as``) noted."""

    def __init__(self, cache):
        self.cache, self.kept_as = cache, None

    def find(self, key, served):
        self.cache.find(key, served)
        return None

    def keep(self, key, answer, size, served):
        self.kept_as = (key, served)
        self.cache.keep(key, answer, size, served)


class AnsweredTwice(KeptAnswers):
    def __call__(self, environ, start_response):
        warm_environ = dict(environ)  # before the app adds to it
        builds = 0  # of this request

        def build(environ, start_response):
            nonlocal builds
            builds += 1
            return self.app(environ, start_response)

        missing = _Missing(self.cache)
        cold = _answer(KeptAnswers(build, missing, self.database), environ)
        if missing.kept_as is not None and self.cache.find(*missing.kept_as) is not None:
            warm = _answer(KeptAnswers(build, self.cache, self.database), warm_environ)
            assert builds == 1, "a kept answer was built again"
            assert warm == cold, (environ["PATH_INFO"], environ["QUERY_STRING"], cold, warm)
        status, headers, data = cold
        start_response(status, headers)
        return [data]
