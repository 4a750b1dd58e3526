"""Every registered resource is everywhere a resource must be: the API root, the
blueprints, the OpenAPI document, the loader and the exporter all derive from the
registry, and this test fails when one of them leaves a resource out."""

import pytest
from sqlalchemy import func, select

from demoserv.loader.build import SCRATCH_TABLES
from demoserv.loader.export import export_catalogue
from demoserv.loader.files import ADHOC_FILE
from demoserv.loader.resources import FROM_UPSTREAM, LOAD_ORDER, LOADING
from demoserv.resources import BY_NAME, NAMES, RESOURCES
from demoserv.web.db import read_only_engine
from demoserv.web.views.openapi import build
from demoserv.web.views.table import ENDPOINTS

from . import oracle


def test_every_resource_is_in_the_root_and_served(client):
    names = [resource.name for resource in RESOURCES]
    assert list(client.get("/api/v1/").json) == names
    for name in names:
        assert client.get(f"/api/v1/{name}/").status_code == 200
        assert client.options(f"/api/v1/{name}/").json["ordering"] == list(BY_NAME[name].keys)


def test_every_resource_is_documented():
    paths = build(ENDPOINTS)["paths"]
    for resource in RESOURCES:
        assert f"/api/v1/{resource.name}/" in paths
        assert f"/api/v1/{resource.name}/{{id}}/" in paths


def test_every_resource_is_loaded_and_exported(loaded_database, tmp_path):
    """Every resource has its load module and its file, in the load and in the export."""
    assert sorted(LOAD_ORDER) == sorted(NAMES) == sorted(LOADING)
    for name in LOAD_ORDER:
        assert LOADING[name].resource is BY_NAME[name]
        assert LOADING[name].record_schema is not None
    engine = read_only_engine(loaded_database)
    with engine.connect() as connection:
        counts = export_catalogue(connection, tmp_path)
    engine.dispose()
    assert sorted(counts) == sorted(LOAD_ORDER)
    assert sorted(path.name for path in tmp_path.iterdir()) == sorted(
        [*(f"{name}.jsonl" for name in LOAD_ORDER), ADHOC_FILE]
    )


def test_every_resource_has_its_table_docs_and_test_data(catalogue):
    """The places a new resource must be added by hand, beside its module and the
    registry: its table, the API table (docs/api.md), the oracle and the test catalogue.
    (Its seed file is optional: a folder without one holds none of its records.)"""
    from pathlib import Path

    from demoserv.store import tables

    root = Path(__file__).resolve().parent.parent
    readme = (root / "docs" / "api.md").read_text(encoding="utf-8")
    for resource in RESOURCES:
        name = resource.name
        assert tables.RECORD_TABLES[name] is resource.table, name
        assert f"`/api/v1/{name}/`" in readme, name
        assert name in oracle.KEYS, name
        assert catalogue[name], name


def test_every_resource_and_every_nested_list_is_loaded(loaded_database, catalogue):
    """The loader writes every resource's rows, and the items of every nested list it
    declares (a releaser's nicks also gain the nicks its productions use)."""
    engine = read_only_engine(loaded_database)
    with engine.connect() as connection:
        for resource in RESOURCES:
            records = catalogue[resource.name]
            given = {record["id"] for record in records}
            rows = {row[0] for row in connection.execute(resource.table.select())}
            assert given <= rows, resource.name
            for nested in LOADING[resource.name].nested_lists:
                if nested.table in SCRATCH_TABLES:  # only in the built records, not served
                    continue
                items = sum(len(record.get(nested.field) or ()) for record in records)
                stored = connection.execute(select(func.count()).select_from(nested.table)).scalar()
                assert stored >= items, (resource.name, nested.field)
    engine.dispose()


def test_every_nested_list_is_shown_and_told_apart_from_those_sharing_its_table():
    """The build reads each nested list back into the records that show it (the list
    record's or only the detail's), and lists that share a table by their constants."""
    for name, loading in LOADING.items():
        by_table = {}
        for nested in loading.nested_lists:
            assert nested.field in loading.resource.detail_schema.fields, (name, nested.field)
            by_table.setdefault(nested.table, []).append(nested.constant)
        for table, constants in by_table.items():
            if len(constants) > 1:
                assert all(constants) and len(set(map(repr, constants))) == len(constants), (
                    name,
                    table.name,
                )


def test_every_list_a_record_gives_is_served(client, catalogue):
    """Each list field of each resource's catalogue records, given non-empty, is served
    non-empty in the record's detail: a list that the loader leaves out (not declared
    as a nested list, nor taken by a relation) fails here."""
    checked = 0
    for resource in RESOURCES:
        shown = {field.data_key or name for name, field in resource.detail_schema.fields.items()}
        for name in LOADING[resource.name].record_schema.fields:
            if name not in shown:
                continue
            record = next(
                (r for r in catalogue[resource.name] if isinstance(r.get(name), list) and r[name]),
                None,
            )
            if record is None:
                continue
            detail = client.get(f"/api/v1/{resource.name}/{record['id']}/").json
            assert detail[name], (resource.name, name, record["id"])
            checked += 1
    assert checked >= 15


def test_a_detail_record_nesting_records_not_built_yet_names_detail_needs(
    catalogue_dir, tmp_path, monkeypatch
):
    """A resource whose details nest another resource's list records and does not say
    so in detail_needs fails the build with a message that names the declaration."""
    from demoserv.loader.sources import load_catalogue

    monkeypatch.setattr(BY_NAME["bbses"], "detail_needs", frozenset({"releasers"}))
    with pytest.raises(RuntimeError, match=r"^bbses: its records nest productions .*detail_needs"):
        load_catalogue(catalogue_dir, tmp_path / "catalogue.sqlite3")


def test_every_ordering_key_has_its_sort_and_rank_columns():
    """A resource's ordering keys need their sort column and a rank_<key> column in its
    table (store/tables.py), which the build fills and indexes."""
    for resource in RESOURCES:
        for key, column in resource.keys.items():
            assert column in resource.table.c, (resource.name, key)
            assert f"rank_{key}" in resource.table.c, (resource.name, key)


def test_every_relation_names_registered_resources_and_their_fields():
    """Each relation shown from both sides is declared once, between registered
    resources, on fields their record schemas read; the exporter leaves out exactly
    the sides a load derives."""
    from demoserv.loader.export import OTHER_SIDE
    from demoserv.loader.resources import RELATIONS, storage

    declared = [relation for loading in LOADING.values() for relation in loading.relations]
    assert sorted(map(id, declared)) == sorted(map(id, RELATIONS))
    derived = {name: set() for name in BY_NAME}
    for relation in RELATIONS:
        if isinstance(relation, storage.Grouping):
            sides = [(relation.resource, [relation.field]), (relation.group, [relation.listed])]
            derived[relation.group].add(relation.listed)
        else:
            sides = [
                (side.resource, [field for field, _ in side.fields]) for side in relation.sides
            ]
            if not relation.right.exported:  # an export writes that side too
                derived[relation.right.resource].update(sides[1][1])
            for side in relation.sides:
                assert side.column in relation.table.c and side.position in relation.table.c
        for name, names in sides:
            assert name in BY_NAME, name
            for field in names:
                assert field in LOADING[name].record_schema.fields, (name, field)
    assert {name: set(fields) for name, fields in OTHER_SIDE.items()} == derived
    # A production's placings are the upstream's rows' order: an export writes them.
    assert derived["productions"] == {"release_parties", "invitation_parties"}


def test_every_part_of_the_upstream_import_fills_its_own_resource():
    """A load module's part of the upstream import fills its own table from the export.
    (A resource the upstream has and whose part is missing differs from the upstream's
    answers: tests/test_upstream.py.)"""
    for name in FROM_UPSTREAM:
        fills = LOADING[name].upstream.fills
        assert LOADING[name].table in [fill.table for fill in fills], name
