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
from .rendering import API_PREFIX

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
    # The whole prefix: the JSON API and its docs page.
    path = request.path
    under_prefix = path == API_PREFIX or path.startswith(API_PREFIX + "/")
    return request.method in ("GET", "HEAD") and under_prefix


def _answer_conditional():
    if not _cacheable():
        return None
    try:
        tag = _tag()
    except CatalogueUnavailable:
        return None  # the view answers 503 if it needs the catalogue
    request.environ["demoserv.etag"] = tag
    loaded = _loaded_at()
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:
        held = [_opaque(item) for item in if_none_match.split(",")]
        fresh = "*" in held or tag in held
    else:
        since = parse_date(request.headers.get("If-Modified-Since"))
        fresh = since is not None and loaded <= since
    if not fresh:
        return None
    response = current_app.response_class(status=304)
    _label(response, tag, loaded)
    return response


def _label(response, tag, loaded):
    response.headers["ETag"] = tag
    response.headers["Cache-Control"] = (
        f"public, max-age={int(current_app.config['CACHE_MAX_AGE'])}"
    )
    response.headers["Last-Modified"] = http_date(loaded)


def _label_fresh(response):
    tag = request.environ.get("demoserv.etag")
    if tag is not None and response.status_code == 200:
        _label(response, tag, _loaded_at())
    return response


def init_app(app):
    app.before_request(_answer_conditional)
    app.after_request(_label_fresh)
