"""A catalogue file's facts, read one way for every reader: the records' version and
time and the schema version (``catalogue_info``), the record counts (``record_counts``),
where the file came from (``catalogue_source``, written by loader/provenance.py) and its
history of changes in brief (``catalogue_loads``: its last load and its oldest kept).

Each question opens the file read-only once and asks it all in that one connection
(``file_facts`` for ``demoserv status`` and ``/api/v1/status/``, or one fact:
``version_and_time``, ``counts``, ``provenance``, ``history``); a file that is absent or
unusable, or a table it lacks, gives that fact's default, as the install, the status
and the history have always read them. A caller that has a connection to the file
already (the server's, a load's) asks it with the ``read_*`` functions, which raise
what SQLite raises. The statements are made from ``tables``, never written twice.
"""

import sqlite3
from dataclasses import dataclass
from typing import NamedTuple

import orjson
from sqlalchemy import func, select, union
from sqlalchemy.dialects import sqlite

from . import tables
from .values import connect_read_only

_info = tables.catalogue_info.c
_loads = tables.catalogue_loads.c


def _sql(statement):
    """``statement`` as the SQL text sqlite3 runs (no parameters)."""
    return str(statement.compile(dialect=sqlite.dialect()))


_VERSION = _sql(select(_info.version, _info.loaded_at))
_STATUS = _sql(select(_info.version, _info.loaded_at, _info.schema_version))
_SERVING = _sql(
    select(_info.version, _info.loaded_at, _info.schema_version, _info.features, _info.history)
)
_COUNTS = _sql(select(tables.record_counts.c.resource, tables.record_counts.c["count"]))
_SOURCE = _sql(select(tables.catalogue_source.c.key, tables.catalogue_source.c.value))
# The first load kept and the last, in that order (one row when they are one).
_ENDS = union(select(func.min(_loads.load_number)), select(func.max(_loads.load_number)))
_HISTORY = _sql(
    select(_loads.version, _loads.loaded_at, _loads.counts)
    .where(_loads.load_number.in_(_ENDS))
    .order_by(_loads.load_number)
)


class Version(NamedTuple):
    """The records' version and the time they were first loaded (``Last-Modified``)."""

    version: str
    loaded_at: str


@dataclass(frozen=True)
class Info:
    """``catalogue_info`` as the server reads it."""

    version: str
    loaded_at: str
    schema_version: str
    features: frozenset  # what optional data the catalogue holds
    history: str | None  # the digest of the history of loads; None without one


@dataclass(frozen=True)
class FileFacts:
    """What ``demoserv status`` tells of a catalogue file, read in one connection."""

    version: str
    loaded_at: str  # the records' time (catalogue_info), not the file's build
    schema_version: str
    counts: dict  # {resource: records}; {} if not recorded
    provenance: dict  # catalogue_source's {key: value}; {} if none
    history: dict | None  # the history in brief (read_history); None without one


# Questions asked in a connection the caller holds: each raises sqlite3.Error.


def read_version(connection):
    """The file's Version; None if it records none."""
    row = connection.execute(_VERSION).fetchone()
    return None if row is None else Version(*row)


def read_info(connection):
    """The file's Info, its features read from their JSON (ValueError if they are not
    JSON); None unless it records exactly one."""
    rows = connection.execute(_SERVING).fetchall()
    if len(rows) != 1:
        return None
    version, loaded_at, schema_version, features, history = rows[0]
    return Info(version, loaded_at, schema_version, frozenset(orjson.loads(features)), history)


def read_counts(connection):
    """{resource: number of records}."""
    return dict(connection.execute(_COUNTS))


def read_provenance(connection):
    """Where the file came from: {key: value} (loader/provenance.py names the keys)."""
    return dict(connection.execute(_SOURCE))


def read_history(connection):
    """The last load of the file (its version, time and counts of changes by resource)
    and the oldest kept (how far back the history goes); None if it holds no load."""
    rows = connection.execute(_HISTORY).fetchall()
    if not rows:
        return None
    (first_version, first_at, _), (version, loaded_at, counts) = rows[0], rows[-1]
    return {
        "last_load": {"version": version, "loaded_at": loaded_at, "counts": orjson.loads(counts)},
        "since": {"version": first_version, "loaded_at": first_at},
    }


def read_file_facts(connection):
    """The FileFacts of the file; None if it records no version. A fact whose table is
    missing or unreadable is its default ({} or None)."""
    try:
        row = connection.execute(_STATUS).fetchone()
    except sqlite3.Error:
        return None
    if row is None:
        return None
    version, loaded_at, schema_version = row
    return FileFacts(
        version,
        loaded_at,
        schema_version,
        counts=_or(read_counts, connection, {}),
        provenance=_or(read_provenance, connection, {}),
        history=_or(read_history, connection, None),
    )


def _or(question, connection, default):
    try:
        return question(connection)
    except sqlite3.Error:
        return default


# Questions asked of a file by its path: each opens it read-only once.


def _asked(path, question, default):
    """``question``'s answer in one read-only connection to the catalogue file at
    ``path``; ``default`` if the file is absent or unusable, or lacks what it reads."""
    try:
        connection = connect_read_only(path)
    except sqlite3.Error:
        return default
    try:
        return question(connection)
    except sqlite3.Error:
        return default
    finally:
        connection.close()


def file_facts(path):
    """The FileFacts of the catalogue file at ``path``; None if it is absent or
    unusable or records no version."""
    return _asked(path, read_file_facts, None)


def version_and_time(path):
    """The Version of the catalogue file at ``path``; None if it has none."""
    return _asked(path, read_version, None)


def counts(path):
    """Record counts of the catalogue file at ``path``; {} if it is absent or unusable."""
    return _asked(path, read_counts, {})


def provenance(path):
    """The provenance facts recorded in the catalogue file at ``path``; {} if it has
    none or is absent or unusable."""
    return _asked(path, read_provenance, {})


def history(path):
    """The history in brief of the catalogue file at ``path`` (read_history); None if it
    holds none or is absent or unusable."""
    return _asked(path, read_history, None)
