"""Importing the upstream's daily database export (a plain-SQL pg_dump, gzipped or not).

The dump is read once, as a stream (``pgdump.read_tables``): the rows of the tables the
API needs are written into a staging database beside the new catalogue file, with the
dump line each came from. Once the whole dump has been read, foreign keys are checked
(an error names table, line and column), and the catalogue's tables are filled from the
staging tables with SQL, deriving every API field as the upstream does and each nested
list in the upstream's order (ties in the order of the dump's rows): see UPSTREAM.md.
The staging database is then removed, and the new file is built like any other load.
"""

import sqlite3
from pathlib import Path

from ..store import tables
from ..store.values import date_key, name_key
from . import adhoc_facts
from .build import SCRATCH_TABLES
from .link_classes import ARCHIVED, external_links_key, link_url
from .pgdump import DumpError, read_tables
from .reporting import step
from .resources import FROM_UPSTREAM, LOADING, storage

# The export's tables that every resource's tags read (UPSTREAM.md).
WANTED = {
    "taggit_tag": {"id": "int", "name": "text"},
    "taggit_taggeditem": {
        "id": "int",
        "object_id": "int",
        "content_type_id": "int",
        "tag_id": "int",
    },
    "django_content_type": {"id": "int", "app_label": "text", "model": "text"},
}
# (table, column, referenced table): every reference the API follows must resolve.
FOREIGN_KEYS = [
    ("taggit_taggeditem", "tag_id", "taggit_tag"),
    ("taggit_taggeditem", "content_type_id", "django_content_type"),
]
# Columns whose NULL the API cannot show, and those that hold one of a few values.
REQUIRED = {}
CHOICES = {}
# Every resource's part of the import (Resource.upstream), in load order, then that of
# the /api/adhoc/ answers; each adds the columns it reads to the tables staged.
DECLARED = [LOADING[name].upstream for name in FROM_UPSTREAM]
DECLARED.append(adhoc_facts.UPSTREAM)
for _declared in DECLARED:
    for _table, _columns in _declared.tables.items():
        WANTED.setdefault(_table, {}).update(_columns)
    FOREIGN_KEYS.extend(_declared.foreign_keys)
    REQUIRED.update(_declared.required)
    CHOICES.update(_declared.choices)
STAGING_BATCH = 10_000


def _partial_date(value, precision):
    """The upstream's partial date from a date column and its precision column."""
    if value is None or not precision:
        return None
    return {"y": value[:4], "m": value[:7], "d": value}.get(precision)


def _empty_to_none(value):
    return value or None


def _link_url(link_class, parameter):
    try:
        return link_url(link_class, parameter)
    except ValueError:
        return None


FUNCTIONS = {
    "partial_date": (2, _partial_date),
    "date_key": (1, date_key),
    "name_key": (1, name_key),
    "py_lower": (1, lambda text: None if text is None else text.lower()),
    "link_url": (2, _link_url),
    "external_links_key": (1, external_links_key),
    "empty_to_none": (1, _empty_to_none),
}


def import_dump(source, builder, report):
    """Fill ``builder``'s new file from the dump ``source``, reporting to ``report``.
    Returns the number of records of each resource. Raises DumpError naming table, line
    and column for bad input."""
    target = Path(builder.path)
    # Named after the new file, so that a killed load's is removed with it.
    staging_path = target.with_name(f"{target.name}.staging")
    staging = sqlite3.connect(staging_path)
    try:
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -65536"):
            staging.execute(f"PRAGMA {pragma}")
        _stage(source, staging, report)
        with step(report, "checking references"):
            _index(staging)
            _check(staging)
        staging.commit()
        staging.close()
        staging = None
        connection = builder.raw_connection()
        for name, (arguments, function) in FUNCTIONS.items():
            connection.create_function(name, arguments, function, deterministic=True)
        connection.commit()  # ATTACH cannot run inside a transaction
        connection.execute("ATTACH DATABASE ? AS stage", (str(staging_path),))
        try:
            with step(report, "deriving records"):
                _fill(connection)
            counts = {  # every registered resource's records
                name: connection.execute(f"SELECT count(*) FROM main.{table.name}").fetchone()[0]
                for name, table in tables.RECORD_TABLES.items()
            }
        finally:
            connection.commit()
            connection.execute("DETACH DATABASE stage")
        return counts
    finally:
        if staging is not None:
            staging.close()
        staging_path.unlink(missing_ok=True)


def _stage(source, staging, report):
    """Write every wanted row into a staging table of its name, with its dump line."""
    for table, columns in WANTED.items():
        definition = ", ".join(
            f'"{name}"' + (" PRIMARY KEY" if name == "id" else "") for name in columns
        )
        staging.execute(f'CREATE TABLE "{table}" ({definition}, line INTEGER NOT NULL)')
    statements = {
        table: f'INSERT INTO "{table}" VALUES ({", ".join("?" * (len(columns) + 1))})'
        for table, columns in WANTED.items()
    }
    pending = {table: [] for table in WANTED}
    for table, line, row in read_tables(source, WANTED, report):
        rows = pending[table]
        rows.append((*row, line))
        if len(rows) >= STAGING_BATCH:
            _insert(staging, statements[table], table, rows)
    for table, rows in pending.items():
        _insert(staging, statements[table], table, rows)


def _insert(staging, statement, table, rows):
    if not rows:
        return
    try:
        staging.executemany(statement, rows)
    except sqlite3.IntegrityError:
        seen = {}
        for *values, line in rows:
            record_id = values[0]
            existing = staging.execute(
                f'SELECT line FROM "{table}" WHERE id = ?', (record_id,)
            ).fetchone()
            if record_id in seen or existing:
                first = seen.get(record_id) or existing[0]
                raise DumpError(
                    f"{table}:{line}: id: duplicate id {record_id} (first on line {first})"
                ) from None
            seen[record_id] = line
        raise
    rows.clear()


def _index(staging):
    """Every staged reference column, indexed: the checks and the derivations join on
    them."""
    for table, column, _ in FOREIGN_KEYS:
        staging.execute(f'CREATE INDEX "{table}_by_{column}" ON "{table}" ("{column}")')
    staging.execute(
        "CREATE INDEX taggeditem_by_object ON taggit_taggeditem (content_type_id, object_id, id)"
    )


def _check(staging):
    """Every reference resolves and every required value is present."""
    for table, columns in REQUIRED.items():
        for column in columns:
            found = staging.execute(
                f'SELECT line FROM "{table}" WHERE "{column}" IS NULL LIMIT 1'
            ).fetchone()
            if found:
                raise DumpError(f"{table}:{found[0]}: {column}: no value (NULL)")
    for table, column, referenced in FOREIGN_KEYS:
        found = staging.execute(
            f'SELECT c.line, c."{column}" FROM "{table}" c LEFT JOIN "{referenced}" r '
            f'ON r.id = c."{column}" WHERE c."{column}" IS NOT NULL AND r.id IS NULL LIMIT 1'
        ).fetchone()
        if found:
            raise DumpError(
                f"{table}:{found[0]}: {column}: no row with id {found[1]} in {referenced}"
            )
    for table, choices in CHOICES.items():
        for column, values in choices.items():
            found = staging.execute(
                f'SELECT line, "{column}" FROM "{table}" WHERE "{column}" NOT IN '
                f"({', '.join('?' * len(values))}) LIMIT 1",
                values,
            ).fetchone()
            if found:
                raise DumpError(f"{table}:{found[0]}: {column}: {found[1]!r} is not a {column}")


def _fill(connection):
    """Every resource's tables filled as its declaration says (``storage.Upstream``)."""
    for declared in DECLARED:
        for name, (arguments, make) in declared.functions.items():
            connection.create_function(name, arguments, make(connection), deterministic=True)
        tags = _tags(connection, *declared.tags) if declared.tags else None
        for fill in declared.fills:
            if isinstance(fill, storage.Links):
                _links(connection, fill)
                continue
            expressions = ", ".join(
                expression.replace("{tags}", tags) if tags else expression
                for expression in fill.columns.values()
            )
            connection.execute(
                f"INSERT INTO {_target(fill.table)} ({', '.join(fill.columns)}) "
                f"SELECT {expressions} {fill.source}"
            )
            for check, message in fill.checks:
                found = connection.execute(check).fetchone()
                if found:
                    raise DumpError(message.format(line=found[0]))


def _target(table):
    """The table's name as the import writes it: a table the builder keeps in its
    scratch file unqualified, the others in the new file (``main``)."""
    return table.name if table in SCRATCH_TABLES else f"main.{table.name}"


def _links(connection, links):
    """A ``storage.Links``: archived classes left out, each URL built and checked."""
    archived = ", ".join("?" * len(ARCHIVED))
    shown = f"FROM stage.{links.source} WHERE link_class NOT IN ({archived})"
    # Checked first: a URL that cannot be built is a line of the dump to name.
    row = connection.execute(
        f"SELECT line, link_class, parameter {shown} AND link_url(link_class, parameter) "
        "IS NULL ORDER BY line LIMIT 1",
        sorted(ARCHIVED),
    ).fetchone()
    if row:
        raise DumpError(
            f"{links.source}:{row[0]}: parameter: {row[2]!r} is not a link of class {row[1]}"
        )
    columns = "".join(f"{column}, " for column in links.columns)
    expressions = "".join(f"{expression}, " for expression in links.columns.values())
    owner = links.owner
    connection.execute(
        f"INSERT INTO {_target(links.table)} ({owner}, position, {columns}link_class, url) "
        f"SELECT {owner}, row_number() OVER (PARTITION BY {owner} ORDER BY {links.order}, "
        f"line), {expressions}link_class, link_url(link_class, parameter) {shown}",
        sorted(ARCHIVED),
    )


def _content_type(connection, app_label, model):
    found = connection.execute(
        "SELECT id FROM stage.django_content_type WHERE app_label = ? AND model = ?",
        (app_label, model),
    ).fetchone()
    return found[0] if found else -1


def _tags(connection, app_label, model):
    return (
        "coalesce((SELECT json_group_array(name) FROM (SELECT t.name FROM "
        "stage.taggit_taggeditem i JOIN stage.taggit_tag t ON t.id = i.tag_id "
        f"WHERE i.content_type_id = {int(_content_type(connection, app_label, model))} "
        "AND i.object_id = r.id ORDER BY i.id)), '[]')"
    )
