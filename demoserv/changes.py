"""``/api/v1/changes/``: the records added, changed or removed since a catalogue version,
read from the history that each load stores (``catalogue/history.py``): the net change
of each record over the loads after that version, paged and linked as every list.

Each answer groups the stored rows of the loads asked for by record (the table's key
order), so its cost is bounded by the history's size, never by the catalogue's; no
request compares catalogues. Not a resource, so not in the API root."""

import re

import orjson
from flask import Blueprint
from sqlalchemy import and_, func, select

from . import pagination, tables
from .addresses import api_url
from .api_error import APIError
from .db import get_connection
from .links import request_style
from .parameters import PAGE, RENDERING
from .rendering import last_arg
from .resources import BY_NAME
from .resources.answers import add_view, json_response, options_body

CHANGES_PATH = "/api/v1/changes/"
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

bp = Blueprint("changes", __name__)

changes = tables.catalogue_changes
loads = tables.catalogue_loads
first_change = changes.alias("first_change")
last_change = changes.alias("last_change")


def _invalid(parameter, expected):
    return APIError(400, f'Invalid value for "{parameter}": expected {expected}.')


def _start(connection):
    """The number of the last load the client has seen: the changes after it are asked."""
    since = last_arg("since")
    if not since:
        last = connection.execute(select(func.max(loads.c.load_number))).scalar()
        return (last or 1) - 1
    if not VERSION.fullmatch(since):
        raise _invalid("since", "a catalogue version (32 hexadecimal digits, lower case)")
    found = connection.execute(
        select(func.max(loads.c.load_number)).where(loads.c.version == since)
    ).scalar()
    if found is None:
        # Every parameter is checked first: a page past the first is not one of an
        # empty listing, gone or not.
        pagination.current_page(0, PAGE_SIZE)
        oldest = connection.execute(
            select(loads.c.loaded_at).order_by(loads.c.load_number).limit(1)
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


def net_changes(start, resource=None):
    """(resource, id, last load number, digest before, digest after) of each record whose
    detail record differs between load ``start`` and the last: its first change after
    ``start`` gives its digest before, its last change its digest after."""
    span = select(
        changes.c.resource,
        changes.c.id,
        func.min(changes.c.load_number).label("first"),
        func.max(changes.c.load_number).label("last"),
    ).where(changes.c.load_number > start)
    if resource is not None:
        span = span.where(changes.c.resource == resource)
    span = span.group_by(changes.c.resource, changes.c.id).subquery("span")
    return (
        select(
            span.c.resource,
            span.c.id,
            span.c.last,
            first_change.c.digest_before.label("before"),
            last_change.c.digest_after.label("after"),
        )
        .join_from(span, first_change, _same_change(first_change, span, span.c.first))
        .join(last_change, _same_change(last_change, span, span.c.last))
        .where(first_change.c.digest_before.is_distinct_from(last_change.c.digest_after))
        .subquery("net")
    )


def _same_change(alias, span, number):
    return and_(
        alias.c.resource == span.c.resource,
        alias.c.id == span.c.id,
        alias.c.load_number == number,
    )


def _change(before, after):
    if before is None:
        return "added"
    return "removed" if after is None else "changed"


def changes_list():
    connection = get_connection()
    resource = _resource()
    net = net_changes(_start(connection), resource)
    count = connection.execute(select(func.count()).select_from(net)).scalar()
    page = pagination.current_page(count, PAGE_SIZE)
    rows = connection.execute(
        select(net.c.resource, net.c.id, net.c.before, net.c.after, loads.c.version)
        .add_columns(loads.c.loaded_at)
        .join_from(net, loads, loads.c.load_number == net.c.last)
        .order_by(net.c.last, net.c.resource, net.c.id)
        .offset(page.start)
        .limit(page.size)
    )
    style = request_style()
    results = [
        {
            "resource": resource,
            "id": record_id,
            "change": _change(before, after),
            "url": None if after is None else api_url(resource, record_id, style=style),
            "version": version,
            "loaded_at": loaded_at,
        }
        for resource, record_id, before, after, version, loaded_at in rows
    ]
    return json_response(pagination.envelope_json(page, orjson.dumps(results)))


def describe():
    return options_body(
        "Changes List",
        "The records added, changed or removed since a catalogue version, for clients "
        "that keep a copy of the catalogue in step.",
        PARAMETERS,
    )


add_view(bp, CHANGES_PATH, changes_list, describe)
