"""A resource's declaration: what a resource module fills in (its tables, ordering keys,
filters, schemas and catalogue record), and how the catalogue build completes its
records beyond their own row (``catalogue/build.py`` calls ``complete`` and
``complete_detail`` at load). Its answers are inherited from ``answers.Serving``."""

from sqlalchemy import bindparam, select

from .. import ordering
from . import storage
from .answers import Serving

IDS = bindparam("ids", expanding=True)  # the records of one IN (...) query


def owned_rows(table, owner, position="position", columns=None):
    """The rows of ``table`` (or ``columns`` of it) whose ``owner`` column is one of
    ``ids``, each owner's in ``position`` order: a nested list of a page of records."""
    return (
        select(*(columns or (table,)))
        .where(table.c[owner].in_(IDS))
        .order_by(table.c[owner], table.c[position])
    )


class Resource(Serving):
    """A resource's declaration. A resource module makes one instance (a subclass where
    its records need more than their own row) and its views call its methods."""

    name = None  # the path segment, e.g. "productions"
    title = None  # e.g. "Production"
    description = None
    table = None
    details_table = None  # None: the detail record is the list record
    keys = {"id": "id", "name": "name_key"}  # ordering key -> its sort column
    default_key = "name"
    filters = ()
    schema = None  # list record
    detail_schema = None  # defaults to the list record
    record_schema = None  # a line of its catalogue file
    detail_needs = frozenset()  # resources whose list records its detail records nest
    # How its records are stored at load (see storage.py): columns derived from fields,
    # and the nested lists stored as rows of their own tables.
    derived_columns = storage.NAME_KEY
    owns = ()
    # The relations shown from both sides that it stores (storage.Both, storage.Grouped).
    relations = ()
    summarised = False  # True: nested summaries may create its records (and must agree)
    # How the upstream's export fills its tables, if the import does not (storage.Upstream).
    upstream = None
    page_size = 100  # records a page; None: the whole listing is one page

    def __init__(self):
        self.sort_keys = ordering.sort_keys(self.table, self.keys)
        self.detail_schema = self.detail_schema or self.schema
        super().__init__()

    # Building the read models (catalogue/build.py calls these at load).

    def complete(self, build, rows):
        """Add to the record ``rows`` (dicts of the record table's columns) what their
        list records need beyond their own columns."""

    def complete_detail(self, build, rows):
        """Likewise for the detail records (after ``complete``)."""

    def search_statement(self):
        """(id, text, ...) of every record in id order: the texts ``search`` looks in."""
        return select(self.table.c.id, self.table.c.name).order_by(self.table.c.id)
