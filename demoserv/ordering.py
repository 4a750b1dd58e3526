"""Ordering keys per resource, how ``ordering`` is parsed, and the SQL of an order.

Every order is total: after the given keys, ties are broken by ``id`` in the direction of
the first key, so a descending listing is exactly the ascending one reversed. Null sort
values (unknown release dates) come after every other value in ascending order.

A single key is served from its ``rank_<key>`` column, the record's position in the
ascending order, computed at load: page k is then a range lookup on a unique index, as
fast on the last page as on the first. An order on several keys has no rank column: its
first request sorts the ids once, and the sorted ids are kept while the catalogue file
is served, so that its later pages are lookups by id.
"""
from array import array
from dataclasses import dataclass

from sqlalchemy import bindparam, select

from . import tables
from .errors import APIError


@dataclass(frozen=True)
class SortKey:
    name: str
    column: object  # the sort value
    rank: object  # the record's 1-based position in ascending order of this key


def _keys(table, **columns):
    return {
        name: SortKey(name, table.c[column], table.c[f"rank_{name}"])
        for name, column in columns.items()
    }


KEYS = {
    "party_series": _keys(tables.party_series, id="id", name="name_key"),
    "platforms": _keys(tables.platforms, id="id", name="name_key"),
    "bbses": _keys(tables.bbses, id="id", name="name_key"),
    "parties": _keys(
        tables.parties,
        id="id",
        name="name_key",
        start_date_date="start_date_key",
        end_date_date="end_date_key",
        country_code="country_code",
    ),
    "productions": _keys(
        tables.productions,
        id="id",
        sortable_title="sortable_title",
        release_date_date="release_date_key",
        supertype="supertype",
    ),
    "releasers": _keys(tables.releasers, id="id", name="name_key"),
    "production_types": _keys(tables.production_types, id="id", name="name_key"),
}

DEFAULT_KEY = {"productions": "sortable_title"}


@dataclass(frozen=True)
class Ordering:
    """A parsed ``ordering``: (key, descending) terms, first key first."""

    resource: str
    terms: tuple

    @property
    def single_key(self):
        """The one key this order is by (with the id tie-break), or None."""
        return self.terms[0][0] if len(self.terms) == 1 else None

    @property
    def descending(self):
        return self.terms[0][1]

    def clauses(self):
        """ORDER BY clauses, tie-break included."""
        result = []
        for key, descending in self.terms + ((KEYS[self.resource]["id"], self.descending),):
            if key.name == "id":
                result.append(key.column.desc() if descending else key.column.asc())
                return result
            column = key.column
            result.append(column.desc().nulls_first() if descending else column.asc().nulls_last())

    @property
    def cache_key(self):
        return (self.resource, tuple((key.name, descending) for key, descending in self.terms))

    def statement(self, query):
        """``query`` narrowed to one page of this order. A single key takes the rank
        bounds ``low`` and ``high``; several keys take the page's ``ids``."""
        key = self.single_key
        if key is None:
            id_column = KEYS[self.resource]["id"].column
            return query.where(id_column.in_(bindparam("ids", expanding=True)))
        rank = key.rank.desc() if self.descending else key.rank.asc()
        return query.where(key.rank.between(bindparam("low"), bindparam("high"))).order_by(rank)

    def rows(self, connection, statement, start, stop, total, ordered_ids):
        """Records ``start`` (inclusive) to ``stop`` (exclusive) of ``total``, as dicts
        in this order, selected by ``statement`` (from ``self.statement``).
        ``ordered_ids()`` gives every id in this order, for orders on several keys."""
        if self.single_key is None:
            ids = list(ordered_ids()[start:stop])
            found = connection.execute(statement, {"ids": ids}).mappings().all()
            by_id = {row["id"]: row for row in found}
            return [dict(by_id[record_id]) for record_id in ids]
        if self.descending:
            # Descending is the ascending order reversed: position i from the end.
            bounds = {"low": total - stop + 1, "high": total - start}
        else:
            bounds = {"low": start + 1, "high": stop}
        return [dict(row) for row in connection.execute(statement, bounds).mappings().all()]

    def all_ids(self, connection):
        """Every id in this order: one sort of the whole table, for orders on several
        keys, which have no rank column. Kept per catalogue file by the caller."""
        id_column = KEYS[self.resource]["id"].column
        query = select(id_column).order_by(*self.clauses())
        return array("q", connection.execute(query).scalars())


def parse(resource, value):
    """The Ordering asked for by the ``ordering`` parameter ``value`` (None: default)."""
    keys = KEYS[resource]
    if value is None:
        return Ordering(resource, ((keys[DEFAULT_KEY.get(resource, "name")], False),))
    terms = []
    seen = set()
    for raw in value.split(","):
        term = raw.strip()
        descending = term.startswith("-")
        name = term[1:] if descending else term
        if name not in keys:
            shown = term if len(term) <= 60 else term[:57] + "..."
            raise APIError(
                400,
                f'Invalid ordering key "{shown}": expected one or more of '
                f'{", ".join(keys)}, separated by commas, each optionally prefixed '
                'with "-" for descending order.',
            )
        if name in seen:
            continue
        seen.add(name)
        terms.append((keys[name], descending))
        if name == "id":
            break  # id is unique: later keys could never decide anything
    return Ordering(resource, tuple(terms))


def rank_order(resource, key_name):
    """The ascending ORDER BY clauses that define ``rank_<key_name>``."""
    return Ordering(resource, ((KEYS[resource][key_name], False),)).clauses()
