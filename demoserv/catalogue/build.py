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

BATCH = 5000  # rows per INSERT
DOC_BATCH = 1000  # records per read-model batch


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
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -262144"):
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
        ReadModels(self.connection).build()
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
                "version": self._content_version(),
                "loaded_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                "schema_version": tables.SCHEMA_VERSION,
                "features": sorted(features),
            },
        )
        # No ANALYZE: without statistics SQLite plans every query as for a large table,
        # so plans do not change with the size of the catalogue.
        self.transaction.commit()

    def _content_version(self):
        """A digest of every detail record: the same records give the same version,
        whichever machine or load built them."""
        digest = hashlib.sha256()
        for name in LOAD_ORDER:
            resource = BY_NAME[name]
            table = resource.details_table if resource.details_table is not None else resource.table
            digest.update(name.encode() + b"\0")
            for record_id, doc in self.connection.execute(
                select(table.c.id, table.c.doc).order_by(table.c.id)
            ):
                digest.update(b"%d\0%s\0" % (record_id, doc))
        return digest.hexdigest()[:32]

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


class ReadModels:
    """Builds every record's list and detail JSON, resource by resource, in an order
    where the list records a record nests are already built."""

    def __init__(self, connection):
        self.connection = connection

    def rows(self, statement, ids):
        """The rows (dicts) of ``statement`` for the owner ids ``ids``."""
        result = []
        ids = list(ids)
        for start in range(0, len(ids), BATCH):
            result += [
                dict(row)
                for row in self.connection.execute(statement, {"ids": ids[start : start + BATCH]})
                .mappings()
                .all()
            ]
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
            for record_id, doc in self.connection.execute(statement):
                found[record_id] = orjson.loads(doc)
        return found

    def build(self):
        token = links.use_style(links.MARKERS)
        try:
            for name in LOAD_ORDER:
                self._documents(BY_NAME[name], detail=False)
            for name in LOAD_ORDER:
                if BY_NAME[name].details_table is not None:
                    self._documents(BY_NAME[name], detail=True)
        finally:
            links.reset_style(token)

    def _documents(self, resource, detail):
        table = resource.table
        dump = compile_dumper(resource.detail_schema if detail else resource.schema)
        target = resource.details_table if detail else table
        last_id = 0
        while True:
            rows = [
                dict(row)
                for row in self.connection.execute(
                    select(table).where(table.c.id > last_id).order_by(table.c.id).limit(DOC_BATCH)
                ).mappings()
            ]
            if not rows:
                return
            last_id = rows[-1]["id"]
            resource.complete(self, rows)
            if detail:
                resource.complete_detail(self, rows)
                self.connection.execute(
                    insert(target),
                    [{"id": row["id"], "doc": orjson.dumps(dump(row))} for row in rows],
                )
            else:
                self.connection.execute(
                    SET_DOC[target.name],
                    [
                        {"record_id": row["id"], "record_doc": orjson.dumps(dump(row))}
                        for row in rows
                    ],
                )
