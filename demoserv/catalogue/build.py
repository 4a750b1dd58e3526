"""Writing a new catalogue database file: rows in bulk, then ranks, indexes, and the read
models — every list and detail record's JSON, built once here with the resources'
marshmallow schemas (with link markers that each request resolves: ``links.py``), so
that serving a page is reading and joining stored documents.
"""

import datetime
import hashlib
import sqlite3

import orjson
from sqlalchemy import bindparam, create_engine, func, insert, select, update
from sqlalchemy.schema import CreateTable

from .. import links, listing, ordering, tables
from ..resources import BY_NAME, LOAD_ORDER
from ..serialize import compile_dumper
from ..shared import RecordCodec

BATCH = 5000  # rows per INSERT
DOC_BATCH = 1000  # records per read-model batch
# Bytes of dictionary for list and detail records.
LIST_DICTIONARY = 16 * 1024
DETAIL_DICTIONARY = 32 * 1024


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
        # A new private file: a crash loses only the file, which is then discarded.
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -65536"):
            self.connection.exec_driver_sql(f"PRAGMA {pragma}")
        self.connection.commit()
        self.transaction = self.connection.begin()
        for table in tables.metadata.sorted_tables:
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

    def finish(self, counts, features, progress):
        """Rank, index and document what was written, and label the file."""
        self.flush()
        progress.stage("ranking")
        for name in LOAD_ORDER:
            self._rank(BY_NAME[name])
        progress.stage("indexing")
        for index in tables.INDEXES:
            index.create(self.connection)
        progress.stage("building records")
        read_models = ReadModels(self.connection)
        read_models.build()
        for name in LOAD_ORDER:
            resource = BY_NAME[name]
            listing.store_columns(
                self.connection, resource, listing.build_columns(self.connection, resource)
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
                "version": read_models.digest.hexdigest()[:32],
                "loaded_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "schema_version": tables.SCHEMA_VERSION,
                "features": sorted(features),
            },
        )
        # No ANALYZE: without statistics SQLite plans every query as for a large table,
        # so plans do not change with the size of the catalogue.
        self.transaction.commit()

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


SET_DOC = {
    table.name: update(table)
    .where(table.c.id == bindparam("record_id"))
    .values(doc=bindparam("record_doc"))
    for table in tables.RECORD_TABLES.values()
}


def dict_rows(result):
    """The rows of ``result`` as dicts (without SQLAlchemy's per-row key lookups)."""
    keys = list(result.keys())
    return [dict(zip(keys, row)) for row in result.fetchall()]


class ReadModels:
    """Builds every record's list and detail JSON, resource by resource, in an order
    where the list records a record nests are already built."""

    def __init__(self, connection, digest=None):
        self.connection = connection
        self.digest = digest if digest is not None else hashlib.sha256()
        self.codecs = {}  # (resource, kind) -> RecordCodec, once written

    def rows(self, statement, ids):
        """The rows (dicts) of ``statement`` for the owner ids ``ids``."""
        result = []
        ids = list(ids)
        for start in range(0, len(ids), BATCH):
            result += dict_rows(
                self.connection.execute(statement, {"ids": ids[start : start + BATCH]})
            )
        return result

    def records(self, resource, ids):
        """{id: list record} of ``resource``'s records ``ids``, as built."""
        table = BY_NAME[resource].table
        ids = [record_id for record_id in ids if record_id is not None]
        found = {}
        for start in range(0, len(ids), BATCH):
            statement = select(table.c.id, table.c.doc).where(
                table.c.id.in_(ids[start : start + BATCH])
            )
            expand = self._codec(resource, "list").expand
            for record_id, doc in self.connection.execute(statement):
                found[record_id] = orjson.loads(expand(doc))
        return found

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
        token = links.use_style(links.MARKERS)
        try:
            later = []
            built = set()
            for name in LOAD_ORDER:
                resource = BY_NAME[name]
                now = resource.details_table is not None and resource.detail_needs <= built
                self._documents(resource, detail=now)
                built.add(name)
                if resource.details_table is not None and not now:
                    later.append(resource)
            for resource in later:
                self._documents(resource, detail=True, listed=False)
        finally:
            links.reset_style(token)

    def _documents(self, resource, detail, listed=True):
        table = resource.table
        list_dump = compile_dumper(resource.schema)
        detail_dump = compile_dumper(resource.detail_schema)
        lists = Compressor(LIST_DICTIONARY) if listed else None
        details = Compressor(DETAIL_DICTIONARY) if detail else None
        last_id = 0
        query = select(table).where(table.c.id > bindparam("last")).order_by(table.c.id)
        query = query.limit(DOC_BATCH)
        while True:
            rows = dict_rows(self.connection.execute(query, {"last": last_id}))
            if not rows:
                break
            last_id = rows[-1]["id"]
            resource.complete(self, rows)
            if listed:
                docs = [(row["id"], orjson.dumps(list_dump(row))) for row in rows]
                self._digest(docs)
                lists.learn(docs)
                self.connection.execute(
                    SET_DOC[table.name],
                    [
                        {"record_id": record_id, "record_doc": lists.compress(doc)}
                        for record_id, doc in docs
                    ],
                )
            if detail:
                resource.complete_detail(self, rows)
                docs = [(row["id"], orjson.dumps(detail_dump(row))) for row in rows]
                self._digest(docs)
                details.learn(docs)
                self.connection.execute(
                    insert(resource.details_table),
                    [{"id": record_id, "doc": details.compress(doc)} for record_id, doc in docs],
                )
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
