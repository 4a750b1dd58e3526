"""No listing query scans a table: every statement a page runs is an index lookup.

Checked with EXPLAIN QUERY PLAN on every statement that walking every listing, in
every order, runs. The one exception is the single sort that an order on several keys
costs on its first request (kept afterwards); it is warmed before statements are caught.
"""

from sqlalchemy import event

from demoserv.db import get_database

from . import oracle
from .conftest import walk

MULTI_KEY = [
    "productions/?ordering=supertype,-release_date_date",
    "parties/?ordering=-country_code,name",
]


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
    finally:
        statements = stop()
    assert len({statement for statement, _ in statements}) >= 20
    with engine.connect() as connection:
        for statement, parameters in statements:
            plan = connection.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", parameters).all()
            details = [row[-1] for row in plan]
            assert not any(d.startswith("SCAN") or "TEMP B-TREE" in d for d in details), (
                statement,
                details,
            )
