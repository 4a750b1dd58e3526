"""The OpenAPI document and the docs page."""

import json
import re
from urllib.parse import unquote

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from openapi_spec_validator import validate

from demoserv.api.error import APIError
from demoserv.resources import RESOURCES
from demoserv.store.values import MAX_ID

from . import catalogue_factory
from .openapi_check import SPEC, Invalid, check


def test_the_document_is_valid_openapi_3_1(client):
    document = client.get("/api/v1/openapi.json").json
    assert document["openapi"] == "3.1.0"
    assert document["servers"] == [{"url": "http://localhost"}]
    validate(document)


def _documented_form(rule):
    """A route's rule as the document writes its path: ``<converter:name>`` as ``{id}``
    (record ids) or ``{name}``."""
    return re.sub(
        r"<(?:[^:>]*:)?([a-z_]+)>",
        lambda match: "{id}" if match[1] == "record_id" else f"{{{match[1]}}}",
        rule,
    )


def test_every_route_has_an_operation_and_every_operation_a_route(app):
    """The site root and, under the API's and the upstream's extra prefixes and the
    snapshot's files, each route (but the forms with a format suffix, which the document
    describes as a parameter of the path without it) is a path of the document with the
    same methods, and each path of the document is a route."""
    routes = {}
    for rule in app.url_map.iter_rules():
        prefixes = ("/api/v1", "/api/adhoc/", "/snapshot/")
        documented = rule.rule == "/" or rule.rule.startswith(prefixes)
        if documented and "format_suffix" not in rule.rule:
            methods = {method.lower() for method in rule.methods} - {"head"}
            routes[_documented_form(rule.rule)] = methods
    documented = {
        path: set(operations) - {"parameters"}
        for path, operations in SPEC["paths"].items()
        if not path.endswith(".{suffix}")
    }
    assert routes == documented


def test_every_listing_documents_its_ordering_keys_and_filters():
    for declared in RESOURCES:
        resource, keys = declared.name, list(declared.keys)
        operation = SPEC["paths"][f"/api/v1/{resource}/"]["get"]
        parameters = {p["name"]: p for p in operation["parameters"]}
        assert all(key in parameters["ordering"]["description"] for key in keys)
        for item in declared.filters:
            assert parameters[item.parameter]["description"] == item.description
        assert {"page", "format", "fields"} <= set(parameters)
        assert f"/api/v1/{resource}/{{id}}/" in SPEC["paths"]
    assert "/api/v1/releasers/{id}/productions/" in SPEC["paths"]
    assert "/api/v1/releasers/{id}/member_productions/" in SPEC["paths"]


class Answer:
    def __init__(self, status, body):
        self.status_code, self._body, self.headers, self.data = status, body, {}, body

    def get_data(self):
        return self._body


@pytest.mark.parametrize(
    "path, status, body",
    [
        (
            "/api/v1/platforms/",
            200,
            b'{"count": 1, "next": null, "previous": null, "results": [{"id": "1"}]}',
        ),
        ("/api/v1/platforms/", 200, b'{"count": 1, "next": null, "results": []}'),
        ("/api/v1/productions/3/", 200, b'{"id": 3, "colour": "red"}'),
        ("/api/v1/productions/3/", 404, b'{"error": "Not found."}'),
    ],
)
def test_the_check_rejects_answers_the_document_does_not_allow(path, status, body):
    with pytest.raises(Invalid):
        check("GET", path, Answer(status, body))


def test_docs_page(client):
    response = client.get("/api/v1/docs/")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html")
    page = response.get_data(as_text=True)
    assert "../openapi.json" in page
    # Self-contained: nothing loaded from elsewhere.
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "<script src" not in page and "<link" not in page
    assert response.headers["Allow"] == "GET, HEAD, OPTIONS"
    assert "Accept" in response.headers["Vary"]
    # Cached and compressed like the rest of the API.
    assert response.headers["ETag"] and response.headers["Cache-Control"].startswith("public")
    packed = client.get("/api/v1/docs/", headers={"Accept-Encoding": "gzip"})
    assert packed.headers["Content-Encoding"] == "gzip"


def test_two_schemas_of_one_name_are_refused():
    # Component names are class names: a new resource's schema named like another
    # module's would silently share (and misdescribe) that component.
    from apispec import APISpec
    from apispec.ext.marshmallow import MarshmallowPlugin
    from marshmallow import Schema, fields

    from demoserv.resources import parties
    from demoserv.web.views.openapi import register

    spec = APISpec(title="t", version="1", openapi_version="3.1.0", plugins=[MarshmallowPlugin()])
    assert register(spec, parties.resource.detail_schema) == "PartyDetail"
    assert register(spec, parties.resource.detail_schema) == "PartyDetail"  # again: fine

    class CompetitionSchema(Schema):  # a nested component of the party detail
        shown = fields.Integer()

    with pytest.raises(ValueError, match="CompetitionSchema"):
        register(spec, CompetitionSchema())


def test_the_document_and_the_status_facts_are_built_once(
    make_app, catalogue_dir, tmp_path, monkeypatch
):
    """The OpenAPI document once per app, whatever the address asked; the status page's
    facts once per served file and previous file."""
    from demoserv.loader import status_facts
    from demoserv.loader.sources import load_catalogue
    from demoserv.web.views import openapi

    built = []
    for module, name in ((openapi, "build"), (status_facts, "status")):
        original = getattr(module, name)

        def counted(*args, original=original, name=name, **kwargs):
            built.append(name)
            return original(*args, **kwargs)

        monkeypatch.setattr(module, name, counted)
    database = tmp_path / "served.sqlite3"
    load_catalogue(catalogue_dir, database)
    client = make_app(database).test_client()
    for host in ("a.example", "b.example", "a.example"):
        for path in ("/api/v1/openapi.json", "/api/v1/status/"):
            assert client.get(path, headers={"Host": host}).status_code == 200
    assert built == ["build", "status"]
    first = client.get("/api/v1/status/").json
    other = catalogue_factory.build(seed=2, productions=30)
    load_catalogue(catalogue_factory.write(other, tmp_path / "other"), database)  # and a previous
    second = client.get("/api/v1/status/").json
    assert client.get("/api/v1/openapi.json").status_code == 200
    assert built == ["build", "status", "status"]
    assert second["previous"] is not None and second != first
    assert make_app(database).test_client().get("/api/v1/openapi.json").status_code == 200
    assert built == ["build", "status", "status", "build"]  # another app, its own


def _taken(item, value):
    """Whether the filter ``item`` takes ``value`` (the empty value is no filter)."""
    if value == "":
        return True
    try:
        item.normalise([value])
    except APIError:
        return False
    return True


def _value_schema(item):
    """The schema of one value of the filter (an array's item: each value alone)."""
    return item.schema["items"] if item.schema.get("type") == "array" else item.schema


# Values at the edges of what the filters take (ids, whole numbers, dates, date-times).
PROBES = [
    "", "0", "1", "007", "-1", "+1", " 1", "1.5", "x", "٣", str(MAX_ID), str(MAX_ID + 1),
    "0" * 18 + "1", "0" * 19 + "1", "1" * 19, "9" * 9, "9" * 10, "1,2", "1,,2", ",", ",1,",
    "1 ,2", "1993", "0000", "10000", "1993-02", "1993-13", "1993-02-29", "1992-02-29",
    "1900-02-29", "2000-02-29", "1993-04-31", "1993-4", "fi", "FI", "fin", "f1", "true",
    "True", "music", "production", "2020-01-01T10:00", "2020-01-01 10:00:00.5Z",
    "2020-01-01T10", "2020-01-01T24:00", "2020-01-01T10:00:00.1234567",
    "2020-01-01T10:00+01", "2020-01-01T10:00+0100", "2020-01-01T10:00-23:59:59.999999",
    "20200101", "2020-W01-1", "0001-01-01T00:30+01:00", "9999-12-31T23:59-00:01",
    "a" * 200, "a" * 201, "https://x.example/a b",
]  # fmt: skip
FILTERS = {
    (type(item).__name__, repr(_value_schema(item))): item
    for resource in RESOURCES
    for item in resource.filters
}


@pytest.mark.parametrize("item", FILTERS.values(), ids=[kind for kind, _ in FILTERS])
def test_each_filter_schema_admits_exactly_the_values_the_filter_takes(item):
    """The document's schema of a filter (read as ECMA-262 reads its pattern: ``$`` at
    the very end, so no value here ends in a line break) admits exactly what the server
    takes, probed at the edges and with values drawn from the pattern and at random."""
    valid = Draft202012Validator(_value_schema(item)).is_valid
    for value in PROBES:
        assert valid(value) == _taken(item, value), value
    schema = _value_schema(item)
    if "enum" in schema:
        drawn = st.sampled_from(schema["enum"])
    elif "pattern" in schema:
        drawn = st.from_regex(schema["pattern"], fullmatch=True)
    else:
        drawn = st.text(max_size=schema.get("maxLength", 40))
    text = st.text(max_size=40).filter(lambda value: not value.endswith("\n"))

    @given(drawn, text)
    @settings(max_examples=60, derandomize=True, database=None, deadline=None)
    def agree(from_pattern, other):
        assert _taken(item, from_pattern), from_pattern
        assert valid(other) == _taken(item, other), other

    agree()


@pytest.mark.parametrize(
    "query, valid",
    [
        ("callback=cb", True),
        ("callback=my.app_1$.cb", True),
        ("callback=", True),
        ("callback=" + "x" * 100, True),
        ("callback=" + "x" * 101, False),
        ("callback=a..b", False),
        ("callback=1a", False),
        ("callback=a%C3%A9", False),
        ("page=001", True),
        ("page=last", True),
        ("page=", True),
        ("page=0", False),
        ("page=00", False),
        ("page=" + "0" * 18 + "1", False),
        ("page=%2B1", False),
        ("ordering=-name,%20id", True),
        ("ordering=id,id", True),
        ("ordering=%C2%A0id", True),  # a space to str.strip, not to ECMA-262's \s
        ("ordering=%EF%BB%BFid", False),  # the other way round
        ("ordering=", False),
        ("ordering=name,,id", False),
        ("ordering=--id", False),
        ("ordering=title", False),
    ],
)
def test_rendering_page_and_ordering_schemas_admit_what_the_server_takes(client, query, valid):
    operation = SPEC["paths"]["/api/v1/platforms/"]["get"]
    schemas = {p["name"]: p["schema"] for p in operation["parameters"]}
    name, _, value = query.partition("=")
    assert Draft202012Validator(schemas[name]).is_valid(unquote(value)) == valid
    response = client.get(f"/api/v1/platforms/?{query}")
    assert (response.status_code == 200) == valid, response.json


def _parameters(document, path):
    return {p["name"] for p in document["paths"][path]["get"]["parameters"]}


def test_the_document_offers_only_the_filters_the_catalogue_can_apply(client, make_app, tmp_path):
    """A filter whose data the served catalogue does not hold (when records were added
    or updated, a releaser's country) is not offered; one it holds is."""
    from demoserv.loader.sources import load_catalogue

    needing = {"added_before", "added_since", "updated_before", "updated_since"}
    full = client.get("/api/v1/openapi.json").json
    assert needing | {"country_code"} <= _parameters(full, "/api/v1/releasers/")
    assert needing <= _parameters(full, "/api/v1/productions.{suffix}")
    assert "x-demoserv-feature" not in json.dumps(full)
    source = tmp_path / "only-platforms"
    source.mkdir()
    (source / "platforms.jsonl").write_text('{"id": 1, "name": "Amiga"}\n')
    load_catalogue(source, tmp_path / "db.sqlite3")
    bare = make_app(tmp_path / "db.sqlite3").test_client().get("/api/v1/openapi.json").json
    for path in ("/api/v1/releasers/", "/api/v1/productions.{suffix}"):
        assert not (needing | {"country_code"}) & _parameters(bare, path)
    assert "country_code" in _parameters(bare, "/api/v1/parties/")  # needs nothing
    assert "x-demoserv-feature" not in json.dumps(bare)
