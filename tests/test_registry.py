"""Every registered resource is everywhere a resource must be: the API root, the
blueprints, the OpenAPI document, the loader and the exporter all derive from the
registry, and this test fails when one of them leaves a resource out."""

from demoserv.catalogue.export import export_catalogue
from demoserv.db import read_only_engine
from demoserv.openapi import build
from demoserv.resources import BY_NAME, LOAD_ORDER, RESOURCES


def test_every_resource_is_in_the_root_and_served(client):
    names = [resource.name for resource in RESOURCES]
    assert list(client.get("/api/v1/").json) == names
    for name in names:
        assert client.get(f"/api/v1/{name}/").status_code == 200
        assert client.options(f"/api/v1/{name}/").json["ordering"] == list(BY_NAME[name].keys)


def test_every_resource_is_documented():
    paths = build()["paths"]
    for resource in RESOURCES:
        assert f"/api/v1/{resource.name}/" in paths
        assert f"/api/v1/{resource.name}/{{id}}/" in paths


def test_every_resource_is_loaded_and_exported(loaded_database, tmp_path):
    assert sorted(LOAD_ORDER) == sorted(BY_NAME)
    for name in LOAD_ORDER:
        assert BY_NAME[name].record_schema is not None
    engine = read_only_engine(loaded_database)
    with engine.connect() as connection:
        counts = export_catalogue(connection, tmp_path)
    engine.dispose()
    assert sorted(counts) == sorted(BY_NAME)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        f"{name}.jsonl" for name in BY_NAME
    )
