"""A resource's serving declaration: plain data that its module fills in — name, title,
tables, ordering keys, filters, page size and output schemas — which the answers
(``web/views/resources.py``), OPTIONS and the OpenAPI document serve by, and which the build ranks,
indexes and dumps records by. Imports nothing of Flask. How its records are loaded is
declared beside it, in ``loader/resources/<name>.py``."""

from dataclasses import dataclass

from sqlalchemy import select

from ..api import ordering


@dataclass(frozen=True)
class SubListing:
    """An unpaged listing under a record, ``/api/v1/<resource>/<id>/<name>/``: the list
    records of the resource ``listed`` whose ids ``find(connection, record id)`` gives,
    in that order (None: no such record, 404)."""

    listed: str
    description: str
    find: object


class Resource:
    """A resource's declaration. A resource module makes one instance of a subclass."""

    name = None  # the path segment, e.g. "productions"
    title = None  # e.g. "Production"
    description = None
    table = None
    details_table = None  # None: the detail record is the list record
    keys = {"id": "id", "name": "name_key"}  # ordering key -> its sort column
    default_key = "name"
    filters = ()
    page_size = 100  # records a page; None: the whole listing is one page
    schema = None  # list record
    detail_schema = None  # defaults to the list record
    detail_needs = frozenset()  # resources whose list records its detail records nest
    sub_listings = {}  # name -> SubListing

    def __init__(self):
        self.sort_keys = ordering.sort_keys(self.table, self.keys)
        self.detail_schema = self.detail_schema or self.schema

    def search_statement(self):
        """(id, text, ...) of every record in id order: the texts ``search`` looks in."""
        return select(self.table.c.id, self.table.c.name).order_by(self.table.c.id)
