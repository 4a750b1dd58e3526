"""The read models: what is served for every record, in every format, field selection and
page-address field name, is the JSON that the marshmallow schemas build for it."""

import sqlite3

import orjson
import pytest
from marshmallow import Schema, fields
from sqlalchemy import select

from demoserv.loader import build
from demoserv.loader.build import ReadModels
from demoserv.loader.resources import LOADING
from demoserv.loader.sources import load_catalogue
from demoserv.resources import RESOURCES
from demoserv.store import addresses, templates
from demoserv.store.serialize import Built, compile_dumper
from demoserv.store.values import SERVICE_URL_FIELDS
from demoserv.web import address_style
from demoserv.web.db import get_database

from .conftest import SITE_URL, suite_app


def renamed(value, name):
    if isinstance(value, dict):
        return {
            (name if key == "service_url" else key): renamed(item, name)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [renamed(item, name) for item in value]
    return value


def schema_records(app, resource, fmt):
    """{id: (list record, detail record)} as the schemas dump them for a request."""
    with app.app_context():
        engine = get_database().current().engine
        with engine.connect() as connection:
            build = ReadModels(connection)
            rows = [dict(row) for row in connection.execute(select(resource.table)).mappings()]
            LOADING[resource.name].complete(build, rows)
            LOADING[resource.name].complete_detail(build, rows)
    suffix = fmt[1:] if fmt.startswith(".") else ""
    end = address_style.address_end(suffix, "" if suffix else fmt)
    style = templates.LinkStyle("http://localhost/api/v1/", end, SITE_URL)
    token = addresses.use_style(style)
    try:
        return {
            row["id"]: (resource.schema.dump(row), resource.detail_schema.dump(row)) for row in rows
        }
    finally:
        addresses.reset_style(token)


@pytest.fixture(scope="module")
def database_with_every_table(catalogue_dir, tmp_path_factory):
    """The test catalogue built with the tables that a served file has empty (those that
    only its built records show) filled, to build the expected records from."""
    path = tmp_path_factory.mktemp("full") / "catalogue.sqlite3"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(build, "SCRATCH_TABLES", ())
        load_catalogue(catalogue_dir, path)
    return path


def test_relations_only_built_records_show_are_not_in_the_served_file(
    loaded_database, database_with_every_table
):
    for path, empty in ((loaded_database, True), (database_with_every_table, False)):
        with sqlite3.connect(path) as connection:
            for table in build.SCRATCH_TABLES:
                (count,) = connection.execute(f"SELECT count(*) FROM {table.name}").fetchone()
                assert (count == 0) is empty, (path, table.name)
    assert not list(loaded_database.parent.glob("*.scratch"))


@pytest.fixture(scope="module")
def served_apps(loaded_database, database_with_every_table):
    """The module's apps, made once (the requests only read): the served file's, one for
    each name of the service URL field, and the full catalogue's (key None)."""
    apps = {
        name: suite_app(loaded_database, SITE_URL=SITE_URL, SERVICE_URL_FIELD=name)
        for name in SERVICE_URL_FIELDS
    }
    return {**apps, None: suite_app(database_with_every_table, SITE_URL=SITE_URL)}


@pytest.mark.parametrize("resource", RESOURCES, ids=lambda r: r.name)
@pytest.mark.parametrize("fmt", ["", "api", "json", ".json", ".api"])
@pytest.mark.parametrize("field_name", SERVICE_URL_FIELDS)
def test_served_records_are_the_schemas_records(served_apps, resource, fmt, field_name):
    """A format suffix on the path (``.json``) ends every address in place of the
    trailing slash; ``format=`` is carried as a query."""
    client = served_apps[field_name].test_client()
    expected = schema_records(served_apps[None], resource, fmt)
    assert len(expected) >= 8
    end = fmt if fmt.startswith(".") else "/"
    query = f"format={fmt}&" if fmt and end == "/" else ""
    for record_id, (listed, detail) in expected.items():
        listed, detail = renamed(listed, field_name), renamed(detail, field_name)
        served = client.get(f"/api/v1/{resource.name}/{record_id}{end}?{query}").json
        assert served == detail
        assert list(served) == list(detail)
        chosen = ["id", field_name, list(detail)[-1]]
        served = client.get(
            f"/api/v1/{resource.name}/{record_id}{end}?{query}fields={','.join(chosen)}"
        ).json
        assert served == {name: value for name, value in detail.items() if name in chosen}
    pages = client.get(f"/api/v1/{resource.name}{end}?{query}ordering=id&page=1").json
    for record in pages["results"]:
        assert record == renamed(expected[record["id"]][0], field_name)


def test_compiled_dumpers_equal_schema_dump(make_app, database_with_every_table):
    app = make_app(database_with_every_table)
    for resource in RESOURCES:
        with app.app_context():
            with get_database().current().engine.connect() as connection:
                build = ReadModels(connection)
                rows = [
                    dict(row)
                    for row in connection.execute(select(resource.table).limit(50)).mappings()
                ]
                LOADING[resource.name].complete(build, rows)
                LOADING[resource.name].complete_detail(build, rows)
        token = addresses.use_style(templates.MARKERS)
        try:
            for schema in (resource.schema, resource.detail_schema):
                dump = compile_dumper(schema)
                for row in rows:
                    # Nested records built before are nested as their JSON.
                    assert orjson.loads(orjson.dumps(dump(row))) == schema.dump(row)
                    assert list(dump(row)) == list(schema.dump(row))
        finally:
            addresses.reset_style(token)


def test_unknown_fields_are_refused_when_compiled():
    class Odd(Schema):
        when = fields.DateTime()

    with pytest.raises(TypeError, match="when"):
        compile_dumper(Odd())


class Inner(Schema):
    id = fields.Integer()
    name = fields.String()


class Other(Schema):
    id = fields.Integer()


class Outer(Schema):
    one = fields.Nested(Inner)
    many = fields.List(fields.Nested(Inner))
    other = fields.Nested(Other)


def test_built_records_are_nested_as_their_json_by_their_own_schema_only():
    # The JSON kept differs from what Inner would dump, to show which one is used.
    inner = Built({"id": 1, "name": "x"}, b'{"kept":true}', Inner)
    foreign = Built({"id": 2, "name": "y"}, b'{"kept":true}', Other)
    dumped = orjson.loads(
        orjson.dumps(
            compile_dumper(Outer())({"one": inner, "many": [inner, foreign], "other": inner})
        )
    )
    assert dumped == {
        "one": {"kept": True},
        "many": [{"kept": True}, {"id": 2, "name": "y"}],
        "other": {"id": 1},
    }


def test_stored_templates_keep_text_that_looks_like_their_keys():
    """Records are stored as %-templates: text holding %, a template key or the field
    name comes back as it was, and only the markers and the field's key change."""
    from demoserv.store.templates import LinkStyle, RecordCodec, resolver

    text = 'a 100% demo: %(A)b %%(N)b %s \\u0000A "service_url": %'
    with_markers = LinkStyle("\x00A", "\x00F", "\x00S")
    token = addresses.use_style(with_markers)
    try:
        record = {
            "url": addresses.api_url("productions", 7),
            "title": text,
            "service_url": addresses.site_url("/productions/7/"),
            "nested": [{"service_url": addresses.site_url("/parties/1/"), "name": text}],
        }
    finally:
        addresses.reset_style(token)
    built = orjson.dumps(record)
    codec = RecordCodec.trained([built] * 3, 1024)
    stored = codec.compress(built)
    assert codec.marked(stored) == built
    style = LinkStyle("http://h/api/v1/", "/?format=json", "https://site")
    resolved = resolver(style, "demozoo_url")(b"[" + codec.expand(stored) + b"]")
    assert orjson.loads(resolved) == [
        {
            "url": "http://h/api/v1/productions/7/?format=json",
            "title": text,
            "demozoo_url": "https://site/productions/7/",
            "nested": [{"demozoo_url": "https://site/parties/1/", "name": text}],
        }
    ]


def test_a_dictionary_is_its_samples_where_they_fit_in_it_else_trained():
    """Records that fit in the dictionary are it, whole (each then compresses to a few
    bytes, and nothing is trained); more are trained into a dictionary of its size."""
    from demoserv.store.templates import RecordCodec

    few = [orjson.dumps({"id": i, "name": f"Party {i}"}) for i in range(20)]
    codec = RecordCodec.trained(few, 1024)
    assert codec.dictionary == b"".join(few)
    assert all(codec.marked(codec.compress(doc)) == doc for doc in few)
    many = [orjson.dumps({"id": i, "name": f"Party {i}", "n": i * i}) for i in range(2000)]
    codec = RecordCodec.trained(many, 1024)
    assert len(codec.dictionary) == 1024 and codec.dictionary not in b"".join(many)
    assert all(codec.marked(codec.compress(doc)) == doc for doc in many[::97])
