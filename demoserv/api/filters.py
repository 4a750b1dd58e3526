"""Filter kinds: each reads one query parameter, checks its value, and gives the records
it keeps in one way (a mask over its column's array, ids found with SQL, or a search of
the folded texts). Each resource
declares its filters beside its ordering keys; the listing queries, OPTIONS and the
OpenAPI document all read that declaration.

An empty value (``title=``) is no filter, as real clients send empty parameters. A bad
value is a 400 naming the parameter, and so is a filter whose data the catalogue lacks.
A parameter given twice takes its last value, except for the repeatable id filters,
whose values are OR-ed, and ``tag``, whose tags are all required. Equivalent values
(``1991`` and ``1991-01-01``; ``7``, ``07`` and ``7,7``) give the same key, so that
they are one listing.
"""

import re
from dataclasses import dataclass

from sqlalchemy import func, select

from ..store.values import (
    DATE_RANGE,
    FULL_DATE_PATTERN,
    ID_PATTERN,
    MAX_ID,
    PARTIAL_DATE_PATTERN,
    RECORD_ID_PATTERN,
    date_key,
    name_key,
    partial_date_error,
    search_fold,
    timestamp_key,
)
from .error import APIError

# numpy is imported only where a filter is evaluated (the finder process) or its arrays
# built (the load): a server process parses filters, and numpy would add 12 MB to it.

_ID = re.compile(ID_PATTERN)
MAX_WHOLE_DIGITS = 9  # of AtMost's number: more than any position, and within int32
# A time bound's forms: a date, or a date and a time (a T or a space between them) with
# an optional offset; hours 00 to 23, seconds to the microsecond.
_CLOCK = "([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9](\\.[0-9]{1,6})?)?"
DATE_TIME_PATTERN = f"{FULL_DATE_PATTERN}([T ]{_CLOCK}(Z|[+-]{_CLOCK})?)?"
_DATE_TIME = re.compile(DATE_TIME_PATTERN)
# Bounds before and after every moment a record can hold (years 1 to 9999 in UTC).
_EARLIEST, _LATEST = "0000-12-31T00:00:00.000000Z", "10000-01-01T00:00:00.000000Z"
INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def _invalid(parameter, expected):
    return APIError(400, f'Invalid value for "{parameter}": expected {expected}.')


def _record_id(parameter, value):
    if not _ID.fullmatch(value) or not 1 <= int(value) <= MAX_ID:
        raise _invalid(parameter, f"a record id (a whole number from 1 to {MAX_ID})")
    return int(value)


@dataclass(frozen=True)
class Filter:
    """A filter on one parameter. Its OpenAPI ``schema`` admits the empty string, which
    is no filter. ``feature`` names the optional data it needs, if any. Each kind finds
    the records it keeps in one way, its ``mask``: on an array in memory
    (``ArrayFilter``), with SQL on an index (``SQLFilter``), or over the folded texts
    (``Search``)."""

    parameter: str
    description: str
    repeatable = False
    schema = {"type": "string"}
    feature = None
    example = ""  # a value the filter takes: each kind gives one (the query-plan test asks with it)
    stored_column = None  # the record table's column whose array the build stores for it

    def normalise(self, values):
        """The canonical value of the parameter's non-empty ``values`` (400 if bad)."""
        return values[-1]

    def mask(self, columns, value, connection, table):
        """The rows of ``columns`` (columns.Columns) that the filter keeps."""
        raise NotImplementedError

    def stored_arrays(self, connection, resource):
        """(name, array) pairs that the filter needs stored at load."""
        return ()


class ArrayFilter(Filter):
    """A filter evaluated on the array of its record table's ``column``, which the build
    stores (store/listing_arrays.py): ``encode``'s values as an array of ``dtype``
    (numpy's name of the type)."""

    column = None
    dtype = "int32"

    @property
    def stored_column(self):
        return self.column

    def encode(self, values):
        """The values stored for the column's ``values`` (None where a record has none),
        one a record, each as an element of ``dtype`` holds it."""
        raise NotImplementedError

    def keep(self, values, value):
        """The mask of the encoded ``values`` that the canonical ``value`` keeps."""
        raise NotImplementedError

    def mask(self, columns, value, connection, table):
        return self.keep(columns.arrays[f"filter:{self.column}"], value)


class SQLFilter(Filter):
    """A filter whose records' ids SQL finds on an index: ``found`` gives (column of
    ids, condition) pairs, and the records kept are those all of them find."""

    def found(self, table, value):
        raise NotImplementedError

    def mask(self, columns, value, connection, table):
        kept = None
        for column, condition in self.found(table, value):
            statement = select(func.group_concat(column)).where(condition)
            part = _mask_of_found(columns, connection, statement)
            kept = part if kept is None else kept & part
            if not kept.any():
                break
        return kept


def _mask_of_found(columns, connection, statement):
    """The mask of the ids that ``statement`` (a ``group_concat`` of ids) finds. The ids
    come as one text, parsed at once in C: a row per id would cost ten times as much for
    the tens of thousands of ids a broad filter finds, and splitting the text into
    strings nine times as much (22 against 2.4 ms for 200,000 ids, all of it holding the
    interpreter's lock)."""
    import numpy as np

    text = connection.execute(statement).scalar()
    ids = np.fromstring(text, dtype=np.int64, sep=",") if text else np.zeros(0, np.int64)
    return columns.mask_of_ids(ids)


@dataclass(frozen=True)
class NameEquals(SQLFilter):
    """Exact, case-insensitive match of a name, through its stored sort key."""

    example = "x"

    def normalise(self, values):
        return name_key(values[-1])

    def found(self, table, value):
        return [(table.c.id, table.c.name_key == value)]


@dataclass(frozen=True)
class TitleEquals(SQLFilter):
    """Exact, case-insensitive match of a production's title."""

    example = "x"

    def normalise(self, values):
        return values[-1].lower()

    def found(self, table, value):
        return [(table.c.id, table.c.title_key == value)]


@dataclass(frozen=True)
class CountryCode(ArrayFilter):
    example = "fi"
    feature: str = None
    column: str = "country_code"
    schema = {"type": "string", "pattern": "^([A-Za-z]{2})?$"}

    def normalise(self, values):
        if not re.fullmatch(r"[A-Za-z]{2}", values[-1]):
            raise _invalid(self.parameter, "a two-letter country code")
        return values[-1].upper()

    def encode(self, values):
        return [_country(value) for value in values]

    def keep(self, values, value):
        return values == _country(value)


def _country(code):
    """A country code as a number (0 for none)."""
    return ord(code[0]) * 256 + ord(code[1]) if code else 0


@dataclass(frozen=True)
class Choice(ArrayFilter):
    column: str = ""
    choices: tuple = ()
    dtype = "int8"

    @property
    def schema(self):
        return {"type": "string", "enum": [*self.choices, ""]}

    @property
    def example(self):
        return self.choices[0]

    def normalise(self, values):
        if values[-1] not in self.choices:
            raise _invalid(self.parameter, "one of " + ", ".join(self.choices))
        return values[-1]

    def encode(self, values):
        codes = {choice: index for index, choice in enumerate(self.choices)}
        return [codes.get(value, -1) for value in values]

    def keep(self, values, value):
        return values == self.choices.index(value)


@dataclass(frozen=True)
class Flag(ArrayFilter):
    example = "true"
    column: str = ""
    schema = {"type": "string", "enum": ["true", "false", ""]}
    dtype = "bool"

    def normalise(self, values):
        if values[-1] not in ("true", "false"):
            raise _invalid(self.parameter, "true or false")
        return values[-1] == "true"

    def encode(self, values):
        return [bool(value) for value in values]

    def keep(self, values, value):
        return values if value else ~values


@dataclass(frozen=True)
class IdEquals(ArrayFilter):
    example = "1"
    column: str = ""
    schema = {"type": "string", "pattern": f"^({RECORD_ID_PATTERN})?$"}
    dtype = "int64"

    def normalise(self, values):
        return _record_id(self.parameter, values[-1])

    def encode(self, values):
        return [value or 0 for value in values]

    def keep(self, values, value):
        return values == value


@dataclass(frozen=True)
class AtMost(ArrayFilter):
    """Records whose ``column`` is at most the given whole number."""

    example = "3"

    column: str = ""
    schema = {"type": "string", "pattern": f"^([0-9]{{1,{MAX_WHOLE_DIGITS}}})?$"}

    def normalise(self, values):
        if not re.fullmatch(f"[0-9]{{1,{MAX_WHOLE_DIGITS}}}", values[-1]):
            raise _invalid(self.parameter, f"a whole number from 0 to {10**MAX_WHOLE_DIGITS - 1}")
        return int(values[-1])

    def encode(self, values):
        # No value matches no bound, nor does one past any bound (at most 9 digits): both
        # are int32's largest; one below int32's range matches every bound, as its least.
        return [
            INT32_MAX if value is None else min(max(value, INT32_MIN), INT32_MAX)
            for value in values
        ]

    def keep(self, values, value):
        return values <= value


@dataclass(frozen=True)
class DateBound(ArrayFilter):
    """Records whose date (a partial date counting as its first day) is before, or on
    or after, the given partial date. Records without a date never match."""

    example = "1995-03"

    column: str = ""
    before: bool = True
    schema = {"type": "string", "pattern": f"^({PARTIAL_DATE_PATTERN})?$"}

    def normalise(self, values):
        if partial_date_error(values[-1]):
            raise _invalid(
                self.parameter, f"a date of the form YYYY, YYYY-MM or YYYY-MM-DD, {DATE_RANGE}"
            )
        return date_key(values[-1])

    def encode(self, values):
        return [-1 if value is None else int(value.replace("-", "")) for value in values]

    def keep(self, values, value):
        bound = int(value.replace("-", ""))
        return ((values < bound) & (values >= 0)) if self.before else (values >= bound)


@dataclass(frozen=True)
class TimeBound(ArrayFilter):
    """Records added or updated before, or on or after, a date (its midnight UTC) or a
    date-time (``DATE_TIME_PATTERN``; UTC unless it names an offset). A moment whose
    offset takes it out of the years 1 to 9999 in UTC (``9999-12-31T23:59:59-01:00``) is
    a bound after (or before) every record: a regular expression, as the OpenAPI document
    gives one, cannot compare a time with its offset."""

    example = "2020-01-01"

    column: str = ""
    before: bool = True
    feature: str = ""
    schema = {"type": "string", "pattern": f"^({DATE_TIME_PATTERN})?$"}
    dtype = "datetime64[us]"

    def normalise(self, values):
        value = values[-1]
        if not _DATE_TIME.fullmatch(value):
            raise _invalid(
                self.parameter,
                "a date (YYYY-MM-DD) or a date-time (YYYY-MM-DDTHH:MM, optionally with :SS "
                f"and up to six decimals, and with Z or an offset such as +01:00), {DATE_RANGE}",
            )
        try:
            return timestamp_key(value)
        except ValueError:  # the form is right: the offset took it past an end
            return _EARLIEST if value.startswith("0001") else _LATEST

    def encode(self, values):
        return ["NaT" if value is None else value.removesuffix("Z") for value in values]

    def keep(self, values, value):
        import numpy as np

        bound = np.datetime64(value.removesuffix("Z"), "us")
        return values < bound if self.before else values >= bound  # NaT never matches


@dataclass(frozen=True)
class LinkedTo(SQLFilter):
    """Records linked, through ``link``, to any of the given ids (repeatable, OR-ed;
    a value may also list ids separated by commas)."""

    example = "1,2,3"

    link: object = None  # the link table
    owner: str = ""  # its column holding the record's id
    column: str = ""  # its column holding the given ids
    repeatable = True
    schema = {
        "type": "array",
        # Empty parts are skipped: "1,,2" and "," are valid.
        "items": {
            "type": "string",
            "pattern": f"^,*({RECORD_ID_PATTERN}(,+{RECORD_ID_PATTERN})*)?,*$",
        },
    }

    def normalise(self, values):
        ids = {
            _record_id(self.parameter, part)
            for value in values
            for part in value.split(",")
            if part
        }
        return tuple(sorted(ids)) or None

    def found(self, table, value):
        # The link table's owners (on its index), not a join with the records: an id
        # of no record is ignored by the mask.
        return [(self.link.c[self.owner], self.link.c[self.column].in_(value))]


@dataclass(frozen=True)
class LinkUrl(SQLFilter):
    """Records with a link whose address is exactly the given URL."""

    example = "https://files.example/x.zip"

    link: object = None
    owner: str = ""

    def found(self, table, value):
        return [(self.link.c[self.owner], self.link.c.url == value)]


@dataclass(frozen=True)
class Tagged(SQLFilter):
    """Records carrying every tag named (repeatable, and a value may name several tags
    separated by commas; tags are lower-case as stored, the value is lower-cased), found
    on the tag table's primary key (tag, record)."""

    example = "demo,c64"

    link: object = None  # the tag table: (tag, owner)
    owner: str = ""
    repeatable = True
    schema = {"type": "array", "items": {"type": "string"}}

    def normalise(self, values):
        tags = {part.strip().lower() for value in values for part in value.split(",")}
        return tuple(sorted(tags - {""})) or None

    def found(self, table, value):
        # One range of the table's key per tag, the masks intersected: no sort of the
        # rows of several tags together.
        return [(self.link.c[self.owner], self.link.c.tag == tag) for tag in value]


MAX_SEARCH = 200  # characters of a search


def search_help(what, text):
    return (
        f"Only {what} whose {text} contains every word of this text (words separated by "
        f"spaces), ignoring case and accents; at most {MAX_SEARCH} characters."
    )


@dataclass(frozen=True)
class Search(Filter):
    """Records whose text (the resource's ``search_text``: a title, a name, nicks)
    contains every whitespace-separated term of the value, both folded by
    ``shared.search_fold`` (accents and case ignored). Found in memory over the folded
    texts stored at load (store/listing_arrays.py), not with a full-text index."""

    example = "a e"

    schema = {"type": "string", "maxLength": MAX_SEARCH}

    def normalise(self, values):
        if len(values[-1]) > MAX_SEARCH:
            raise _invalid(self.parameter, f"at most {MAX_SEARCH} characters")
        terms = {search_fold(term) for term in values[-1].split()} - {""}
        # A term inside another term finds nothing more.
        kept = {term for term in terms if not any(term in other for other in terms - {term})}
        return tuple(sorted(kept)) or None

    def mask(self, columns, value, connection, table):
        return columns.search(value)

    def stored_arrays(self, connection, resource):
        from ..store.listing_arrays import search_arrays  # numpy: see the imports

        return search_arrays(connection.execute(resource.search_statement()))


@dataclass(frozen=True)
class Conditions:
    """The filters a request asked for: (filter, canonical value) pairs, and a key
    naming them."""

    items: tuple
    key: tuple

    def __bool__(self):
        return bool(self.items)


def parse(resource, args, catalogue):
    """The Conditions that the query parameters ``args`` ask of ``resource``."""
    items, key = [], []
    for item in resource.filters:
        values = [value for value in args.getlist(item.parameter) if value != ""]
        if not values:
            continue
        value = item.normalise(values)
        if value is None:
            continue
        if item.feature and item.feature not in catalogue.features:
            raise APIError(
                400,
                f'The filter "{item.parameter}" cannot be used: this catalogue does not '
                f"record {item.feature.replace('_', ' ')}.",
            )
        items.append((item, value))
        key.append((item.parameter, value))
    return Conditions(tuple(items), tuple(key))


def from_key(resource, key):
    """The Conditions of ``resource`` whose ``key`` is ``key`` (its canonical values, as
    ``parse`` gives them): how a listing asked for in one process is found in another
    (listings/finder.py)."""
    by_parameter = {item.parameter: item for item in resource.filters}
    return Conditions(tuple((by_parameter[parameter], value) for parameter, value in key), key)


def time_bounds(what):
    """The four filters on when ``what`` (a resource name) were added and updated."""
    result = []
    for prefix, column, verb in (
        ("added", "created_at", "added"),
        ("updated", "updated_at", "last updated"),
    ):
        for suffix, before in (("before", True), ("since", False)):
            relation = "before" if before else "on or after"
            result.append(
                TimeBound(
                    f"{prefix}_{suffix}",
                    f"Only {what} {verb} {relation} this date or date-time (ISO 8601, UTC "
                    "unless an offset is given).",
                    column=column,
                    before=before,
                    feature=f"{what}_{column}",
                )
            )
    return result
