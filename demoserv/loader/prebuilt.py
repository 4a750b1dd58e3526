"""``demoserv load built.sqlite3``: put in place a catalogue file that this service has
already built (the served file of another machine, or one built into a staging path),
with the guarantees of every load: the lock, the file copied beside the served one and
checked there, the previous file kept, owner and mode, one-line failures naming the
path, nothing replaced on failure.

The check reads what the server will read: besides SQLite's integrity check and the
schema, the catalogue's facts in the forms a build writes them (its version and history
digest in hexadecimal, times in UTC, the features and each load's counts as JSON), so
that none reaches a header or a terminal otherwise, and every stored record, list and
detail, expanded and rendered as the server renders it, once, in one pass.

Several replicas then serve byte-identical files: the same version, the same ETags and
the same Last-Modified everywhere.
"""

import os
import sqlite3
import stat
import struct
from pathlib import Path

import orjson
import zstandard

from ..resources import RESOURCES
from ..store import facts, tables
from ..store.fingerprint import schema_version
from ..store.tables import expected_columns, schema_mismatch
from ..store.templates import RecordCodec
from ..store.values import connect_read_only, facts_error, shown, time_error
from . import install
from .history import CHANGES
from .reporting import CatalogueError, silent

MAGIC = b"SQLite format 3\x00"
SUFFIXES = (".sqlite3", ".sqlite", ".db")
HEADER = 100  # bytes of the SQLite file header
COPY_CHUNK = 1 << 20


def is_built_catalogue(source):
    """Whether ``source`` is meant as a built catalogue: named like an SQLite file, or a
    file that starts as one."""
    source = Path(source)
    if source.suffix.lower() in SUFFIXES:
        return True
    try:
        with open(source, "rb") as file:
            return file.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


def install_built(source, target, *, wait=False, allow_empty=False, snapshot_at=(), report=silent):
    """Copy the built catalogue ``source`` beside ``target``, check the copy and rename
    it over ``target`` (its snapshot written for ``snapshot_at``), reporting to
    ``report`` what the install does not stop for. Returns (the copy's record counts,
    the replaced file's)."""
    source, target = Path(source), Path(target)
    with install.building(target, wait=wait, report=report) as build:
        _copy(source, build)
        counts = check_built(build, source)
        before = install.install(
            build, target, counts, allow_empty=allow_empty, snapshot_at=snapshot_at, report=report
        )
    return counts, before


def _copy(source, build):
    """``source`` copied to ``build``: a failure to read names ``source``; a failure to
    write (a full disk) is left to ``install.building``, which names the folder."""
    try:
        # Non-blocking, so that opening a FIFO does not wait for a writer.
        descriptor = os.open(source, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        raise CatalogueError(f"{source}: cannot be read: {error.strerror}") from None
    with open(descriptor, "rb") as reader, open(build, "wb") as writer:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise CatalogueError(f"{source}: not a regular file")
        while True:
            try:
                chunk = reader.read(COPY_CHUNK)
            except OSError as error:
                raise CatalogueError(f"{source}: cannot be read: {error.strerror}") from None
            if not chunk:
                return
            writer.write(chunk)


def check_built(path, source):
    """The record counts of the catalogue file at ``path`` (a copy of ``source``, which
    the errors name), if it is whole, sound and a complete catalogue of the schema this
    service reads; CatalogueError otherwise."""

    def refuse(why):
        return CatalogueError(f"{source}: {why}")

    with open(path, "rb") as file:
        header = file.read(HEADER)
        size = os.fstat(file.fileno()).st_size
    if not header.startswith(MAGIC):
        what = "an empty file" if not size else "not an SQLite database"
        raise refuse(f"{what}; expected a catalogue file built by this service")
    if len(header) < HEADER:
        raise refuse("truncated: shorter than an SQLite header")
    page_size = struct.unpack(">H", header[16:18])[0]
    page_size = 65536 if page_size == 1 else page_size
    pages = struct.unpack(">I", header[28:32])[0]
    # The header's page count holds when its "valid for" counter is the change counter.
    if header[92:96] == header[24:28] and size != pages * page_size:
        raise refuse(
            f"truncated or damaged: {size:,} bytes where the header promises "
            f"{pages:,} pages of {page_size:,}"
        )
    try:
        connection = connect_read_only(path)
    except sqlite3.Error as error:
        raise refuse(f"cannot be opened: {error}") from None
    try:
        return _check_contents(connection, refuse)
    except sqlite3.Error as error:
        raise refuse(f"damaged: {error}") from None
    finally:
        connection.close()


class _Driver:
    """The sqlite3 connection as tables.schema_mismatch reads it."""

    def __init__(self, connection):
        self.exec_driver_sql = connection.execute


def _check_contents(connection, refuse):
    problems = [row[0] for row in connection.execute("PRAGMA integrity_check")]
    if problems != ["ok"]:
        # A row may hold several lines under a "*** in database main ***" heading: the
        # refusal stays one line, naming the first problem.
        lines = [
            line
            for problem in problems
            for line in problem.splitlines()
            if line.strip() and not line.startswith("***")
        ] or ["integrity check failed"]
        more = f" (and {len(lines) - 1:,} more)" if len(lines) > 1 else ""
        raise refuse(f"damaged: {lines[0]}{more}")
    try:
        mismatch = schema_mismatch(_Driver(connection), expected_columns())
    except ValueError:
        raise refuse("an SQLite database without tables, not a catalogue") from None
    names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    info = []
    if "catalogue_info" in names:  # the schema version first: it says the most
        try:
            info = connection.execute("SELECT schema_version, version FROM catalogue_info")
            info = info.fetchall()
        except sqlite3.OperationalError:  # other columns: told by the mismatch below
            pass
    expected = schema_version(RESOURCES)
    if len(info) == 1 and info[0][0] != expected:
        raise refuse(
            f"built for schema version {info[0][0]}; this service reads version "
            f"{expected}: build it again with this version (demoserv load the "
            "catalogue folder or the upstream's export)"
        )
    if mismatch is not None:
        raise refuse(f"not a catalogue built by this version of the service ({mismatch})")
    if len(info) != 1 or not info[0][1]:
        raise refuse("an unfinished catalogue: no catalogue version recorded")
    missing = [index.name for index in tables.INDEXES if index.name not in names]
    if missing:
        raise refuse(f"an unfinished catalogue: no index {missing[0]}")
    counts = facts.read_counts(connection)
    dictionaries = set(connection.execute("SELECT resource, kind FROM dictionaries"))
    columns = {row[0] for row in connection.execute("SELECT resource FROM listing_columns")}
    for name in tables.RECORD_TABLES:
        rows = connection.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]
        if counts.get(name) != rows:
            raise refuse(
                f"an unfinished catalogue: {name} holds {rows:,} records, "
                f"its count says {counts.get(name)}"
            )
        kinds = ["list"]
        if f"{name}_details" in tables.metadata.tables:
            kinds.append("detail")
            details = connection.execute(f'SELECT count(*) FROM "{name}_details"').fetchone()[0]
            if details != rows:
                raise refuse(f"an unfinished catalogue: {details:,} of {rows:,} {name} details")
        for kind in kinds:
            if (name, kind) not in dictionaries:
                raise refuse(f"an unfinished catalogue: no {kind} dictionary of {name}")
        if name not in columns:
            raise refuse(f"an unfinished catalogue: no listing columns of {name}")
    problem = _facts_problem(connection) or _records_problem(connection)
    if problem:
        raise refuse(f"damaged: {problem}")
    return counts


# The optional data a catalogue may say it holds: what the filters ask for.
FEATURES = {item.feature for resource in RESOURCES for item in resource.filters if item.feature}


def _facts_problem(connection):
    """What is wrong with the facts the server and the commands show, or None."""
    ((version, loaded_at, history, features),) = connection.execute(
        "SELECT version, loaded_at, history, features FROM catalogue_info"
    ).fetchall()
    problem = facts_error(version, loaded_at, history)
    if problem:
        return f"catalogue_info: {problem}"
    listed = _json(features)
    if not (isinstance(listed, list) and all(item in FEATURES for item in listed)):
        return f"catalogue_info: features: {shown(features)} is not a JSON list of features"
    for number, version, loaded_at, counts in connection.execute(
        "SELECT load_number, version, loaded_at, counts FROM catalogue_loads"
    ):
        problem = facts_error(version, loaded_at, None) or _counts_error(counts)
        if problem:
            return f"catalogue_loads {number}: {problem}"
    for key, value in connection.execute("SELECT key, value FROM catalogue_source"):
        if key == "size" and not (isinstance(value, str) and value.isascii() and value.isdigit()):
            return f"catalogue_source: size: {shown(value)} is not a number of bytes"
        if key == "loaded_at" and time_error(value):
            return f"catalogue_source: loaded_at: {time_error(value)}"
    return None


def _json(text):
    """``text`` read as JSON; None if it is not JSON."""
    try:
        return orjson.loads(text)
    except (orjson.JSONDecodeError, TypeError):
        return None


def _counts_error(text):
    """What is wrong with a load's counts ({resource: {"added": n, ...}} as JSON), or None."""
    counts = _json(text)
    if isinstance(counts, dict) and all(
        isinstance(each, dict)
        and set(each) == set(CHANGES)
        and all(type(number) is int for number in each.values())
        for each in counts.values()
    ):
        return None
    return f"counts: {shown(text)} is not a JSON object of changes by resource"


def _records_problem(connection):
    """The first stored record that the server could not answer with, or None: each, list
    and detail, must expand with its dictionary into a template that renders
    (``RecordCodec.marked``, the server's ``%`` with the markers for values) as the JSON
    object of its own id. One pass over every record."""
    codecs = {
        (resource, kind): RecordCodec(data)
        for resource, kind, data in connection.execute(
            "SELECT resource, kind, data FROM dictionaries"
        )
    }
    for name in tables.RECORD_TABLES:
        for kind, table in (("list", name), ("detail", f"{name}_details")):
            if table not in tables.metadata.tables:
                continue
            codec = codecs[(name, kind)]
            for record_id, stored in connection.execute(f'SELECT id, doc FROM "{table}"'):
                try:
                    record = orjson.loads(codec.marked(stored))
                except (zstandard.ZstdError, ValueError, TypeError, KeyError):
                    record = None  # not zstd, not a template, not JSON
                if not isinstance(record, dict) or record.get("id") != record_id:
                    return f"the {kind} record of {name} id {record_id} cannot be read"
    return None
