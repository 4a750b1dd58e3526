"""Writing the served catalogue back as a catalogue folder, in the format it loads from."""

import os
from pathlib import Path

import orjson
from sqlalchemy import select

from .. import tables
from ..resources.productions import attach_relations
from .schemas import RECORD_SCHEMAS

BATCH = 1000
# File fields stored under another column name.
COLUMN_OF_FIELD = {"party_series": "party_series_id"}


def export_catalogue(connection, target):
    """Write every resource of the catalogue on ``connection`` to the folder ``target``,
    each file in id order. Returns the number of records of each resource."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    counts = {}
    for resource, schema in RECORD_SCHEMAS.items():
        path = target / f"{resource}.jsonl"
        partial = path.with_name(f".{path.name}.partial")
        count = 0
        with partial.open("wb") as out:
            for rows in _batches(connection, resource, schema):
                for row in rows:
                    out.write(orjson.dumps(schema.dump(row)) + b"\n")
                count += len(rows)
        os.replace(partial, path)
        counts[resource] = count
    return counts


def _batches(connection, resource, schema):
    """The rows of ``resource`` in id order, a batch at a time, shaped for ``schema``."""
    table = tables.RECORD_TABLES[resource]
    columns = [
        table.c[COLUMN_OF_FIELD.get(field, field)].label(field)
        for field in schema.fields
        if COLUMN_OF_FIELD.get(field, field) in table.c
    ]
    last_id = 0
    while True:
        query = select(*columns).where(table.c.id > last_id).order_by(table.c.id).limit(BATCH)
        rows = [dict(row) for row in connection.execute(query).mappings()]
        if not rows:
            return
        if resource == "productions":
            attach_relations(connection, rows)
        yield rows
        last_id = rows[-1]["id"]
