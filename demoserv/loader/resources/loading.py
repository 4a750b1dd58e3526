"""A resource's load side: what its module in this package fills in beside the serving
declaration (``resources/<name>.py``) — the record schema of a line of its catalogue
file, how its records are stored (``storage.py``: derived columns, nested lists,
relations), how the upstream's export fills its tables, and how the build completes its
list and detail records beyond their own row (``loader/build.py`` calls ``complete``
and ``complete_detail``, one query per table for a batch of records). Every nested list
is read back from its declaration (``read_lists``), as the loader writes it from there;
a module's own ``complete_detail`` adds only what no declaration says."""

from functools import cache

from sqlalchemy import bindparam, select

from ...store import tables
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


def side_rows(table, side, *columns):
    """The pairs of a relation stored in ``table`` (or ``columns`` of them) whose
    ``side`` (``storage.RelationSide`` or ``Grouping``) is one of ``ids``, in the order
    that side declares (its ``column``, then its ``position``)."""
    return owned_rows(table, side.column, side.position, columns)


@cache
def _stored_items(table, owner, nicks):
    """The rows of ``table`` owned by ``ids``, in the order of its key (the owner, then
    the position, within a constant's list where the key holds it); ``nicks``: with
    each nick's releaser."""
    releasers = tables.releasers
    columns = [table]
    if nicks:
        columns += [releasers.c.name.label("releaser_name"), releasers.c.is_group]
    statement = select(*columns)
    if nicks:
        statement = statement.join(releasers, releasers.c.id == table.c.releaser_id)
    return statement.where(table.c[owner].in_(IDS)).order_by(*table.primary_key.columns)


NICK_COLUMNS = frozenset({"name", "abbreviation", "releaser_id"})  # a nick as stored


def _nick(row):
    """A nick as stored: its name and abbreviation, and its releaser's summary."""
    return {
        "name": row["name"],
        "abbreviation": row["abbreviation"],
        "releaser": {
            "id": row["releaser_id"],
            "name": row["releaser_name"],
            "is_group": row["is_group"],
        },
    }


def _referring(nested):
    """{column: resource} of the records that the items of ``nested`` refer to."""
    if nested.reference is not None:
        return dict([nested.reference])
    return {f"{key}_id": resource for key, resource in nested.references.items()}


def _shape(nested):
    """How a stored row of ``nested`` reads back as the item written: a function of the
    row and the records referred to ({resource: {id: record}})."""
    if nested.reference is not None:
        column, resource = nested.reference
        return lambda row, records: records[resource][row[column]]
    if nested.nick == "":
        return lambda row, records: _nick(row)
    references = [(key, f"{key}_id", resource) for key, resource in nested.references.items()]
    left_out = {nested.owner, "position", *nested.constant}
    left_out.update(column for _, column, _ in references)
    if nested.nick is not None:
        left_out.update(NICK_COLUMNS)
    own = [column.name for column in nested.table.c if column.name not in left_out]
    nick = nested.nick

    def shape(row, records):
        item = {name: row[name] for name in own}
        for key, column, resource in references:
            item[key] = records[resource][row[column]]
        if nick is not None:
            item[nick] = _nick(row)
        return item

    return shape


def read_lists(build, lists, rows):
    """Set each of ``lists`` (``storage.NestedList``s) in the record ``rows``, its items
    read back as the loader wrote them, in position order: one query per table for the
    batch (lists sharing one told apart by their ``constant`` columns), the records
    the items refer to read once per resource (``build.records``)."""
    if not lists:
        return
    by_id = {}
    for row in rows:
        for nested in lists:
            row[nested.field] = []
        by_id[row["id"]] = row
    ids = list(by_id)
    by_table = {}
    for number, nested in enumerate(lists):
        by_table.setdefault(nested.table, []).append(number)
    read = []  # (the list's number, stored row)
    for table, numbers in by_table.items():
        first = lists[numbers[0]]
        found = build.rows(_stored_items(table, first.owner, first.nick is not None), ids)
        if len(numbers) == 1:
            read += [(numbers[0], row) for row in found]
            continue
        constants = [(number, lists[number].constant.items()) for number in numbers]
        for row in found:  # a row of a list not read here (the detail's) matches none
            for number, constant in constants:
                if all(row[column] == value for column, value in constant):
                    read.append((number, row))
                    break
    wanted = {}  # resource -> ids of the records that items refer to
    referring = [_referring(nested).items() for nested in lists]
    for number, row in read:
        for column, resource in referring[number]:
            wanted.setdefault(resource, set()).add(row[column])
    records = {resource: build.records(resource, ids_of) for resource, ids_of in wanted.items()}
    shapes = [_shape(nested) for nested in lists]
    for number, row in read:
        nested = lists[number]
        by_id[row[nested.owner]][nested.field].append(shapes[number](row, records))


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
        list records need beyond their own columns: the nested lists they show."""
        listed = self.resource.schema.fields
        read_lists(build, [n for n in self.nested_lists if n.field in listed], rows)

    def complete_detail(self, build, rows):
        """Likewise for the detail records (after ``complete``): the nested lists only
        they show; a subclass adds the rest."""
        listed, shown = self.resource.schema.fields, self.resource.detail_schema.fields
        read_lists(
            build,
            [n for n in self.nested_lists if n.field in shown and n.field not in listed],
            rows,
        )
