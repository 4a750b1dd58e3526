"""HTTP caching of API answers: a strong ETag, Last-Modified, Cache-Control, and 304.

A catalogue file never changes while it is served, so an answer is fixed by the
catalogue version and the request's address: the ETag is derived from those (and the
site URL the records link to) without looking at the body, and a request that already
holds it is answered 304 before any query runs. A load gives a new version, and so new
ETags. Compressed answers carry the ETag with a ``-gzip`` or ``-br`` suffix, as they are
different bytes; either form matches.
"""

import datetime
import hashlib

from flask import current_app, request
from werkzeug.http import http_date, parse_date

from .db import CatalogueUnavailable, get_catalogue
from .rendering import under_api_prefix

ENCODING_SUFFIXES = ("-gzip", "-br")


def _tag():
    catalogue = get_catalogue()
    digest = hashlib.sha256(
        "\0".join((catalogue.version, request.url, current_app.config["SITE_URL"])).encode()
    ).hexdigest()[:32]
    return f'"{digest}"'


def _opaque(tag):
    """A tag from If-None-Match without W/ and without an encoding suffix."""
    tag = tag.strip().removeprefix("W/")
    for suffix in ENCODING_SUFFIXES:
        if tag.endswith(f'{suffix}"'):
            return tag[: -len(suffix) - 1] + '"'
    return tag


def _loaded_at():
    return datetime.datetime.fromisoformat(get_catalogue().loaded_at)


def _cacheable():
    return request.method in ("GET", "HEAD") and under_api_prefix()


def _holds(tag, answer_is_200):
    """Whether the request's validators say the client holds the answer tagged ``tag``.
    If-None-Match naming the tag always counts; ``*`` and If-Modified-Since count only
    once the answer is known to be a 200, as they name no particular answer."""
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:
        held = [_opaque(item) for item in if_none_match.split(",")]
        return tag in held or (answer_is_200 and "*" in held)
    since = parse_date(request.headers.get("If-Modified-Since"))
    return answer_is_200 and since is not None and _loaded_at() <= since


def _not_modified(tag):
    response = current_app.response_class(status=304)
    _label(response, tag)
    return response


def _answer_conditional():
    """304 before any query runs, for a client that names this answer's own ETag: it
    was only ever given for a 200 to this URL in this catalogue version."""
    if not _cacheable() or request.routing_exception is not None:
        return None
    try:
        tag = _tag()
    except CatalogueUnavailable:
        return None  # the view answers 503 if it needs the catalogue
    request.environ["demoserv.etag"] = tag
    return _not_modified(tag) if _holds(tag, answer_is_200=False) else None


def _label(response, tag):
    response.vary.add("Accept-Encoding")  # the same on a 304 as on its 200
    response.headers["ETag"] = tag
    response.headers["Cache-Control"] = (
        f"public, max-age={int(current_app.config['CACHE_MAX_AGE'])}"
    )
    response.headers["Last-Modified"] = http_date(_loaded_at())


def _label_fresh(response):
    """Cache headers on a 200; and a 304 instead, when ``If-None-Match: *`` or a current
    If-Modified-Since asks for one. Errors and redirects are never replaced."""
    tag = request.environ.get("demoserv.etag")
    if tag is None or response.status_code != 200:
        return response
    if _holds(tag, answer_is_200=True):
        return _not_modified(tag)
    _label(response, tag)
    return response


def init_app(app):
    app.before_request(_answer_conditional)
    app.after_request(_label_fresh)
