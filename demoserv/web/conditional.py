"""HTTP caching of API answers: a strong ETag, Last-Modified, Cache-Control, and 304.

A catalogue file never changes while it is served, so an answer is fixed by the
catalogue version and the request's address: the ETag is derived from those (and the
site URL the records link to, and the form the Accept header chose: JSONP, indentation)
without looking at the body, and a request that already holds it is answered 304 before
any query runs. A load gives a new version, and so new ETags. The changes feed's answers
depend on the history of loads too (``follows_history``): their ETags also follow a
digest of it. Compressed answers carry the ETag with a ``-gzip`` or ``-br`` suffix, as they are
different bytes; either form matches. The status page, whose facts follow the previous
catalogue file as well, is labelled by its own bytes instead (``label_by_content``).

A 304 carries the headers its 200 would, but for those of the body itself
(Content-Length, Content-Encoding): the API's views answer JSON, and a view that
answers another type declares it (``answers_as``), so that a 304 sent before the view
runs carries it too.
"""

import datetime
import hashlib

from flask import current_app, request
from werkzeug.http import http_date, parse_date

from .compression import encoded_tag
from .db import CatalogueUnavailable, get_catalogue
from .kept_answers import BUILT_FROM
from .negotiation import representation_key, under_adhoc_prefix, under_api_prefix

ENCODING_SUFFIXES = ("-gzip", "-br")


def follows_history(view):
    """Mark ``view`` as answering from the history of loads as well as the records: its
    ETags follow the history too (two files of one version may hold other histories)."""
    view.follows_history = True
    return view


def answers_as(content_type):
    """Declare the Content-Type of a view's answers, where it is not the API's JSON: its
    304s carry it too."""

    def declare(view):
        view.content_type = content_type
        return view

    return declare


def _view():
    return current_app.view_functions.get(request.endpoint)


def _follows_history():
    return getattr(_view(), "follows_history", False)


def _tag():
    catalogue = get_catalogue()
    validators = [
        catalogue.version,
        request.url,
        current_app.config["SITE_URL"],
        representation_key(),
    ]
    if _follows_history():
        validators.append(catalogue.history or "")
    digest = hashlib.sha256("\0".join(validators).encode()).hexdigest()[:32]
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
    return request.method in ("GET", "HEAD") and (under_api_prefix() or under_adhoc_prefix())


def _held_tag(tag):
    """The form of ``tag`` (plain or with an encoding) that If-None-Match names, or None."""
    for item in request.headers.get("If-None-Match", "").split(","):
        if _opaque(item) == tag:
            return item.strip().removeprefix("W/")
    return None


def _holds_any():
    """Whether If-None-Match is ``*``, or (without If-None-Match) If-Modified-Since is
    not before the load: validators that name no particular answer, so they count only
    once the answer is known to be a 200."""
    if_none_match = request.headers.get("If-None-Match")
    if if_none_match is not None:
        return "*" in (item.strip() for item in if_none_match.split(","))
    since = parse_date(request.headers.get("If-Modified-Since"))
    return since is not None and _loaded_at() <= since


def _not_modified(tag, content_type=None):
    """A 304 for the answer whose ETag is ``tag`` and type ``content_type`` (by default
    the view's declared one; the API's JSON is set by ``negotiation.label``)."""
    response = current_app.response_class(status=304)
    content_type = content_type or getattr(_view(), "content_type", None)
    if content_type:
        response.headers["Content-Type"] = content_type
    _label(response, tag)
    return response


def answer_conditional():
    """304 before any query runs, for a client that names this answer's own ETag (in
    the form it holds it): it was only ever given for a 200 to this URL in this
    catalogue version."""
    if not _cacheable() or request.routing_exception is not None:
        return None
    try:
        tag = _tag()
    except CatalogueUnavailable:
        return None  # the view answers 503 if it needs the catalogue
    request.etag = tag
    held = _held_tag(tag)
    return _not_modified(held) if held else None


def _label(response, tag):
    catalogue = get_catalogue()
    request.environ[BUILT_FROM] = catalogue  # fully determined: it may be kept
    response.vary.add("Accept-Encoding")  # the same on a 304 as on its 200
    response.headers["X-Catalogue-Version"] = catalogue.version
    response.headers["ETag"] = tag
    response.headers["Cache-Control"] = (
        f"public, max-age={int(current_app.config['CACHE_MAX_AGE'])}"
    )
    response.headers["Last-Modified"] = http_date(_loaded_at())


def label_fresh(response):
    """Cache headers on a 200; and a 304 instead, when ``If-None-Match: *`` or a current
    If-Modified-Since asks for one. Errors and redirects are never replaced."""
    tag = request.etag
    if tag is None or response.status_code != 200:
        return response
    if _holds_any():
        return _not_modified(encoded_tag(response, tag), response.headers["Content-Type"])
    _label(response, tag)
    return response


def label_by_content(response):
    """Validators of an answer that the catalogue version alone does not fix (the
    status page): X-Catalogue-Version, an ETag digested from its body and form, and
    ``no-cache``, so that clients revalidate; a 304 when If-None-Match names it."""
    request.etag = None  # not the tag of the catalogue version and URL
    form = representation_key().encode()
    tag = f'"{hashlib.sha256(response.get_data() + form).hexdigest()[:32]}"'
    held = _held_tag(tag)
    if held:
        response = current_app.response_class(status=304)
        tag = held
    response.headers["X-Catalogue-Version"] = get_catalogue().version
    response.headers["ETag"] = tag
    response.headers["Cache-Control"] = "no-cache"
    return response
