"""How a resource's records are stored, declared in its load module: the columns of its
row (the record's fields of the same name, and its ``derived_columns``), its
``nested_lists``, each stored as rows of a table of its own (``NestedList``), and the
``relations`` it stores that other records show too (``Relation``, ``Grouping``). The loader
(``loader/rows.py``) writes every resource's rows and checks every relation in the
scratch file (``loader/scratch.py``) from these declarations, the build reads every
nested list back into the records from its declaration (``loading.read_lists``), and the
exporter leaves out the sides it derives (``written_by_other_side``)."""

from dataclasses import dataclass, field

from ...store.values import date_key, name_key, timestamp_key


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
class NestedList:
    """A nested list of a record stored as rows of ``table`` (the owner's id, the item's
    position in the list, then the item's fields). ``references``: keys of an item that
    refer to a record of their own (key -> resource), stored as ``<key>_id``;
    ``reference``: (column, resource) when each item is itself such a reference;
    ``nick``: the key of an item's releaser nick (``""``: the item is one), stored as
    its ``name``, ``abbreviation`` and ``releaser_id`` and checked against the
    releaser's nicks; ``constant``: columns of the same value for every item;
    ``after``: a list stored before it in the same table, whose positions its own follow.
    The loader writes its items from this (``loader/rows.py``), the build reads them back
    from it (``loading.read_lists``): nothing else says how a nested list is stored."""

    field: str
    table: object
    references: dict = field(default_factory=dict)
    reference: tuple = None
    nick: str = None
    constant: dict = field(default_factory=dict)
    after: str = None

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
    expression; ``{tags}`` in one stands for the tags of the record ``r``). ``checks``:
    (SQL giving the dump line of a row it could not derive, the message for that line,
    ``{line}`` standing for it), run once it is filled."""

    table: object
    columns: dict
    source: str
    checks: tuple = ()


@dataclass(frozen=True)
class Links:
    """Rows of ``table`` from the export's link table ``source``: each ``owner``'s links
    in ``order`` (ties in the dump's order), archived classes left out, each URL built
    from its class and parameter (a parameter that builds none fails the import);
    ``columns``: more columns (column -> SQL expression)."""

    table: object
    source: str
    owner: str
    order: str = "link_class"
    columns: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Upstream:
    """How the upstream's export fills a resource's tables: the export's tables it
    reads (table -> {column: type}), their references ((table, column, referenced
    table)), the columns that must hold a value, and those that must hold one of a few
    (table -> {column: values}), the content type of its tags ((app label, model)),
    SQL functions its fills call (name -> (arguments, function of the import's
    connection that makes it)), and its tables' rows (``Fill``, ``Links``), in order."""

    tables: dict
    fills: tuple
    foreign_keys: tuple = ()
    required: dict = field(default_factory=dict)
    choices: dict = field(default_factory=dict)
    tags: tuple = None
    functions: dict = field(default_factory=dict)


@dataclass(frozen=True)
class RelationSide:
    """One side of a relation shown from both sides: records of ``resource`` give it in
    the lists ``fields`` ((field, key): each item refers to the other side's record by
    its ``key``, its other keys the pair's values; key None: the item is the reference
    itself), unless ``collect`` does (``collect(loader, record, where, add_pairs)``, for a
    side nested deeper); a pair stores the record's id in ``column`` and the item's
    place in its list in ``position``. A list not given is derived from the other side,
    ordered by ``order_column`` (a column of the other side's table, ties by id), else
    by ``order_key`` (a sort key of a pair (left id, right id, values)), else by the
    other side's id. ``label``: the field named in messages (the first field's name).
    ``exported``: an export writes this side too, though a load can derive it, because
    its order comes from the source (the upstream's rows) and no derivation gives it back."""

    resource: str
    fields: tuple
    column: str
    position: str
    order_column: object = None
    order_key: object = None
    collect: object = None
    label: str = None
    exported: bool = False

    def __post_init__(self):
        if self.label is None:
            object.__setattr__(self, "label", self.fields[0][0])


@dataclass(frozen=True)
class Relation:
    """A relation shown from both sides, stored as rows of ``table``, one a pair: the
    ``left`` side writes it in an export, the ``right`` side is derived at load when
    not given. ``names``: what a record of each side is called in messages."""

    table: object
    left: RelationSide
    right: RelationSide
    names: tuple

    @property
    def sides(self):
        return (self.left, self.right)


@dataclass(frozen=True)
class Grouping:
    """Records of ``resource`` grouped in records of ``group``: a record names its group
    in ``field`` (stored in its ``column``), a group lists its records in ``listed``,
    in order (stored in their ``position``; not given: by name). A group's list is
    derived at load and written, in an export, by its records."""

    resource: str
    field: str
    group: str
    listed: str
    column: str
    position: str


def written_by_other_side(relations, name):
    """The fields of ``name``'s records that ``relations`` derive at load from the other
    side, which writes them in an export."""
    result = set()
    for relation in relations:
        if isinstance(relation, Grouping):
            if relation.group == name:
                result.add(relation.listed)
        elif relation.right.resource == name and not relation.right.exported:
            result.update(field for field, _ in relation.right.fields)
    return frozenset(result)
