"""``/api/v1/changes/``: the records added, changed or removed since a catalogue version,
read from the history that each load stores (``loader/history.py``): the net change
of each record over the loads after that version, paged and linked as every list.

Each answer reads rows built at load (``loader/feed.py``): a few lookups and the
range of the page's records, so its cost is bounded by the page size, never by the
history's or the catalogue's; no request compares catalogues or groups the history. Not
a resource, so not in the API root."""

import re

import orjson
from sqlalchemy import and_, func, select

from ...api.error import APIError
from ...api.parameters import PAGE, RENDERING
from ...resources import BY_NAME, RESOURCES
from ...store import tables
from ...store.addresses import api_url
from ...store.values import MAX_ID
from .. import pagination
from ..address_style import request_style
from ..conditional import follows_history
from ..db import get_connection
from ..negotiation import last_arg
from . import openapi
from .endpoints import Endpoint, options_body
from .resources import json_response

PAGE_SIZE = 100  # entries a page, as in a resource's listing
VERSION = re.compile(r"[0-9a-f]{32}")
PARAMETERS = {
    "since": "A catalogue version (X-Catalogue-Version, or status's version): the net "
    "change of each record from that version to the one served. Without it: the changes "
    "of the last load. A version the history does not hold is a 410: fetch the lists "
    "again.",
    "resource": "Only the changes of this resource: " + ", ".join(sorted(BY_NAME)) + ".",
    "page": PAGE,
    **RENDERING,
}

loads = tables.catalogue_loads
records = tables.feed_records
kinds = tables.feed_changes
later = kinds.alias("later")
skips = tables.feed_skips
spans = tables.feed_spans


def _invalid(parameter, expected):
    return APIError(400, f'Invalid value for "{parameter}": expected {expected}.')


def _since(connection):
    """The number of the last load the client has seen (without ``since``: the load
    before the last one): the changes after it are asked."""
    since = last_arg("since")
    if not since:
        last = select(func.max(loads.c.load_number)).scalar_subquery()
        before_last = connection.execute(
            select(func.max(loads.c.load_number)).where(loads.c.load_number < last)
        ).scalar()
        return before_last or 0
    if not VERSION.fullmatch(since):
        raise _invalid("since", "a catalogue version (32 hexadecimal digits, lower case)")
    found = connection.execute(
        select(func.max(loads.c.load_number)).where(loads.c.version == since)
    ).scalar()
    if found is None:
        # Every parameter is checked first: a page past the first is not one of an
        # empty listing, gone or not.
        pagination.current_page(0, PAGE_SIZE)
        first = select(func.min(loads.c.load_number)).scalar_subquery()
        oldest = connection.execute(
            select(loads.c.loaded_at).where(loads.c.load_number == first)
        ).scalar()
        raise APIError(
            410,
            f"The catalogue version {since} is not in this mirror's history of changes "
            f"(it goes back to the load of {oldest}): fetch the lists again, then ask for "
            "the changes since the version they carry (X-Catalogue-Version).",
        )
    return found


def _resource():
    name = last_arg("resource")
    if not name:
        return None
    if name not in BY_NAME:
        raise _invalid("resource", "one of " + ", ".join(sorted(BY_NAME)))
    return name


def _page(connection, since, scope):
    """(page, rows) of the feed since load ``since`` in ``scope``, as built at load
    (``loader/feed.py``): its count, the number of records left out before the page
    (one lookup), then the page's records from there, each one's change by its first
    change after ``since`` (null: left out)."""
    span = connection.execute(
        select(spans.c.start, spans.c.count).where(
            spans.c.since_load == since, spans.c.scope == scope
        )
    ).first()
    start, count = span or (0, 0)
    page = pagination.current_page(count, PAGE_SIZE)
    if not count:
        return page, []
    skipped = connection.execute(
        select(skips.c.skipped)
        .where(
            skips.c.since_load == since,
            skips.c.scope == scope,
            skips.c.entries_before <= page.start,
        )
        .order_by(skips.c.entries_before.desc(), skips.c.skipped.desc())
        .limit(1)
    ).scalar()
    first_after = (
        select(func.min(later.c.load_number))
        .where(
            later.c.resource == records.c.resource,
            later.c.id == records.c.id,
            later.c.load_number > since,
        )
        .scalar_subquery()
    )
    rows = connection.execute(
        select(records.c.resource, records.c.id, kinds.c.change, loads.c.version)
        .add_columns(loads.c.loaded_at)
        .join_from(
            records,
            kinds,
            and_(
                kinds.c.resource == records.c.resource,
                kinds.c.id == records.c.id,
                kinds.c.load_number == first_after,
            ),
        )
        .join(loads, loads.c.load_number == records.c.last_load)
        .where(
            records.c.scope == scope,
            records.c.position >= start + page.start + (skipped or 0),
            kinds.c.change.is_not(None),
        )
        .order_by(records.c.position)
        .limit(page.size)
    )
    return page, rows


@follows_history
def changes_list():
    connection = get_connection()
    resource = _resource()
    page, rows = _page(connection, _since(connection), resource or tables.FEED_ALL)
    style = request_style()
    results = [
        {
            "resource": resource,
            "id": record_id,
            "change": change,
            "url": None if change == "removed" else api_url(resource, record_id, style=style),
            "version": version,
            "loaded_at": loaded_at,
        }
        for resource, record_id, change, version, loaded_at in rows
    ]
    return json_response(pagination.envelope_json(page, orjson.dumps(results)))


def describe():
    return options_body(
        "Changes List",
        "The records added, changed or removed since a catalogue version, for clients "
        "that keep a copy of the catalogue in step.",
        PARAMETERS,
    )


def _entry():
    text = {"type": "string"}
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["resource", "id", "change", "url", "version", "loaded_at"],
        "properties": {
            "resource": {"type": "string", "enum": [resource.name for resource in RESOURCES]},
            "id": {"type": "integer", "minimum": 1, "maximum": MAX_ID},
            "change": {"type": "string", "enum": ["added", "changed", "removed"]},
            "url": {
                "type": ["string", "null"],
                "format": "uri",
                "description": "The record's detail address; null for a removed record.",
            },
            "version": {**text, "description": "The version of the load that last changed it."},
            "loaded_at": {**text, "description": "When that load's records were served (UTC)."},
        },
    }


def _parameters():
    described = PARAMETERS
    names = [resource.name for resource in RESOURCES]
    return [
        openapi.parameter(
            "since", described["since"], {"type": "string", "pattern": "^([0-9a-f]{32})?$"}
        ),
        openapi.parameter(
            "resource", described["resource"], {"type": "string", "enum": [*names, ""]}
        ),
        openapi.parameter("page", described["page"], openapi.PAGE_SCHEMA),
        *(item for item in openapi.COMMON_PARAMETERS if item["name"] in described),
    ]


def _operations(spec):
    spec.components.schema("ChangesEntry", _entry())
    spec.components.schema("ChangesPage", openapi.page("ChangesEntry", PAGE_SIZE))
    return {
        "get": {
            "summary": "The records added, changed or removed since a catalogue version",
            "description": "One entry per record whose detail record differs between "
            "the version since and the one served (the net change), ordered by the "
            "load that last changed it, then resource and id. Built at load: see "
            "docs/changes.md.",
            "parameters": _parameters(),
            "responses": openapi.answers(
                openapi.json_or_jsonp(openapi.ref("ChangesPage"), "One page of the changes."),
                "404",
                "406",
                "410",
                "503",
            ),
        },
        "options": openapi.options("the changes feed"),
    }


ENDPOINT = Endpoint("/changes/", "changes", changes_list, _operations, describe)
