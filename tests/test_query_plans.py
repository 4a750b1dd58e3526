"""No listing query scans a table: every statement a page runs is an index lookup.

Checked with EXPLAIN QUERY PLAN on every statement that walking every listing runs: in
every order, under every filter of every resource, with detail fields on a list, and
the detail records of every resource; and every statement the finder process runs to
find a filter's ids. An order on several keys, or a filter, finds its ids on its first
request from the listing columns stored at load (one row read) and, for a filter that
asks SQLite, an index; the statements of a releaser's productions (not paged) may sort
what they found.
"""

from urllib.parse import urlencode

from sqlalchemy import event

from demoserv.resources import RESOURCES
from demoserv.web.db import get_database

from . import oracle
from .conftest import walk

MULTI_KEY = [
    "productions/?ordering=supertype,-release_date_date",
    "parties/?ordering=-country_code,name",
]


def filtered_listings():
    """A path per filter of every resource, ordered by the default and by two keys."""
    for resource in RESOURCES:
        for kind in resource.filters:
            query = urlencode({kind.parameter: kind.example})
            keys = oracle.KEYS[resource.name]
            yield f"{resource.name}/?{query}"
            yield f"{resource.name}/?{query}&ordering=-{keys[0]},{keys[-1]}"


def catch_statements(engine):
    """Start catching the statements ``engine`` runs; returns a function that stops
    and returns them."""
    statements = []

    def catch(connection, cursor, statement, parameters, context, executemany):
        statements.append((statement, parameters))

    event.listen(engine, "before_cursor_execute", catch)

    def stop():
        event.remove(engine, "before_cursor_execute", catch)
        return statements

    return stop


def test_no_listing_query_scans_a_table(app, client):
    for path in MULTI_KEY:
        client.get(f"/api/v1/{path}")  # the one sort these orders cost
    engine = get_database().current().engine
    stop = catch_statements(engine)
    try:
        for resource, keys in oracle.KEYS.items():
            for key in keys:
                for sign in ("", "-"):
                    walk(client, f"/api/v1/{resource}/?ordering={sign}{key}")
            client.get(f"/api/v1/{resource}/1/")
        for path in MULTI_KEY:
            walk(client, f"/api/v1/{path}")
        for path in filtered_listings():
            walk(client, f"/api/v1/{path}")
        for resource in RESOURCES:  # detail records, with every kind of nested record
            for record in client.get(f"/api/v1/{resource.name}/").json["results"][:3]:
                assert client.get(record["url"]).status_code == 200
        walk(client, "/api/v1/productions/?fields=id,credits,download_links")
    finally:
        statements = stop()
    # A releaser's productions are not paged: the answer is all of them, sorted, so a
    # sort of what it found (never a scan) is its cost.
    stop = catch_statements(engine)
    try:
        for releaser in client.get("/api/v1/releasers/?ordering=-id").json["results"][:5]:
            for sub in ("productions", "member_productions"):
                assert client.get(f"{releaser['url']}{sub}/").status_code == 200
    finally:
        whole_answers = stop()
    assert len({statement for statement, _ in statements}) >= 25
    assert len({statement for statement, _ in whole_answers}) >= 3
    with engine.connect() as connection:
        for caught, sorts in ((statements, False), (whole_answers, True)):
            for statement, parameters in caught:
                plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
                details = [row[-1] for row in plan.all()]
                assert not any(
                    d.startswith("SCAN") or ("TEMP B-TREE" in d and not sorts) for d in details
                ), (statement, details)


def test_no_filter_finds_its_ids_by_a_scan(app):
    """A filter's ids are found in the finder process, whose statements the test above
    does not see: here each filter of every resource, alone and in two orders, is found
    as the finder finds it (``Columns.find`` on the served file), and every statement
    it runs is explained."""
    from demoserv.api import filters, ordering
    from demoserv.listings.columns import Columns

    engine = get_database().current().engine
    stop = catch_statements(engine)
    try:
        with engine.connect() as connection:
            for resource in RESOURCES:
                columns = Columns(connection, resource)
                keys = oracle.KEYS[resource.name]
                orders = [None, f"-{keys[0]},{keys[-1]}"]
                for kind in resource.filters:
                    value = kind.normalise([kind.example])
                    conditions = filters.from_key(resource, ((kind.parameter, value),))
                    for order in orders:
                        columns.find(ordering.parse(resource, order), conditions, connection)
    finally:
        statements = stop()
    explained = 0
    with engine.connect() as connection:
        for statement, parameters in statements:
            if "listing_columns" in statement:
                continue  # the arrays, read once each by their primary key
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
            details = [row[-1] for row in plan.all()]
            assert not any(d.startswith("SCAN") for d in details), (statement, details)
            explained += 1
    assert explained >= 10, explained


def test_pages_in_a_covered_order_read_only_the_rank_index(app, client):
    """Where a rank's index holds the records (tables.COVERED_RANKS), a page in that
    key's order reads that index alone, never the table."""
    from demoserv.store.tables import COVERED_RANKS

    engine = get_database().current().engine
    checked = 0
    for resource, ranks in COVERED_RANKS.items():
        for rank in ranks:
            key = rank.removeprefix("rank_")
            stop = catch_statements(engine)
            try:
                for sign in ("", "-"):
                    assert (
                        client.get(f"/api/v1/{resource}/?ordering={sign}{key}").status_code == 200
                    )
            finally:
                statements = stop()
            with engine.connect() as connection:
                for statement, parameters in statements:
                    plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters)
                    details = [row[-1] for row in plan.all()]
                    assert details == [
                        f"SEARCH {resource} USING COVERING INDEX {resource}_by_{rank} "
                        f"({rank}>? AND {rank}<?)"
                    ], (statement, details)
                    checked += 1
    assert checked >= 4
