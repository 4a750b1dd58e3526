"""Writing a new catalogue database file: rows in bulk, then ranks, indexes, and the read
models — every list and detail record's JSON, built once here with the resources'
marshmallow schemas (with address markers that each request resolves: ``store/addresses.py``),
so that serving a page is reading and joining stored documents.
"""

import datetime
import hashlib
import sqlite3
from pathlib import Path

import orjson
from sqlalchemy import JSON, Boolean, bindparam, create_engine, func, insert, select, update
from sqlalchemy.schema import CreateTable

from ..api import filters, ordering
from ..resources import BY_NAME, RESOURCES
from ..store import addresses, listing_arrays, tables
from ..store.fingerprint import schema_version
from ..store.serialize import Built, compile_dumper
from ..store.templates import MARKERS, RecordCodec
from ..store.values import DIGEST_DIGITS, TIME_FORMAT
from . import adhoc_answers, history
from .reporting import step
from .resources import LOAD_ORDER, LOADING

BATCH = 5000  # rows per INSERT
DOC_BATCH = 1000  # records per read-model batch
# Records per batch of details built in a later pass: those nest whole records of
# others (a party its productions), dozens each, all held while the batch is built.
LATER_BATCH = 200
CACHE = -65536  # KiB of page cache while writing (negative: KiB, as SQLite takes it)
LISTING_CACHE = -8192  # while the listing columns are built
SCRATCH_CACHE = -8192  # of the scratch file, read in order
# Relations that only the records built at load show: not served otherwise, so kept in
# a scratch file while building (they would be a sixth of the new file).
SCRATCH_TABLES = (tables.credits, tables.screenshots)
# Bytes of dictionary for list and detail records: zstd's largest default, which
# compresses records of every size about a tenth better than a third of it.
LIST_DICTIONARY = 110 * 1024
DETAIL_DICTIONARY = 110 * 1024


class Builder:
    """Writes rows into a new database file, then ranks, indexes and documents it."""

    def __init__(self, path):
        self.path = path
        self.engine = create_engine(
            "sqlite://",
            creator=lambda: sqlite3.connect(path),
            json_serializer=lambda value: orjson.dumps(value).decode(),
            json_deserializer=orjson.loads,
        )
        self.connection = self.engine.connect()
        # Tables read only while the records are built live in a scratch file beside
        # the new one (named after it, so that a killed load's is removed with it); the
        # new file has them empty.
        target = Path(path)
        self.scratch_path = target.with_name(f"{target.name}.scratch")
        self.connection.exec_driver_sql("ATTACH DATABASE ? AS scratch", (str(self.scratch_path),))
        # New private files: a crash loses only the files, which are then discarded.
        for pragma in ("journal_mode = OFF", "synchronous = OFF"):
            for schema in ("main", "scratch"):
                self.connection.exec_driver_sql(f"PRAGMA {schema}.{pragma}")
        self.connection.exec_driver_sql(f"PRAGMA main.cache_size = {CACHE}")
        self.connection.exec_driver_sql(f"PRAGMA scratch.cache_size = {SCRATCH_CACHE}")
        self.connection.commit()
        self.transaction = self.connection.begin()
        for table in tables.metadata.sorted_tables:
            if table in SCRATCH_TABLES:
                ddl = str(CreateTable(table).compile(dialect=self.engine.dialect))
                self.connection.exec_driver_sql(
                    ddl.replace("CREATE TABLE ", "CREATE TABLE scratch.", 1)
                )
            else:
                self.connection.execute(CreateTable(table))
        self.pending = {}

    def raw_connection(self):
        """The sqlite3 connection under the builder's, for work done in SQL alone."""
        self.flush()
        return self.connection.connection.driver_connection

    def queue(self, table, row):
        rows = self.pending.setdefault(table, [])
        rows.append(row)
        if len(rows) >= BATCH:
            self.flush(table)

    def flush(self, table=None):
        for each in [table] if table is not None else list(self.pending):
            rows = self.pending.get(each)
            if rows:
                self.connection.execute(insert(each), rows)
                rows.clear()

    def finish(self, counts, report):
        """Rank, index and document what was written, and label the file; its steps
        reported to ``report``."""
        self.flush()
        # Each production's best competition position (its placing filter), from the
        # placings written, whichever source gave them.
        self.connection.exec_driver_sql(
            "UPDATE main.productions SET best_placing = best.position FROM (SELECT "
            "production_id, min(position) AS position FROM main.placings "
            "GROUP BY production_id) AS best WHERE best.production_id = productions.id"
        )
        self._fill_tag_tables()
        with step(report, "ranking"):
            for name in LOAD_ORDER:
                self._rank(BY_NAME[name])
        # Indexes that hold records (tables.COVERED_RANKS) follow the records.
        covering = [i for i in tables.INDEXES if any(c.name == "doc" for c in i.columns)]
        with step(report, "indexing"):
            for index in tables.INDEXES:
                if index not in covering:
                    index.create(self.connection)
        with step(report, "building records"):
            read_models = ReadModels(self.connection)
            read_models.build()
        with step(report, "building the adhoc answers"):
            adhoc_answers.build_answers(self.connection, read_models.digest)
        for index in covering:
            index.create(self.connection)
        for table in SCRATCH_TABLES:  # empty, in the new file; main's from now on
            self.connection.execute(CreateTable(table))
        # Each of SQLite's sorts may take as much memory as the page cache: the listing
        # columns are ranked several ways at once.
        self.connection.exec_driver_sql(f"PRAGMA cache_size = {LISTING_CACHE}")
        for name in LOAD_ORDER:
            resource = BY_NAME[name]
            listing_arrays.store_columns(
                self.connection, resource, listing_arrays.build_columns(self.connection, resource)
            )
        self.connection.execute(
            insert(tables.record_counts),
            [{"resource": name, "count": counts.get(name, 0)} for name in tables.RECORD_TABLES],
        )
        now = datetime.datetime.now(datetime.timezone.utc)
        self.connection.execute(
            insert(tables.catalogue_info),
            {
                # A digest of every record: the same records give the same version,
                # whichever machine or load built them.
                "version": read_models.digest.hexdigest()[:DIGEST_DIGITS],
                "loaded_at": now.strftime(TIME_FORMAT),
                "schema_version": schema_version(RESOURCES),
                "features": sorted(self._features()),
            },
        )
        # No ANALYZE: without statistics SQLite plans every query as for a large table,
        # so plans do not change with the size of the catalogue.
        self.transaction.commit()

    def _fill_tag_tables(self):
        """Each record's tags, by tag, in the table of each tag filter (``Tagged.link``),
        from the tags column written, whichever source gave them."""
        for name in LOAD_ORDER:
            resource = BY_NAME[name]
            for item in resource.filters:
                if isinstance(item, filters.Tagged):
                    self.connection.exec_driver_sql(
                        f"INSERT OR IGNORE INTO main.{item.link.name} (tag, {item.owner}) "
                        f"SELECT tags.value, records.id FROM main.{resource.table.name} "
                        "AS records, json_each(records.tags) AS tags"
                    )

    def _features(self):
        """The optional data that filters need (``Filter.feature``) which the catalogue
        holds: a value in the filter's column of any record."""
        found = set()
        for name in LOAD_ORDER:
            resource = BY_NAME[name]
            for item in resource.filters:
                if item.feature and item.feature not in found:
                    if self.connection.exec_driver_sql(
                        f"SELECT 1 FROM main.{resource.table.name} "
                        f"WHERE {item.column} IS NOT NULL LIMIT 1"
                    ).first():
                        found.add(item.feature)
        return found

    def _rank(self, resource):
        """Fill every ``rank_<key>`` column: the row's position in that key's order."""
        table = resource.table
        positions = select(
            table.c.id,
            *(
                func.row_number()
                .over(order_by=ordering.rank_order(resource, name))
                .label(f"rank_{name}")
                for name in resource.sort_keys
            ),
        ).subquery()
        self.connection.execute(
            update(table)
            .values({key.rank: positions.c[key.rank.name] for key in resource.sort_keys.values()})
            .where(table.c.id == positions.c.id)
        )

    def close(self):
        self.connection.close()
        self.engine.dispose()
        self.scratch_path.unlink(missing_ok=True)


class Query:
    """A statement of the read-model build, run on the sqlite3 connection itself: its
    rows as dicts with SQLAlchemy's conversions of its columns (booleans, JSON), without
    SQLAlchemy's cost per execution and per row. An expanding ``ids`` parameter is sent
    as one JSON array, whatever its length."""

    def __init__(self, statement, dialect):
        compiled = statement.compile(dialect=dialect)
        self.sql = compiled.string.replace(
            "(__[POSTCOMPILE_ids])", "(SELECT value FROM json_each(?))"
        )
        if "POSTCOMPILE" in self.sql:
            raise ValueError(f"an expanding parameter other than ids: {self.sql}")
        self.names = compiled.positiontup or []
        self.defaults = compiled.params
        self.conversions = []
        for index, column in enumerate(statement.selected_columns):
            if isinstance(column.type, Boolean):
                self.conversions.append((index, _boolean))
            elif isinstance(column.type, JSON):
                self.conversions.append((index, _json))

    def rows(self, raw, **values):
        """The rows (dicts) for the parameters ``values`` (``ids``: a list of ids)."""
        values = {**self.defaults, **values}
        if "ids" in values:
            values["ids"] = orjson.dumps(values["ids"])
        cursor = raw.execute(self.sql, [values[name] for name in self.names])
        keys = [description[0] for description in cursor.description]
        rows = cursor.fetchall()
        if self.conversions:
            conversions = self.conversions
            for position, row in enumerate(rows):
                row = list(row)
                for index, convert in conversions:
                    value = row[index]
                    if value is not None:
                        row[index] = convert(value)
                rows[position] = row
        return [dict(zip(keys, row)) for row in rows]


def _boolean(value):
    return bool(value)


_json = orjson.loads
# Parsed list records kept per nested resource while building; past this many, the
# kept ones are dropped (the records a batch nests are then read again).
KEPT_RECORDS = 20_000


class ReadModels:
    """Builds every record's list and detail JSON, resource by resource, in an order
    where the list records a record nests are already built."""

    def __init__(self, connection, digest=None):
        self.connection = connection
        self.raw = connection.connection.driver_connection
        self.digest = digest if digest is not None else hashlib.sha256()
        self.codecs = {}  # (resource, kind) -> RecordCodec, once written
        self.queries = {}  # statement -> Query
        self.kept = {}  # resource -> {id: parsed list record}
        # Resources whose list records may be nested: all, in a built file; while
        # building, those built so far (see build()), for records of ``building``.
        self.built = frozenset(LOAD_ORDER)
        self.building = None

    def query(self, statement):
        found = self.queries.get(statement)
        if found is None:
            found = self.queries[statement] = Query(statement, self.connection.dialect)
        return found

    def rows(self, statement, ids):
        """The rows (dicts) of ``statement`` for the owner ids ``ids``."""
        return self.query(statement).rows(self.raw, ids=list(ids))

    def records(self, resource, ids):
        """{id: list record} of ``resource``'s records ``ids``, as built."""
        if resource not in self.built:
            raise RuntimeError(
                f"{self.building}: its records nest {resource} list records, which are not "
                f"built yet: name {resource!r} in the {self.building} declaration's detail_needs"
            )
        kept = self.kept.setdefault(resource, {})
        ids = [record_id for record_id in ids if record_id is not None]
        missing = [record_id for record_id in ids if record_id not in kept]
        if missing:
            if len(kept) + len(missing) > KEPT_RECORDS:
                kept.clear()
                missing = ids
            expand = self._codec(resource, "list").marked
            loads = orjson.loads
            table = BY_NAME[resource].table.name
            schema = type(BY_NAME[resource].schema)
            for record_id, doc in self.raw.execute(
                f"SELECT id, doc FROM {table} WHERE id IN (SELECT value FROM json_each(?))",
                (orjson.dumps(missing),),
            ):
                doc = expand(doc)
                kept[record_id] = Built(loads(doc), doc, schema)
        return {record_id: kept[record_id] for record_id in ids if record_id in kept}

    def _codec(self, resource, kind):
        """The codec of ``resource``'s ``kind`` records, once written."""
        key = (resource, kind)
        if key not in self.codecs:
            self.codecs[key] = RecordCodec(
                self.connection.execute(
                    select(tables.dictionaries.c.data).where(
                        tables.dictionaries.c.resource == resource,
                        tables.dictionaries.c.kind == kind,
                    )
                ).scalar_one()
            )
        return self.codecs[key]

    def build(self):
        """List records of every resource in load order, each resource's details in the
        same pass where what they nest is built by then, the others after."""
        token = addresses.use_style(MARKERS)
        try:
            later = []
            built = self.built = set()  # resources whose list records are all built
            for name in LOAD_ORDER:
                resource = BY_NAME[name]
                now = resource.details_table is not None and resource.detail_needs <= built
                self.building = name
                self._documents(LOADING[name], detail=now)
                built.add(name)
                if resource.details_table is not None and not now:
                    later.append(LOADING[name])
            for loading in later:
                self.building = loading.name
                self._documents(loading, detail=True, listed=False)
        finally:
            addresses.reset_style(token)
            self.kept.clear()

    def _documents(self, loading, detail, listed=True):
        resource = loading.resource
        table = resource.table
        list_dump = compile_dumper(resource.schema)
        detail_dump = compile_dumper(resource.detail_schema)
        lists = Compressor(LIST_DICTIONARY) if listed else None
        details = Compressor(DETAIL_DICTIONARY) if detail else None
        set_doc = f"UPDATE {table.name} SET doc = ? WHERE id = ?"
        if detail:
            add_detail = f"INSERT INTO {resource.details_table.name} (id, doc) VALUES (?, ?)"
        query = self.query(
            select(table)
            .where(table.c.id > bindparam("last"))
            .order_by(table.c.id)
            .limit(DOC_BATCH if listed else LATER_BATCH)
        )
        last_id = 0
        while True:
            rows = query.rows(self.raw, last=last_id)
            if not rows:
                break
            last_id = rows[-1]["id"]
            loading.complete(self, rows)
            if listed:
                docs = [(row["id"], orjson.dumps(list_dump(row))) for row in rows]
                self._digest(docs)
                if resource.details_table is None:
                    history.store_digests(self.raw, resource.name, docs)
                lists.learn(docs)
                compress = lists.compress
                self.raw.executemany(set_doc, [(compress(doc), key) for key, doc in docs])
            if detail:
                loading.complete_detail(self, rows)
                docs = [(row["id"], orjson.dumps(detail_dump(row))) for row in rows]
                self._digest(docs)
                history.store_digests(self.raw, resource.name, docs)
                details.learn(docs)
                compress = details.compress
                self.raw.executemany(add_detail, [(key, compress(doc)) for key, doc in docs])
        for kind, compressor in (("list", lists), ("detail", details)):
            if compressor is not None:
                codec = compressor.codec or RecordCodec(b"")
                self.codecs[(resource.name, kind)] = codec
                self.connection.execute(
                    insert(tables.dictionaries),
                    {"resource": resource.name, "kind": kind, "data": codec.dictionary},
                )

    def _digest(self, docs):
        update = self.digest.update
        for record_id, doc in docs:
            update(b"%d\0%s\0" % (record_id, doc))


class Compressor:
    """Compresses a resource's records (list or detail) with a dictionary trained on
    its first batch of them."""

    def __init__(self, size):
        self.size = size
        self.codec = None

    def learn(self, docs):
        if self.codec is None:
            self.codec = RecordCodec.trained([doc for _, doc in docs], self.size)

    def compress(self, doc):
        return self.codec.compress(doc)
