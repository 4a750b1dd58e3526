"""No request gets a server error, whatever its values: every query parameter a
resource's list takes (its filters, ``page``, ``ordering`` and the rendering parameters,
read from its declaration, so that a filter declared later is swept too), the other
paths' parameters (from the OpenAPI document) and every record id in a path, given
values at and beyond the range of every type a parameter may hold: dates and
date-times at the first and last moments with every extreme UTC offset, years 0 and
10000, integers at the edges of 32 and 64 bits, huge digit strings, floats, non-ASCII
digits, the empty value. A 400 is the one error shape and names the parameter.

The fixed extremes are swept in full for every parameter (those every path reads alike,
``format``, ``callback`` and ``fields``, on one path); a property (hypothesis) then tries
generated ones, several parameters of a path at a time.
"""

import datetime
import re
from urllib.parse import quote, urlencode

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from demoserv.api import parameters
from demoserv.resources import RESOURCES

from .conftest import module_client
from .openapi_check import SPEC

EDGE_MOMENTS = ["0001-01-01T00:00:00", "9999-12-31T23:59:59", "9999-12-31T23:59:59.999999"]
# UTC, the extremes Python's datetime takes (under a day, to the microsecond) and beyond.
OFFSETS = [
    *("", "Z", "+00:00", "-00:00", "+0100", "-01"),
    *(sign + offset for sign in "+-" for offset in ("00:01", "01:00", "23:59", "23:59:59")),
    *(sign + offset for sign in "+-" for offset in ("23:59:59.999999", "24:00", "99:99")),
]
DATES = [
    *("0001-01-01", "9999-12-31", "0000-01-01", "0000-12-31", "10000-01-01", "99999-12-31"),
    *("0001", "9999", "0000", "10000", "0001-01", "9999-12", "0000-01", "9999-13"),
    *("9999-12-32", "-0001-01-01", "+9999-12-31", "9999-12-31T24:00:00Z"),
    "9999-12-31 23:59:59-01:00",
]
DATE_TIMES = [moment + offset for moment in EDGE_MOMENTS for offset in OFFSETS]
EDGE_INTEGERS = (0, 10**9, 2**31, 2**32, 2**63, 2**64)
INTEGERS = [
    str(sign * (edge + step)) for edge in EDGE_INTEGERS for step in (-1, 0, 1) for sign in (1, -1)
]
HUGE_DIGITS = ["9" * 19, "9" * 20, "1" + "0" * 100, "9" * 4000, "9" * 9000]
FLOATS = ["0.0", "-0.0", "1.5", "1e3", "1E-400", "1e308", "1e309", "-1e309", "nan", "inf"]
NON_ASCII_DIGITS = [
    "١٢٣",
    "۱۲۳",
    "१२३",
    "１２３",
    "²",
    "½",
    "Ⅻ",
    "٢٠٢٠-٠١-٠١",
    "２０２０-０１-０１",
]
ODD = ["", " ", ",", "-", "--", "last", "1,", ",1", "1,,2", f"1,{2**63}", "\x00", "\ufffd"]
EXTREMES = sorted(
    set(DATES + DATE_TIMES + INTEGERS + HUGE_DIGITS + FLOATS + NON_ASCII_DIGITS + ODD)
)
IDS = sorted({value for value in INTEGERS + HUGE_DIGITS + FLOATS + NON_ASCII_DIGITS if value})


def list_parameters():
    """(path, parameter) of every query parameter of every resource's list, as the
    resource declares them."""
    return [
        (f"/api/v1/{resource.name}/", name)
        for resource in RESOURCES
        for name in parameters.describe_parameters(resource, detail=False)
    ]


def other_parameters():
    """(path, parameter) of the query parameters of the document's other paths without
    a path parameter (the changes feed, the status, the adhoc months)."""
    lists = {f"/api/v1/{resource.name}/" for resource in RESOURCES}
    return [
        (path, parameter["name"])
        for path, operations in SPEC["paths"].items()
        if "{" not in path and path not in lists
        for parameter in operations.get("get", {}).get("parameters", [])
        if parameter["in"] == "query"
    ]


def swept_parameters():
    """(path, parameter) to sweep: every parameter of every path, but those that every
    path reads alike (format, callback, fields) on the first path only."""
    alike = {*parameters.RENDERING, "fields"}
    swept = []
    for path, name in list_parameters() + other_parameters():
        if not (name in alike and any(name == other for _, other in swept)):
            swept.append((path, name))
    return swept


PARAMETERS = swept_parameters()


def record_paths():
    """Every path that takes a record id: each resource's detail and sub-listings."""
    return [
        f"/api/v1/{resource.name}/{{id}}/{sub}"
        for resource in RESOURCES
        for sub in ["", *(f"{name}/" for name in resource.sub_listings)]
    ]


def get(client, path, query=()):
    return client.get(path + ("?" + urlencode(query, quote_via=quote) if query else ""))


def assert_answered(response, names):
    """No server error; a 400 is ``{"detail": ...}`` naming one of the parameters."""
    assert response.status_code < 500, (response.request.url[:300], response.get_data()[:300])
    if response.status_code == 400:
        body = response.json
        assert list(body) == ["detail"]
        assert any(re.search(rf"\b{re.escape(name)}\b", body["detail"]) for name in names), (
            names,
            body,
        )


client = module_client()  # every request only reads


def test_every_filter_is_swept():
    swept = set(PARAMETERS)
    for resource in RESOURCES:
        for name in ("page", "ordering", *(item.parameter for item in resource.filters)):
            assert (f"/api/v1/{resource.name}/", name) in swept
    assert {("/api/v1/changes/", "since"), ("/api/v1/party_series/", "format")} <= swept


@pytest.mark.parametrize("path, name", PARAMETERS, ids=[f"{p}?{n}" for p, n in PARAMETERS])
def test_every_parameter_takes_every_extreme(client, path, name):
    for value in EXTREMES:
        assert_answered(get(client, path, {name: value}), [name])


@pytest.mark.parametrize("path", record_paths())
def test_record_ids_at_and_beyond_their_range(client, path):
    for value in IDS:
        response = client.get(path.format(id=quote(value, safe="")))
        assert response.status_code in (200, 404, 414), (value, response.status_code)
    assert client.get(path.format(id=2**63 - 1)).status_code == 404


DAY, MICROSECOND = datetime.timedelta(days=1), datetime.timedelta(microseconds=1)
# Every offset Python's datetime can take.
UTC_OFFSETS = st.timedeltas(min_value=-DAY + MICROSECOND, max_value=DAY - MICROSECOND)
# The first and last hours, where most offsets take a moment out of range.
FIRST_OR_LAST_HOUR = st.one_of(
    st.datetimes(max_value=datetime.datetime(1, 1, 1, 0, 59, 59, 999999)),
    st.datetimes(min_value=datetime.datetime(9999, 12, 31, 23)),
)


@st.composite
def date_times(draw):
    """A date-time of the first or last hour, with or without an offset, as ISO 8601."""
    offset = draw(st.none() | UTC_OFFSETS)
    zone = None if offset is None else datetime.timezone(offset)
    moment = draw(FIRST_OR_LAST_HOUR).replace(tzinfo=zone)
    written = moment.isoformat(
        sep=draw(st.sampled_from("T ")),
        timespec=draw(st.sampled_from(["auto", "minutes", "seconds", "microseconds"])),
    )
    return written.replace("+00:00", "Z") if draw(st.booleans()) else written


EDGES = st.sampled_from(EDGE_INTEGERS).flatmap(lambda edge: st.integers(edge - 2, edge + 2))
VALUES = st.one_of(
    st.sampled_from(EXTREMES),
    date_times(),
    st.from_regex(r"[0-9]{1,6}(-[0-9]{1,2}(-[0-9]{1,2})?)?", fullmatch=True),
    st.one_of(EDGES, EDGES.map(lambda n: -n), st.integers(), st.floats()).map(str),
    st.text(st.characters(categories=["Nd", "Nl", "No"]), min_size=1) | st.text(),
)


@st.composite
def requests(draw):
    """A parameter with a value of VALUES, and up to three more of its path's."""
    path, name = draw(st.sampled_from(PARAMETERS))
    others = st.sampled_from([other for each, other in PARAMETERS if each == path])
    query = draw(st.dictionaries(others, VALUES, max_size=3))
    return path, {**query, name: draw(VALUES)}


@settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(asked=requests())
def test_generated_values_never_fail(client, asked):
    path, query = asked
    assert_answered(get(client, path, query), list(query))
