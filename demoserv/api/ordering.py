"""How ``ordering`` is parsed and turned into SQL; each resource declares its keys.

Every order is total: after the given keys, ties are broken by ``id`` in the direction of
the first key, so a descending listing is exactly the ascending one reversed. Null sort
values (unknown release dates) come after every other value in ascending order.

A single key is served from its ``rank_<key>`` column, the record's position in the
ascending order, computed at load: page k is then a range lookup on a unique index, as
fast on the last page as on the first. Any other listing (several keys, or filters) is
found by ``db.Catalogue.listing``.
"""

from dataclasses import dataclass

from sqlalchemy import bindparam

from .error import APIError

# What a term is stripped of: the characters str.strip() takes as whitespace
# (str.isspace), as Django REST Framework's parser strips them. Named, so that the
# OpenAPI document's pattern allows exactly these around a term (web/views/openapi.py): a
# pattern's \s is ECMA-262's, which differs (it has U+FEFF, not U+001C-U+001F or U+0085).
TERM_SPACES = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)


@dataclass(frozen=True)
class SortKey:
    name: str
    column: object  # the sort value
    rank: object  # the record's 1-based position in ascending order of this key


def sort_keys(table, keys):
    """The SortKeys of ``keys`` (ordering key name -> sort column name) on ``table``."""
    return {
        name: SortKey(name, table.c[column], table.c[f"rank_{name}"])
        for name, column in keys.items()
    }


@dataclass(frozen=True)
class Ordering:
    """A parsed ``ordering``: (SortKey, descending) terms, first key first."""

    terms: tuple
    id_key: SortKey

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
        for key, descending in self.terms + ((self.id_key, self.descending),):
            if key.name == "id":
                result.append(key.column.desc() if descending else key.column.asc())
                return result
            column = key.column
            result.append(column.desc().nulls_first() if descending else column.asc().nulls_last())

    @property
    def cache_key(self):
        """What names this order among equivalent spellings of it."""
        return tuple((key.name, descending) for key, descending in self.terms)

    def by_rank(self):
        """ORDER BY the single key's rank column: the same order, on a unique index."""
        rank = self.single_key.rank
        return rank.desc() if self.descending else rank.asc()

    def rank_statement(self, query):
        """``query`` narrowed to the rank bounds ``low`` and ``high`` of this order's
        single key, in this order."""
        rank = self.single_key.rank
        return query.where(rank.between(bindparam("low"), bindparam("high"))).order_by(
            self.by_rank()
        )

    def rank_bounds(self, start, stop, total):
        """What ``rank_statement`` takes for records ``start`` (inclusive) to ``stop``
        (exclusive) of the ``total`` records of the table."""
        if self.descending:
            # Descending is the ascending order reversed: position i from the end.
            return {"low": total - stop + 1, "high": total - start}
        return {"low": start + 1, "high": stop}


def parse(resource, value):
    """The Ordering of ``resource`` asked for by the ``ordering`` parameter ``value``
    (None: the resource's default)."""
    keys = resource.sort_keys
    if value is None:
        return Ordering(((keys[resource.default_key], False),), keys["id"])
    terms = []
    seen = set()
    for raw in value.split(","):
        term = raw.strip(TERM_SPACES)
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
    return Ordering(tuple(terms), keys["id"])


def from_key(resource, key):
    """The Ordering of ``resource`` whose ``cache_key`` is ``key``: how a listing asked
    for in one process is found in another (listings/finder.py)."""
    keys = resource.sort_keys
    return Ordering(tuple((keys[name], descending) for name, descending in key), keys["id"])


def rank_order(resource, key_name):
    """The ascending ORDER BY clauses that define ``rank_<key_name>``."""
    keys = resource.sort_keys
    return Ordering(((keys[key_name], False),), keys["id"]).clauses()
