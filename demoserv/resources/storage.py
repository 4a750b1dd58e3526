"""How a resource's records are stored, declared with the resource: the columns of its
row (the record's fields of the same name, and its ``derived_columns``) and the
nested lists it ``owns``, each stored as rows of a table of its own. The loader
(``catalogue/rows.py``) writes every resource's rows from these declarations; what a
resource's relations need beyond them is a method of the loader."""

from dataclasses import dataclass, field

from ..shared import date_key, name_key, timestamp_key


def optional(function):
    """``function`` applied to a value that may be None."""
    return lambda value: None if value is None else function(value)


# Derived columns (column -> (record field, function)) that several resources share.
NAME_KEY = {"name_key": ("name", name_key)}
TIMESTAMPS = {
    "created_at": ("created_at", optional(timestamp_key)),
    "updated_at": ("updated_at", optional(timestamp_key)),
}


def date_keys(*names):
    """The sort key columns ``<name>_key`` of partial dates."""
    return {f"{name}_key": (name, date_key) for name in names}


@dataclass(frozen=True)
class Owned:
    """A nested list of a record stored as rows of ``table`` (the owner's id, the item's
    position in the list, then the item's fields). ``references``: keys of an item that
    refer to a record of their own (key -> resource), stored as ``<key>_id``;
    ``reference``: (column, resource) when each item is itself such a reference."""

    field: str
    table: object
    references: dict = field(default_factory=dict)
    reference: tuple = None

    @property
    def owner(self):
        return self.table.c[0].name


def row(resource, record):
    """The row of ``record`` (a validated record, or a summary's fields) in its table:
    its fields of the same name as a column, and its derived columns."""
    table = resource.table
    result = {name: record.get(name) for name in resource.record_schema.fields if name in table.c}
    for column, (name, derive) in resource.derived_columns.items():
        if column in table.c:
            result[column] = derive(record.get(name))
    return result


@dataclass(frozen=True)
class Fill:
    """``INSERT INTO table (columns) SELECT expressions source``: rows of ``table``
    derived from the staged tables of the upstream's export (``columns``: column -> SQL
    expression; ``{tags}`` in one stands for the tags of the record ``r``)."""

    table: object
    columns: dict
    source: str


@dataclass(frozen=True)
class Upstream:
    """How the upstream's export fills a resource's tables: the export's tables it
    reads (table -> {column: type}), their references ((table, column, referenced
    table)), the columns that must hold a value, the content type of its tags
    ((app label, model)), and its tables' rows (``Fill``), in order."""

    tables: dict
    fills: tuple
    foreign_keys: tuple = ()
    required: dict = field(default_factory=dict)
    tags: tuple = None
