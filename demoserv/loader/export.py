"""Writing the served catalogue back as a catalogue folder, in the format it loads from,
derived from each resource's declaration: each record's detail fields as its record
schema reads them (``record_schema``), nested records that are records of their own
reduced to their ids, and each relation shown from two sides written once, by the side
that declares it (``storage.written_by_other_side``: a load derives the other side)."""

import os
from pathlib import Path

import orjson
from marshmallow import fields
from sqlalchemy import select

from ..store import tables
from ..store.templates import RecordCodec
from . import adhoc_facts, records
from .resources import LOAD_ORDER, LOADING, RELATIONS, storage

BATCH = 1000
# Each resource's fields that the other side of a relation writes.
OTHER_SIDE = {name: storage.written_by_other_side(RELATIONS, name) for name in LOAD_ORDER}


def _file_record(loading, record):
    """A detail record as its catalogue line: the fields its record schema reads, the
    sides of relations that the other side writes left out."""
    other_side = OTHER_SIDE[loading.name]
    return {
        name: _file_value(field, record[name])
        for name, field in loading.record_schema.fields.items()
        if name in record and name not in other_side
    }


def _file_value(field, value):
    """``value`` of a detail record as ``field`` of a record schema reads it: a record of
    its own as its id (or the summary its reference reads), nested records likewise."""
    if value is None:
        return None
    if isinstance(field, records.Reference):
        if field.summary is None:
            return value["id"]
        return _file_fields(field.summary.fields, value)
    if isinstance(field, fields.Nested):
        return _file_fields(field.schema.fields, value)
    if isinstance(field, fields.List):
        return [_file_value(field.inner, item) for item in value]
    return value


def _file_fields(schema_fields, value):
    return {
        name: _file_value(field, value[name])
        for name, field in schema_fields.items()
        if name in value
    }


def export_catalogue(connection, target):
    """Write every resource of the catalogue on ``connection`` to the folder ``target``,
    each file in id order. Returns the number of records of each resource."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name in LOAD_ORDER:
        loading = LOADING[name]
        path = target / f"{name}.jsonl"
        partial = path.with_name(f".{path.name}.partial")
        count = 0
        with partial.open("wb") as out:
            for record in _records(connection, loading):
                out.write(orjson.dumps(_file_record(loading, record)) + b"\n")
                count += 1
        os.replace(partial, path)
        counts[name] = count
    adhoc_facts.write_file(connection, target)
    return counts


def _records(connection, loading):
    """The detail records of a resource (``loading``: its load side) in id order, with
    the hidden values."""
    resource = loading.resource
    table = resource.table
    documents = resource.details_table if resource.details_table is not None else table
    # Values the API does not show (filters use them): read from the record's row.
    shown = {field.data_key or name for name, field in resource.detail_schema.fields.items()}
    hidden = [
        table.c[name]
        for name in loading.record_schema.fields
        if name in table.c and name not in shown
    ]
    codec = RecordCodec(
        connection.execute(
            select(tables.dictionaries.c.data).where(
                tables.dictionaries.c.resource == resource.name,
                tables.dictionaries.c.kind == ("list" if documents is table else "detail"),
            )
        ).scalar()
    )
    last_id = 0
    while True:
        query = (
            (
                select(documents.c.id, documents.c.doc, *hidden)
                .join(table, table.c.id == documents.c.id)
                .where(documents.c.id > last_id)
                .order_by(documents.c.id)
                .limit(BATCH)
            )
            if documents is not table
            else (
                select(table.c.id, table.c.doc, *hidden)
                .where(table.c.id > last_id)
                .order_by(table.c.id)
                .limit(BATCH)
            )
        )
        rows = connection.execute(query).all()
        if not rows:
            return
        for record_id, doc, *values in rows:
            record = orjson.loads(codec.marked(doc))
            for column, value in zip(hidden, values):
                if value is not None:
                    record[str(column.name)] = value
            yield record
        last_id = rows[-1][0]
