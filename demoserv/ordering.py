"""Ordering keys per resource, how ``ordering`` is parsed, and the SQL of an order.

Every order is total: after the given keys, ties are broken by ``id`` in the direction of
the first key, so a descending listing is exactly the ascending one reversed. Null sort
values (unknown release dates) come after every other value in ascending order.

A single key is served from its ``rank_<key>`` column, the record's position in the
ascending order, computed at load: page k is then a range lookup on a unique index, as
fast on the last page as on the first. An order on several keys has no rank column: its
first request sorts the ids once, and the sorted ids are kept while the catalogue file
is served, so that its later pages are lookups by id. A filtered listing is served the
same way: its first request finds and orders the matching ids, which also gives its
count.
"""

from array import array
from dataclasses import dataclass

from sqlalchemy import bindparam, select

from . import filters, tables
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


def _name_filter(what):
    return filters.NameEquals("name", f"Only {what} with this name (exact, case-insensitive).")


# The filters of each listing, beside its ordering keys.
FILTERS = {
    "party_series": [_name_filter("party series")],
    "platforms": [_name_filter("platforms")],
    "bbses": [_name_filter("BBSes")],
    "parties": [
        _name_filter("parties"),
        filters.CountryCode(
            "country_code", "Only parties in this country (two letters, any case)."
        ),
        filters.IdEquals(
            "party_series",
            "Only editions of the party series with this id.",
            column="party_series_id",
        ),
        filters.DateBound(
            "start_date_before",
            "Only parties that started before this date.",
            column="start_date_key",
            before=True,
        ),
        filters.DateBound(
            "start_date_since",
            "Only parties that started on or after this date.",
            column="start_date_key",
            before=False,
        ),
    ],
    "productions": [
        filters.TitleEquals("title", "Only productions with this title (exact, case-insensitive)."),
        filters.LinkedTo(
            "platform",
            "Only productions for any of these platform ids.",
            link=tables.production_platforms,
            column="platform_id",
        ),
        filters.LinkedTo(
            "production_type",
            "Only productions of any of these type ids.",
            link=tables.production_type_links,
            column="production_type_id",
        ),
        filters.Choice(
            "supertype",
            "Only productions of this supertype.",
            column="supertype",
            choices=("production", "music", "graphics"),
        ),
        filters.DateBound(
            "released_before",
            "Only productions released before this date "
            "(a partial release date counts as its first day).",
            column="release_date_key",
            before=True,
        ),
        filters.DateBound(
            "released_since",
            "Only productions released on or after this date "
            "(a partial release date counts as its first day).",
            column="release_date_key",
            before=False,
        ),
        filters.LinkedTo(
            "author",
            "Only productions credited to this releaser id, as an author or as an author's group.",
            link=tables.production_nicks,
            column="releaser_id",
        ),
    ],
    "releasers": [
        _name_filter("releasers"),
        filters.Flag(
            "is_group", "true: only groups; false: only individual sceners.", column="is_group"
        ),
    ],
    "production_types": [_name_filter("production types")],
}


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

    def _by_rank(self):
        """ORDER BY the single key's rank column: the same order, on a unique index."""
        rank = self.single_key.rank
        return rank.desc() if self.descending else rank.asc()

    def rank_statement(self, query):
        """``query`` narrowed to the rank bounds ``low`` and ``high`` of this order's
        single key, in this order."""
        rank = self.single_key.rank
        return query.where(rank.between(bindparam("low"), bindparam("high"))).order_by(
            self._by_rank()
        )

    def rank_bounds(self, start, stop, total):
        """What ``rank_statement`` takes for records ``start`` (inclusive) to ``stop``
        (exclusive) of the ``total`` records of the table."""
        if self.descending:
            # Descending is the ascending order reversed: position i from the end.
            return {"low": total - stop + 1, "high": total - start}
        return {"low": start + 1, "high": stop}

    def sorted_ids(self, connection, conditions=()):
        """The ids of the records that meet ``conditions``, in this order: one pass
        over the table (along the rank index for a single key), for a filtered listing
        or an order on several keys. The caller keeps the result."""
        id_column = KEYS[self.resource]["id"].column
        order = self.clauses() if self.single_key is None else [self._by_rank()]
        query = select(id_column).where(*conditions).order_by(*order)
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
                f"{', '.join(keys)}, separated by commas, each optionally prefixed "
                'with "-" for descending order.',
            )
        if name in seen or "id" in seen:
            continue  # a repeated key, or one after id (unique), can decide nothing
        seen.add(name)
        terms.append((keys[name], descending))
    return Ordering(resource, tuple(terms))


def rank_order(resource, key_name):
    """The ascending ORDER BY clauses that define ``rank_<key_name>``."""
    return Ordering(resource, ((KEYS[resource][key_name], False),)).clauses()
