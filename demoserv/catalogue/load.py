"""Loading a catalogue folder: validate every record, build a new database file beside
the served one, and rename it over the served one only when all of it is good.

A failed load raises CatalogueError(``file:line: field: what is wrong``) and leaves
the served file untouched; a reader sees the old catalogue or the new one, never a mix.
"""

import datetime
import json
import os
import re
import sqlite3
import stat
import uuid
from pathlib import Path

import orjson
from marshmallow import ValidationError
from sqlalchemy import create_engine, func, insert, select, update
from sqlalchemy.schema import CreateTable

from .. import ordering, tables
from . import install, keys
from .schemas import RECORD_SCHEMAS

FILES = list(RECORD_SCHEMAS)
BATCH = 5000
PROGRESS_EVERY = 1000  # lines between progress reports
# Records that nested summaries may refer to, and may create when their file lacks them.
SUMMARISED = ("platforms", "production_types", "releasers")


class CatalogueError(Exception):
    """A catalogue that cannot be loaded, and where and why."""


class Progress:
    """Receives the progress of a load; this one ignores it."""

    def file_started(self, name, size):
        pass

    def advanced(self, size, records):
        pass

    def file_finished(self, name, records):
        pass

    def stage(self, description):
        pass


def load_catalogue(source, database, progress=None, *, wait=False, allow_empty=False):
    """Load the catalogue folder ``source`` into the database file ``database``.

    Returns (the number of records of each resource, the same of the catalogue it
    replaced). See ``install`` for the lock, the checks and the previous file.
    """
    progress = progress or Progress()
    paths = catalogue_files(Path(source))
    target = Path(database)
    with install.building(target, wait=wait) as building:
        builder = _Builder(building)
        try:
            counts = _Loader(builder, paths, progress).run()
            progress.stage("ranking and indexing")
            builder.finish(counts)
        finally:
            builder.close()
        before = install.install(building, target, counts, allow_empty=allow_empty)
    return counts, before


# Names that look meant as a catalogue file but are not one ("productions.json").
_LOOKALIKE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".jsonl.gz", ".json.gz")


def catalogue_files(source):
    """The catalogue files present in ``source``, by resource, in load order.

    A name that is present must be a readable regular file (or a link to one); a file
    whose name looks meant as a catalogue file but is not one is an error too.
    """
    if not source.is_dir():
        raise CatalogueError(f"{source}: not a folder")
    expected = {f"{name}.jsonl" for name in FILES}
    try:
        names = sorted(entry.name for entry in os.scandir(source))
    except OSError as error:
        raise CatalogueError(f"{source}: cannot be read: {error.strerror}") from None
    for name in names:
        lower = name.lower()
        if name in expected or name.startswith("."):
            continue
        if lower.endswith(_LOOKALIKE_SUFFIXES) or lower.split(".")[0] in FILES:
            raise CatalogueError(
                f"{source / name}: not a catalogue file name "
                f"(expected {', '.join(sorted(expected))})"
            )
    paths = {name: source / f"{name}.jsonl" for name in FILES}
    paths = {name: path for name, path in paths.items() if f"{name}.jsonl" in names}
    if not paths:
        expected = ", ".join(f"{name}.jsonl" for name in FILES)
        raise CatalogueError(f"{source}: no catalogue files (expected any of {expected})")
    for path in paths.values():
        _open_regular(path).close()
    return paths


def _open_regular(path):
    """``path`` opened for reading, if it is a regular file (links followed)."""
    try:
        # Non-blocking, so that opening a FIFO does not wait for a writer.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise CatalogueError(f"{path}: a symbolic link to nothing") from None
    except OSError as error:
        raise CatalogueError(f"{path}: cannot be read: {error.strerror}") from None
    kind = stat.S_IFMT(os.fstat(descriptor).st_mode)
    if kind != stat.S_IFREG:
        os.close(descriptor)
        what = _KINDS.get(kind, "not a regular file")
        raise CatalogueError(f"{path}: not a regular file but {what}")
    os.set_blocking(descriptor, True)
    return open(descriptor, "rb", buffering=1 << 16)


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def _fsync(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def read_records(path, schema, progress):
    """Yield (line number, validated record) for each record line of ``path``.

    A line holds at most LINE_LIMIT bytes and a string field at most FIELD_LIMIT
    characters; a key given twice in one object is an error.
    """
    lines = _open_regular(path)
    with lines:
        progress.file_started(path.name, os.fstat(lines.fileno()).st_size)
        pending_size = pending_lines = 0
        number = 0
        while True:
            try:
                raw = lines.readline(LINE_LIMIT + 1)
            except OSError as error:
                raise CatalogueError(f"{path}: cannot be read: {error.strerror}") from None
            if not raw:
                break
            number += 1
            where = f"{path.name}:{number}"
            if len(raw) > LINE_LIMIT and not raw.endswith(b"\n"):
                raise CatalogueError(f"{where}: {_field_at_end(raw)}: too long {_LIMITS}")
            pending_size += len(raw)
            pending_lines += 1
            if pending_lines == PROGRESS_EVERY:
                progress.advanced(pending_size, pending_lines)
                pending_size = pending_lines = 0
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise CatalogueError(
                    f"{where}: not valid UTF-8 ({error.reason} at byte {error.start})"
                ) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            try:
                data = orjson.loads(text)
            except orjson.JSONDecodeError as error:
                raise CatalogueError(
                    f"{where}: invalid JSON: {error.msg} at column {error.pos + 1}"
                ) from None
            if not isinstance(data, dict):
                raise CatalogueError(f"{where}: record: not a JSON object")
            if len(raw) > FIELD_LIMIT:
                _check_lengths(data, where)
            if not _no_duplicate_keys(raw, data):
                _check_duplicate_keys(text, where)
            try:
                yield number, schema.load(data)
            except ValidationError as error:
                field, message = first_error(error.messages)
                raise CatalogueError(f"{where}: {field}: {message}") from None
        progress.advanced(pending_size, pending_lines)


FIELD_LIMIT = 1 << 20  # characters of one string field
LINE_LIMIT = 8 << 20  # bytes of one record line
_LIMITS = "(a string field holds at most 1 MiB, a record line at most 8 MiB)"
_SPACE_BEFORE_COLON = re.compile(rb'"[ \t\r\n]+:')
_LAST_KEY = re.compile(rb'"((?:[^"\\]|\\.){1,200})"\s*:')


def _no_duplicate_keys(raw, data):
    """True if ``raw``, parsed as ``data``, surely gives no key twice in an object.

    Without ``\\u`` escapes and spaces before colons, ``":`` in the line counts its keys
    plus the quotes followed by a colon inside strings, and ``":`` in orjson's output
    counts the distinct keys plus the same quotes: equal counts mean no key was lost.
    A few microseconds a line; when it cannot tell, the slow exact check decides.
    """
    return (
        b"\\u" not in raw
        and _SPACE_BEFORE_COLON.search(raw) is None
        and raw.count(b'":') == orjson.dumps(data).count(b'":')
    )


def _check_duplicate_keys(text, where):
    """Read ``text`` again, slowly, when the quick count could not rule duplicates out."""

    def unique(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise CatalogueError(f"{where}: {key}: given twice in one object")
            seen.add(key)
        return dict(pairs)

    json.loads(text, object_pairs_hook=unique)


def _check_lengths(value, where, field=()):
    if isinstance(value, str):
        if len(value) > FIELD_LIMIT:
            raise CatalogueError(f"{where}: {'.'.join(field) or 'record'}: too long {_LIMITS}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_lengths(item, where, field + (str(key),))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_lengths(item, where, field + (str(index),))


def _field_at_end(raw):
    """The key of the field that a cut line ends in, as far as its text shows."""
    matches = list(_LAST_KEY.finditer(raw, max(0, len(raw) - LINE_LIMIT)))
    if not matches:
        return "record"
    try:
        return json.loads(b'"' + matches[-1].group(1) + b'"')
    except ValueError:
        return "record"


def first_error(messages, path=()):
    """The first (dotted field path, message) of a marshmallow error structure."""
    if isinstance(messages, dict):
        key, value = next(iter(messages.items()))
        return first_error(value, path if key == "_schema" else path + (str(key),))
    if isinstance(messages, list):
        return first_error(messages[0], path)
    return ".".join(path) or "record", messages


def _json(value):
    return orjson.dumps(value).decode()


class _Loader:
    """Reads the files in order, checks what refers to what, and hands rows to the
    builder."""

    def __init__(self, builder, paths, progress):
        self.builder = builder
        self.paths = paths
        self.progress = progress
        # id -> (record, where it was first seen), for records that summaries refer to
        self.known = {name: {} for name in SUMMARISED}
        self.party_series_ids = set()

    def run(self):
        counts = {}
        for name in FILES:
            path = self.paths.get(name)
            if path is None:
                continue
            seen = {}  # id -> line, within this file
            count = 0
            for number, record in read_records(path, RECORD_SCHEMAS[name], self.progress):
                where = f"{path.name}:{number}"
                first = seen.setdefault(record["id"], number)
                if first != number:
                    raise CatalogueError(
                        f"{where}: id: duplicate id {record['id']} (first on line {first})"
                    )
                self._accept(name, record, where)
                count += 1
            self.progress.file_finished(path.name, count)
            counts[name] = count
        for name in SUMMARISED:
            for record, _ in self.known[name].values():
                self.builder.add(name, record)
            counts[name] = len(self.known[name])
        return counts

    def _accept(self, resource, record, where):
        if resource in SUMMARISED:
            # Written at the end, with the records that summaries create.
            self.known[resource][record["id"]] = (record, where)
            return
        if resource == "party_series":
            self.party_series_ids.add(record["id"])
        elif resource == "parties":
            series = record["party_series"]
            if series is not None and series not in self.party_series_ids:
                raise CatalogueError(f"{where}: party_series: no party series with id {series}")
        elif resource == "productions":
            for field in ("author_nicks", "author_affiliation_nicks"):
                for index, nick in enumerate(record[field]):
                    self._refer("releasers", nick["releaser"], where, f"{field}.{index}.releaser")
            for field, summarised in (("platforms", "platforms"), ("types", "production_types")):
                for index, summary in enumerate(record[field]):
                    self._refer(summarised, summary, where, f"{field}.{index}")
        self.builder.add(resource, record)

    def _refer(self, resource, summary, where, field):
        """Check a nested summary against its record, or create the record from it."""
        known = self.known[resource].get(summary["id"])
        if known is None:
            self.known[resource][summary["id"]] = (summary, where)
            return
        record, origin = known
        for name, value in summary.items():
            if record[name] != value:
                raise CatalogueError(
                    f"{where}: {field}.{name}: {_json(value)} contradicts {origin}, "
                    f"which has {_json(record[name])} for {resource} id {summary['id']}"
                )


class _Builder:
    """Writes rows into a new database file, then ranks, indexes and labels it."""

    def __init__(self, path):
        self.engine = create_engine(
            "sqlite://",
            creator=lambda: sqlite3.connect(path),
            json_serializer=lambda value: orjson.dumps(value).decode(),
        )
        self.connection = self.engine.connect()
        # A new private file: a crash loses only the file, which is then discarded.
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -262144"):
            self.connection.exec_driver_sql(f"PRAGMA {pragma}")
        self.connection.commit()
        self.transaction = self.connection.begin()
        for table in tables.metadata.sorted_tables:
            self.connection.execute(CreateTable(table))
        self.pending = {table: [] for table in tables.metadata.sorted_tables}

    def _queue(self, table, row):
        rows = self.pending[table]
        rows.append(row)
        if len(rows) >= BATCH:
            self._flush(table)

    def _flush(self, table):
        rows = self.pending[table]
        if rows:
            self.connection.execute(insert(table), rows)
            rows.clear()

    def add(self, resource, record):
        """Write one validated record, with the sort keys computed from it."""
        if resource == "productions":
            self._add_production(record)
            return
        row = {**record, "name_key": keys.name_key(record["name"])}
        if resource == "parties":
            row["party_series_id"] = row.pop("party_series")
            row["start_date_key"] = keys.date_key(record["start_date"])
            row["end_date_key"] = keys.date_key(record["end_date"])
        self._queue(tables.RECORD_TABLES[resource], row)

    def _add_production(self, record):
        production_id = record["id"]
        self._queue(
            tables.productions,
            {
                "id": production_id,
                "title": record["title"],
                "release_date": record["release_date"],
                "supertype": record["supertype"],
                "tags": record["tags"],
                "sortable_title": keys.sortable_title(record["title"]),
                "title_key": record["title"].lower(),
                "release_date_key": keys.date_key(record["release_date"]),
            },
        )
        for role, field in (
            ("author", "author_nicks"),
            ("affiliation", "author_affiliation_nicks"),
        ):
            for position, nick in enumerate(record[field]):
                self._queue(
                    tables.production_nicks,
                    {
                        "production_id": production_id,
                        "role": role,
                        "position": position,
                        "name": nick["name"],
                        "abbreviation": nick["abbreviation"],
                        "releaser_id": nick["releaser"]["id"],
                    },
                )
        for position, platform in enumerate(record["platforms"]):
            self._queue(
                tables.production_platforms,
                {
                    "production_id": production_id,
                    "position": position,
                    "platform_id": platform["id"],
                },
            )
        for position, production_type in enumerate(record["types"]):
            self._queue(
                tables.production_type_links,
                {
                    "production_id": production_id,
                    "position": position,
                    "production_type_id": production_type["id"],
                },
            )

    def finish(self, counts):
        for table in self.pending:
            self._flush(table)
        for resource in tables.RECORD_TABLES:
            self._rank(resource)
        for index in tables.INDEXES:
            index.create(self.connection)
        now = datetime.datetime.now(datetime.timezone.utc)
        self.connection.execute(
            insert(tables.catalogue_info),
            {"version": uuid.uuid4().hex, "loaded_at": now.strftime("%Y-%m-%dT%H:%M:%SZ")},
        )
        self.connection.execute(
            insert(tables.record_counts),
            [{"resource": name, "count": counts.get(name, 0)} for name in tables.RECORD_TABLES],
        )
        # No ANALYZE: without statistics SQLite plans every query as for a large table,
        # so plans do not change with the size of the catalogue.
        self.transaction.commit()

    def _rank(self, resource):
        """Fill every ``rank_<key>`` column: the row's position in that key's order."""
        table = tables.RECORD_TABLES[resource]
        sort_keys = ordering.KEYS[resource]
        positions = select(
            table.c.id,
            *(
                func.row_number()
                .over(order_by=ordering.rank_order(resource, name))
                .label(f"rank_{name}")
                for name in sort_keys
            ),
        ).subquery()
        self.connection.execute(
            update(table)
            .values({key.rank: positions.c[key.rank.name] for key in sort_keys.values()})
            .where(table.c.id == positions.c.id)
        )

    def close(self):
        self.connection.close()
        self.engine.dispose()
