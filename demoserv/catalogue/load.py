"""Loading a catalogue folder: validate every record, build a new database file beside
the served one, and rename it over the served one only when all of it is good.

A failed load raises CatalogueError(``file:line: field: what is wrong``) and leaves
the served file untouched; a reader sees the old catalogue or the new one, never a mix.
"""

import datetime
import os
import sqlite3
import uuid
from pathlib import Path

import orjson
from marshmallow import ValidationError
from sqlalchemy import create_engine, func, insert, select, update
from sqlalchemy.schema import CreateTable

from .. import ordering, tables
from . import keys
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


def load_catalogue(source, database, progress=None):
    """Load the catalogue folder ``source`` into the database file ``database``.

    Returns the number of records of each resource.
    """
    progress = progress or Progress()
    paths = catalogue_files(Path(source))
    target = Path(database)
    target.parent.mkdir(parents=True, exist_ok=True)
    building = target.with_name(f".{target.name}.{uuid.uuid4().hex}.loading")
    try:
        builder = _Builder(building)
        try:
            counts = _Loader(builder, paths, progress).run()
            progress.stage("ranking and indexing")
            builder.finish(counts)
        finally:
            builder.close()
        _fsync(building)
        os.replace(building, target)
        _fsync(target.parent)
    finally:
        building.unlink(missing_ok=True)
    return counts


def catalogue_files(source):
    """The catalogue files present in ``source``, by resource, in load order."""
    if not source.is_dir():
        raise CatalogueError(f"{source}: not a folder")
    paths = {name: source / f"{name}.jsonl" for name in FILES}
    paths = {name: path for name, path in paths.items() if path.is_file()}
    if not paths:
        expected = ", ".join(f"{name}.jsonl" for name in FILES)
        raise CatalogueError(f"{source}: no catalogue files (expected any of {expected})")
    return paths


def _fsync(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def read_records(path, schema, progress):
    """Yield (line number, validated record) for each record line of ``path``."""
    progress.file_started(path.name, path.stat().st_size)
    pending_size = pending_lines = 0
    with path.open("rb") as lines:
        for number, raw in enumerate(lines, 1):
            pending_size += len(raw)
            pending_lines += 1
            if pending_lines == PROGRESS_EVERY:
                progress.advanced(pending_size, pending_lines)
                pending_size = pending_lines = 0
            where = f"{path.name}:{number}"
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
            try:
                yield number, schema.load(data)
            except ValidationError as error:
                field, message = first_error(error.messages)
                raise CatalogueError(f"{where}: {field}: {message}") from None
    progress.advanced(pending_size, pending_lines)


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
