"""The upstream's ``/api/adhoc/`` paths: the id maps and lists that other scene sites
read (UPSTREAM.md), each answer read as stored at load (``loader/adhoc_answers.py``), with
the upstream's bytes and ``Content-Type``, and this service's conventions around them
(JSON errors, 405 for writes, the redirect to the trailing slash, ETag and 304,
compression, CORS: ``pipeline``)."""

import datetime
from urllib.parse import urlsplit

from flask import Blueprint, current_app, request
from sqlalchemy import bindparam, select

from ...api.error import APIError
from ...store import tables
from ...store.values import ADHOC_MONTH_PATHS, ADHOC_SITE_HOST
from ..conditional import answers_as
from ..db import get_connection
from ..negotiation import ADHOC_PREFIX, last_arg

JSON_TYPE = "text/javascript"
CSV_TYPE = "text/plain;charset=utf-8"
KLUBI, SCENESAT = ADHOC_MONTH_PATHS
# Each path answered from a stored answer: its Content-Type and what it holds.
PATHS = {
    "pouet-credits/": (
        JSON_TYPE,
        "Credits of sceners with a Pouet account on productions with a Pouet id: "
        '[{"pouet_prod_id": "...", "pouet_user_id": "...", "role": "Code, Music (Outro)"}].',
    ),
    "pouet/prod-demozoo-ids-by-pouet-id/": (
        JSON_TYPE,
        'Productions by Pouet id: [{"pouet_id": N, "demozoo_id": N}].',
    ),
    "pouet/group-demozoo-ids-by-pouet-id/": (
        JSON_TYPE,
        'Groups by Pouet id: [{"pouet_id": N, "demozoo_id": N}].',
    ),
    "pouet/party-demozoo-ids-by-pouet-id/": (
        JSON_TYPE,
        'Parties by Pouet id and year: [{"pouet_id": N, "year": N, "demozoo_id": N}].',
    ),
    "zxdemo/prod-demozoo-ids-by-zxdemo-id/": (
        JSON_TYPE,
        'Productions by zxdemo.org id: [{"zxdemo_id": N, "demozoo_id": N}].',
    ),
    "zxdemo/group-demozoo-ids-by-zxdemo-id/": (
        JSON_TYPE,
        'Releasers by zxdemo.org id: [{"zxdemo_id": N, "demozoo_id": N}].',
    ),
    "zxdemo/party-demozoo-ids-by-zxdemo-id/": (
        JSON_TYPE,
        'Parties by zxdemo.org id: [{"zxdemo_id": N, "demozoo_id": N}].',
    ),
    "eq/demos/": (CSV_TYPE, "ZX Spectrum productions, by title (CSV)."),
    "group-abbreviations/": (CSV_TYPE, "Every nick of every group, by name (CSV)."),
    KLUBI: (CSV_TYPE, "Productions released in a month, for a demo show (CSV)."),
    SCENESAT: (CSV_TYPE, "Music released in a month (CSV)."),
}
METEORIKS = "meteoriks/candidates/<int:year>/"
# A month's answer, else the path's own (a month list's empty one): the month first.
ANSWER = (
    select(tables.adhoc_answers.c.body)
    .where(
        tables.adhoc_answers.c.path == bindparam("path"),
        tables.adhoc_answers.c.month.in_([bindparam("month"), ""]),
    )
    .order_by(tables.adhoc_answers.c.month.desc())
    .limit(1)
)

bp = Blueprint("adhoc", __name__, url_prefix=ADHOC_PREFIX)


def requested_month():
    """``YYYY-MM`` of the ``month`` parameter as the upstream parses it (``%Y-%m``:
    ``2004-6`` is June 2004), or None when it is missing or unparsable."""
    try:
        return datetime.datetime.strptime(last_arg("month"), "%Y-%m").strftime("%Y-%m")
    except (TypeError, ValueError):
        return None


def previous_month(today):
    """``YYYY-MM`` of the calendar month before ``today``'s."""
    return (today.replace(day=1) - datetime.timedelta(days=1)).strftime("%Y-%m")


def site_host():
    """The configured site's host (and path), which stored answers leave out."""
    site = urlsplit(current_app.config["SITE_URL"])
    return (site.netloc + site.path.rstrip("/")).encode()


def stored_answer(path):
    month = ""
    if path in ADHOC_MONTH_PATHS:
        month = requested_month()
        if month is None:
            # The month before the current one: this URL's answer changes with the
            # date, so it carries no ETag that would outlive it.
            month = previous_month(datetime.datetime.now(datetime.timezone.utc).date())
            request.etag = None
    body = get_connection().execute(ANSWER, {"path": path, "month": month}).scalar()
    if body is None:
        raise APIError(404)
    body = body.replace(ADHOC_SITE_HOST.encode(), site_host())
    return current_app.response_class(body, content_type=PATHS[path][0])


def meteoriks_candidates(year):
    raise APIError(403, "You do not have permission to perform this action.")


def _route(path):
    # OPTIONS answers as GET, as the upstream's plain views do.
    bp.add_url_rule(
        f"/{path}",
        path,
        answers_as(PATHS[path][0])(lambda: stored_answer(path)),
        methods=["GET", "OPTIONS"],
        provide_automatic_options=False,
    )


for _path in PATHS:
    _route(_path)
bp.add_url_rule(
    f"/{METEORIKS}",
    "meteoriks_candidates",
    meteoriks_candidates,
    methods=["GET", "OPTIONS"],
    provide_automatic_options=False,
)


def openapi_paths(errors, not_modified):
    """The OpenAPI document's part for these paths (web/views/openapi.py, which gives
    its ``errors`` function and its 304 answer)."""
    error = {"$ref": "#/components/schemas/Error"}
    month = {
        "name": "month",
        "in": "query",
        "description": "YYYY-MM (or YYYY-M); missing or anything else: the month before "
        "the current one (UTC).",
        "schema": {"type": "string"},
        "example": "2004-10",
    }
    paths = {}
    for path, (content_type, description) in PATHS.items():
        answer = {
            "summary": description,
            "parameters": [month] if path in ADHOC_MONTH_PATHS else [],
            "responses": {
                "200": {
                    "description": "The upstream's bytes: CSV text cells are Python bytes "
                    "literals (b'...'), as the upstream writes them.",
                    "content": {content_type: {"schema": {"type": "string"}}},
                },
                **errors("503"),
                "404": {
                    "description": "The served catalogue file holds no such answer.",
                    "content": {"application/json": {"schema": error}},
                },
            },
        }
        get = {**answer, "responses": {**answer["responses"], "304": not_modified}}
        paths[f"{ADHOC_PREFIX}/{path}"] = {"get": get, "options": answer}
    refused = {
        "summary": "Staff only upstream: always refused.",
        "responses": {
            "403": {
                "description": "Not permitted.",
                "content": {"application/json": {"schema": error}},
            },
            **errors(),
            "404": {
                "description": "A year that is not a whole number.",
                "content": {"application/json": {"schema": error}},
            },
        },
    }
    paths[f"{ADHOC_PREFIX}/meteoriks/candidates/{{year}}/"] = {
        "parameters": [
            {
                "name": "year",
                "in": "path",
                "required": True,
                "description": "ASCII digits.",
                "schema": {"type": "integer", "minimum": 0},
            }
        ],
        "get": refused,
        "options": refused,
    }
    return paths
