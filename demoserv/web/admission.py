"""New listings refused before Flask while the listings' guard holds all the requests it
may (``listings/guard.py``): a request for a listing that the guard would have to find
(``Endpoint.new_listing``: a list's filtered or several-key listing, not kept) is
answered the guard's 503 at once, with the bytes Flask gave the last such refusal of the
same form: the request's key, which kept answers found before it with the catalogue
served (``kept_answers.LOOKED_UP``), but for its address, which a refusal does not
depend on.

Flask's steps cost about half a millisecond a request; this costs a tenth of that. Under
a server of few threads (waitress's default 4), clients flooding never-seen listings
share the threads the guard leaves free with readers, and readers queue behind their
refusals: cheap ones keep that queue short. Anything this cannot decide alone (a bad
parameter, an address of no list, a request that asks for a format, a callback or a
304, or one over the size limits) and every request while the guard admits more is
Flask's to answer, as always."""

from werkzeug.exceptions import HTTPException

from ..api.error import APIError
from ..byte_cache import ByteCache
from ..listings import guard, kept
from . import access_log, kept_answers
from .error_handlers import ANSWERED_ERROR
from .negotiation import PATH_FORMAT_ARG
from .request_limits import MAX_PATH, MAX_QUERY
from .views import endpoints

REFUSALS_BYTES = 64 * 1024  # the refusals kept, one a form: a few hundred bytes each
ADDRESS = slice(6, 8)  # the path and query in a request key
ASKING = ("format", "callback")  # parameters whose answer negotiation decides


class Admission:
    """WSGI middleware inside the kept answers: the guard's refusal, kept by form, for
    a request for a new listing while the guard holds all it may."""

    def __init__(self, app, wsgi_app):
        self.app, self.wsgi_app = app, wsgi_app
        self.refusals = ByteCache(REFUSALS_BYTES)

    def __call__(self, environ, start_response):
        if self.app.extensions[guard.EXTENSION].admits():
            return self.wsgi_app(environ, start_response)
        form = self._new_listing_form(environ)
        if form is None:
            return self.wsgi_app(environ, start_response)
        refusal = self.refusals.find(form)
        if refusal is not None:
            status, headers, body = refusal
            environ[access_log.TALLIED] = True
            start_response(status, list(headers))
            return [body]
        return self._refused(form, environ, start_response)

    def _new_listing_form(self, environ):
        """The form of the request (its key without its address) if it asks for a new
        listing and nothing else decides its answer first; None otherwise."""
        looked_up = environ.get(kept_answers.LOOKED_UP)
        if looked_up is None:  # a body, large headers, no catalogue: never kept, Flask's
            return None
        key, catalogue = looked_up
        if key[-2:] != (None, None):  # a 304 asked
            return None
        path, query = key[ADDRESS]
        if len(path) > MAX_PATH or len(query) > MAX_QUERY:
            return None
        try:
            endpoint, values = self.app.url_map.bind_to_environ(environ).match()
        except HTTPException:  # no address, a redirect, another method: Flask's answer
            return None
        check = self.app.extensions[endpoints.EXTENSION].new_listings.get(endpoint)
        if check is None or PATH_FORMAT_ARG in values:
            return None
        args = self.app.request_class(environ).args
        if any(name in args for name in ASKING):
            return None
        try:
            if not check(args, catalogue, self.app.extensions[kept.EXTENSION]):
                return None
        except APIError:  # a bad parameter: Flask's answer
            return None
        return key[: ADDRESS.start] + key[ADDRESS.stop :]

    def _refused(self, form, environ, start_response):
        """Flask's answer, kept for the form if it is the guard's refusal."""
        started = []

        def record_start(status, headers, exc_info=None):
            started[:] = (status, headers)
            return start_response(status, headers, exc_info)

        body = self.wsgi_app(environ, record_start)
        if not isinstance(environ.get(ANSWERED_ERROR), guard.Busy) or not started:
            return body
        data = kept_answers.read_whole(body)
        status, headers = started
        size = len(data) + sum(len(name) + len(value) for name, value in headers)
        self.refusals.keep(form, (status, list(headers), data), size)
        return [data]
