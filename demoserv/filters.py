"""Filter kinds: each reads one query parameter, checks its value, and gives the SQL
condition it stands for. Which filters a resource has is declared in ``ordering.py``,
beside its ordering keys; the listing queries and the OpenAPI document both read that
declaration.

An empty value (``title=``) is no filter, as real clients send empty parameters. A bad
value is a 400 naming the parameter. A parameter given twice takes its last value,
except for the repeatable id filters, whose values are OR-ed.
"""

import re
from dataclasses import dataclass

from marshmallow import ValidationError
from sqlalchemy import select

from .catalogue.keys import date_key, name_key
from .catalogue.schemas import MAX_ID, check_partial_date
from .errors import APIError

_ID = re.compile(r"[0-9]{1,19}")  # at most 19 digits: SQLite's integers


def _invalid(parameter, expected):
    return APIError(400, f'Invalid value for "{parameter}": expected {expected}.')


def _record_id(parameter, value):
    if not _ID.fullmatch(value) or not 1 <= int(value) <= MAX_ID:
        raise _invalid(parameter, "a record id (a positive integer)")
    return int(value)


ID_PATTERN = "[0-9]{1,19}"


@dataclass(frozen=True)
class Filter:
    """A filter on one parameter. Its OpenAPI ``schema`` admits the empty string, which
    is no filter."""

    parameter: str
    description: str
    repeatable = False
    schema = {"type": "string"}

    def condition(self, table, values):
        """The SQL condition for the parameter's non-empty ``values``."""
        raise NotImplementedError


@dataclass(frozen=True)
class NameEquals(Filter):
    """Exact, case-insensitive match of a name, through its stored sort key."""

    column: str = "name_key"

    def condition(self, table, values):
        return table.c[self.column] == name_key(values[-1])


@dataclass(frozen=True)
class TitleEquals(Filter):
    """Exact, case-insensitive match of a production's title."""

    def condition(self, table, values):
        return table.c.title_key == values[-1].lower()


@dataclass(frozen=True)
class CountryCode(Filter):
    schema = {"type": "string", "pattern": "^([A-Za-z]{2})?$"}

    def condition(self, table, values):
        if not re.fullmatch(r"[A-Za-z]{2}", values[-1]):
            raise _invalid(self.parameter, "a two-letter country code")
        return table.c.country_code == values[-1].upper()


@dataclass(frozen=True)
class Choice(Filter):
    column: str = ""
    choices: tuple = ()

    @property
    def schema(self):
        return {"type": "string", "enum": [*self.choices, ""]}

    def condition(self, table, values):
        if values[-1] not in self.choices:
            raise _invalid(self.parameter, "one of " + ", ".join(self.choices))
        return table.c[self.column] == values[-1]


@dataclass(frozen=True)
class Flag(Filter):
    column: str = ""
    schema = {"type": "string", "enum": ["true", "false", ""]}

    def condition(self, table, values):
        if values[-1] not in ("true", "false"):
            raise _invalid(self.parameter, "true or false")
        return table.c[self.column] == (values[-1] == "true")


@dataclass(frozen=True)
class IdEquals(Filter):
    column: str = ""
    schema = {"type": "string", "pattern": f"^({ID_PATTERN})?$"}

    def condition(self, table, values):
        return table.c[self.column] == _record_id(self.parameter, values[-1])


@dataclass(frozen=True)
class DateBound(Filter):
    """Records whose date (a partial date counting as its first day) is before, or on
    or after, the given partial date. Records without a date never match."""

    column: str = ""
    before: bool = True
    schema = {"type": "string", "pattern": "^([0-9]{4}(-[0-9]{2}(-[0-9]{2})?)?)?$"}

    def condition(self, table, values):
        try:
            check_partial_date(values[-1])
        except ValidationError:
            raise _invalid(
                self.parameter, "a date of the form YYYY, YYYY-MM or YYYY-MM-DD"
            ) from None
        bound = date_key(values[-1])
        column = table.c[self.column]
        return column < bound if self.before else column >= bound


@dataclass(frozen=True)
class LinkedTo(Filter):
    """Records linked, through ``link``, to any of the given ids (repeatable, OR-ed;
    a value may also list ids separated by commas)."""

    link: object = None  # the link table
    column: str = ""  # its column holding the given ids
    repeatable = True
    schema = {
        "type": "array",
        "items": {"type": "string", "pattern": f"^({ID_PATTERN}(,{ID_PATTERN})*)?$"},
    }

    def condition(self, table, values):
        ids = [
            _record_id(self.parameter, part)
            for value in values
            for part in value.split(",")
            if part
        ]
        if not ids:
            return None
        linked = select(self.link.c.production_id).where(self.link.c[self.column].in_(ids))
        return table.c.id.in_(linked)


@dataclass(frozen=True)
class Conditions:
    """The filters a request asked for: their SQL conditions and a key naming them."""

    clauses: tuple
    key: tuple

    def __bool__(self):
        return bool(self.clauses)


def parse(declared, table, args):
    """The Conditions that the query parameters ``args`` ask of ``table``."""
    clauses, key = [], []
    for item in declared:
        values = [value for value in args.getlist(item.parameter) if value != ""]
        if not values:
            continue
        if not item.repeatable:
            values = values[-1:]
        clause = item.condition(table, values)
        if clause is not None:
            clauses.append(clause)
            key.append((item.parameter, tuple(values)))
    return Conditions(tuple(clauses), tuple(key))
