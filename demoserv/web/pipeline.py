"""What happens to a request, in order. This is the one place that adds request hooks
and middleware, so the order is read here rather than inferred from the order of calls
in ``create_app``.

==========  ======================  ==========================================================
stage       step                    what it does
==========  ======================  ==========================================================
WSGI        access log              ``access_log.AccessLog``, outermost: one log line for
                                    every answer, refused ones too
WSGI        proxy headers           ``ProxyFix`` when ``TRUSTED_PROXIES`` is set
WSGI        kept answers            ``kept_answers.KeptAnswers``: a repeated request gets
                                    the bytes kept for it, before Flask; an answer that
                                    ``caching`` labels is kept (``ANSWER_CACHE_BYTES``)
WSGI        admission               ``admission.Admission``: while the listings' guard
                                    holds all it may, a request for a new listing gets
                                    its refusal (503) before Flask
before      refuse unusable         ``request_limits.refuse_unusable``: sizes, bad or untrusted Host
before      negotiate               ``negotiation.negotiate``: ``format=`` and ``Accept``
before      conditional answer      ``conditional.answer_conditional``: a 304 before any query
view        the resource's view     a blueprint of ``resources``; an error becomes a JSON
                                    answer (``errors``) and goes on through the steps below
after       representation          ``negotiation.represent``: a 200 wrapped for JSONP, or JSON
                                    indented, as negotiated
after       browsable page          ``browsable.render``: the JSON answer as its HTML page,
                                    for a browser (as negotiated)
after       cache headers           ``conditional.label_fresh``: ETag, Cache-Control,
                                    Last-Modified, X-Catalogue-Version (or a 304)
after       API headers             ``negotiation.label``: Content-Type, Allow, CORS, nosniff
after       compression             ``compression.compress``: gzip or brotli, last, so it
                                    sees the final body and headers
teardown    close connection        ``db.close_connection``: each request reads the
                                    catalogue current when it started
==========  ======================  ==========================================================

A step that returns an answer (a refusal, a 304) skips the steps before the view that
follow it and the view; the ``after`` steps run on every answer. A kept answer skips
every step inside the kept answers: it is what they gave the first time.
"""

from werkzeug.middleware.proxy_fix import ProxyFix

from ..byte_cache import ByteCache
from . import browsable, compression, conditional, db, negotiation, request_limits
from .access_log import AccessLog
from .admission import Admission


def proxy_headers(app, wsgi_app):
    """X-Forwarded-For, -Proto, -Host, -Port and -Prefix from ``TRUSTED_PROXIES`` proxies."""
    proxies = int(app.config["TRUSTED_PROXIES"])
    if not proxies:
        return wsgi_app
    return ProxyFix(
        wsgi_app, x_for=proxies, x_proto=proxies, x_host=proxies, x_port=proxies, x_prefix=proxies
    )


def access_log(app, wsgi_app):
    return AccessLog(wsgi_app)


def kept_answers(app, wsgi_app):
    """Answers kept within ``ANSWER_CACHE_BYTES`` (0: none kept), by the app's
    ``kept_answers_class`` (the factory's argument)."""
    budget = int(app.config["ANSWER_CACHE_BYTES"])
    if not budget:
        return wsgi_app
    cache = app.extensions["demoserv.web.kept_answers"] = ByteCache(budget)
    return app.kept_answers_class(wsgi_app, cache, db.get_database(app))


def admission(app, wsgi_app):
    return Admission(app, wsgi_app)


# Each stage's steps in the order a request meets them.
MIDDLEWARE = (access_log, proxy_headers, kept_answers, admission)
BEFORE = (request_limits.refuse_unusable, negotiation.negotiate, conditional.answer_conditional)
AFTER = (
    negotiation.represent,
    browsable.render,
    conditional.label_fresh,
    negotiation.label,
    compression.compress,
)
TEARDOWN = (db.close_connection,)


def init_app(app):
    for step in BEFORE:
        app.before_request(step)
    # Flask calls after_request functions last added first.
    for step in reversed(AFTER):
        app.after_request(step)
    for step in TEARDOWN:
        app.teardown_request(step)
    # The outermost middleware wraps last.
    for step in reversed(MIDDLEWARE):
        app.wsgi_app = step(app, app.wsgi_app)
