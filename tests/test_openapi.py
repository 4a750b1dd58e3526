"""The OpenAPI document and the docs page."""

import re

import pytest
from jsonschema import ValidationError
from openapi_spec_validator import validate

from demoserv.resources import RESOURCES

from . import catalogue_factory
from .openapi_check import SPEC, check


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
    with pytest.raises(ValidationError):
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
