"""The schema version of catalogue files: a digest of everything in the declarations
that shapes what a build writes — the tables, their columns and indexes, each resource's
ordering keys, filters (and the arrays and tables they read) and output schemas, and the
stored-record format. A build writes it into the file; the server and the prebuilt-file
check refuse a file whose version differs (503 "load the catalogue again"), so a change
to a declaration never meets a file built without it. Nothing needs bumping by hand."""

import dataclasses
import hashlib
import json

from marshmallow import fields
from sqlalchemy import Table
from sqlalchemy.engine.default import StrCompileDialect

from . import tables
from .templates import MARKERS, TEMPLATE_KEYS

LENGTH = 16  # hex digits kept: 64 bits tell builds apart
# What str(type) compiles with, made once: str() makes a dialect for every column, and
# each app computes the version on creation.
_DIALECT = StrCompileDialect()


def schema_version(resources):
    """The schema version of files built from the declarations ``resources``."""
    described = {
        "tables": [_table(table) for table in tables.metadata.sorted_tables],
        "indexes": sorted(
            (index.name, [column.name for column in index.columns]) for index in tables.INDEXES
        ),
        "resources": [_resource(resource) for resource in resources],
        "stored": [dataclasses.astuple(MARKERS), TEMPLATE_KEYS],
    }
    # Everything described is text, numbers, bytes (by repr) or lists: the same in every
    # process.
    text = json.dumps(described, sort_keys=True, default=repr)
    return hashlib.sha256(text.encode()).hexdigest()[:LENGTH]


def _table(table):
    return [
        table.name,
        [
            [column.name, column.type.compile(dialect=_DIALECT), column.primary_key]
            for column in table.columns
        ],
    ]


def _resource(resource):
    return {
        "name": resource.name,
        "keys": resource.keys,
        "filters": [_filter(item) for item in resource.filters],
        "schemas": [_schema(resource.schema), _schema(resource.detail_schema)],
    }


def _filter(item):
    """A filter's kind and settings (its help text aside), and whether it reads an array."""
    settings = {
        field.name: _value(getattr(item, field.name))
        for field in dataclasses.fields(item)
        if field.name != "description"
    }
    return [type(item).__name__, settings, item.stored_column is not None]


def _value(value):
    return value.name if isinstance(value, Table) else value


def _schema(schema):
    """The fields of an output schema, nested schemas' fields within."""
    described = []
    for name, field in schema.dump_fields.items():
        inner = field.inner if isinstance(field, fields.List) else field
        nested = _schema(inner.schema) if isinstance(inner, fields.Nested) else None
        described.append([field.data_key or name, type(field).__name__, nested])
    return described
