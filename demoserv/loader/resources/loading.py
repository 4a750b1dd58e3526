"""A resource's load side: what its module in this package fills in beside the serving
declaration (``resources/<name>.py``) — the record schema of a line of its catalogue
file, how its records are stored (``storage.py``: derived columns, nested lists,
relations), how the upstream's export fills its tables, and how the build completes its
list and detail records beyond their own row (``loader/build.py`` calls ``complete``
and ``complete_detail``, one query per relation for a batch of records)."""

from sqlalchemy import bindparam, select

from . import storage

IDS = bindparam("ids", expanding=True)  # the records of one IN (...) query


def owned_rows(table, owner, position="position", columns=None):
    """The rows of ``table`` (or ``columns`` of it) whose ``owner`` column is one of
    ``ids``, each owner's in ``position`` order: a nested list of a batch of records."""
    return (
        select(*(columns or (table,)))
        .where(table.c[owner].in_(IDS))
        .order_by(table.c[owner], table.c[position])
    )


class Loading:
    """A resource's load side. A module of this package makes one instance (of a
    subclass where its records need more than their own row)."""

    resource = None  # its serving declaration
    record_schema = None  # a line of its catalogue file
    # How its records are stored at load (see storage.py): columns derived from fields,
    # and the nested lists stored as rows of their own tables.
    derived_columns = storage.NAME_KEY
    nested_lists = ()
    # The relations shown from both sides that it stores (storage.Relation, Grouping).
    relations = ()
    created_by_summaries = False  # True: nested summaries may create its records
    # How the upstream's export fills its tables (storage.Upstream).
    upstream = None

    @property
    def name(self):
        return self.resource.name

    @property
    def table(self):
        return self.resource.table

    def complete(self, build, rows):
        """Add to the record ``rows`` (dicts of the record table's columns) what their
        list records need beyond their own columns."""

    def complete_detail(self, build, rows):
        """Likewise for the detail records (after ``complete``)."""
