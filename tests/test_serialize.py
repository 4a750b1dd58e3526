"""The compiled dumpers give exactly what the marshmallow schemas give."""

import pytest
from marshmallow import Schema, fields

from demoserv.db import get_catalogue, get_connection
from demoserv.filters import Conditions
from demoserv.ordering import parse
from demoserv.resources import RESOURCES
from demoserv.serialize import compile_dumper


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.name)
@pytest.mark.parametrize("fmt", ["", "api"])
def test_compiled_equals_schema_dump_on_every_record(app, resource, fmt):
    with app.test_request_context(f"/api/v1/{resource.name}/?format={fmt}"):
        app.preprocess_request()
        connection = get_connection()
        _, rows = resource.fetch_listing(
            connection, get_catalogue(), parse(resource.name, "id"), Conditions((), ())
        )
        assert len(rows) >= 8
        for schema in {resource.schema, resource.detail_schema or resource.schema}:
            dump = compile_dumper(schema)
            for row in rows:
                if schema is not resource.schema:
                    row = resource.fetch_one(connection, row["id"])
                assert dump(row) == schema.dump(row)
                assert list(dump(row)) == list(schema.dump(row))


def test_unknown_fields_are_refused_when_compiled():
    class Odd(Schema):
        when = fields.DateTime()

    with pytest.raises(TypeError, match="when"):
        compile_dumper(Odd())
