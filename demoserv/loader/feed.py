"""The changes feed's answers, built at load from the history (``history.py``), so that
a request for ``/api/v1/changes/`` (``demoserv/web/views/changes.py``) reads a page's rows and
never groups or sorts the history.

Every record changed after the oldest load kept, ordered by the last load that changed
it, then resource and id (``feed_records``; in each resource's order too), is the feed
since the oldest load; the feed since a later load k is the part of that order whose
last load is after k (``feed_spans``: where it starts, and its count), less the records
that are at k as they are served (added then removed, changed back). What the feed says
of a record since k is told by its first change after k, compared with the record as
served (``feed_changes``: one value a change row). The records left out since each k
are few; each is kept with the number of entries before it (``feed_skips``), so that a
page's first record is found with one lookup, and a page is a range of ``feed_records``.
The rest is linear in the history, and ``feed_skips`` grows with the loads kept times
the records left out: never the feed since each load, whole.
"""

import hashlib

from ..store.tables import FEED_ALL
from ..store.values import DIGEST_DIGITS


def build(connection):
    """Write the feed's tables into the new catalogue file on ``connection`` (sqlite3,
    in a transaction), from its history and its records' digests."""
    _changes(connection)
    _records(connection)
    _spans(connection)
    _skips(connection)
    _history_digest(connection)


def _changes(connection):
    """Each change row's value for the feed: its digest before against the record's
    digest as served (null where the record is absent)."""
    connection.execute(
        "INSERT INTO main.feed_changes (resource, id, load_number, change) "
        "SELECT change.resource, change.id, change.load_number, "
        "CASE WHEN change.digest_before IS served.digest THEN NULL "
        "WHEN change.digest_before IS NULL THEN 'added' "
        "WHEN served.digest IS NULL THEN 'removed' ELSE 'changed' END "
        "FROM main.catalogue_changes AS change LEFT JOIN main.record_digests AS served "
        "ON served.resource = change.resource AND served.id = change.id"
    )


def _records(connection):
    """Each record changed after the oldest load kept, numbered in the feed's order: of
    all resources (scope FEED_ALL), and of its own resource."""
    connection.execute(
        "INSERT INTO main.feed_records (scope, position, resource, id, last_load) "
        "WITH changed AS ("
        " SELECT resource, id, max(load_number) AS last_load FROM main.catalogue_changes"
        " WHERE load_number > (SELECT min(load_number) FROM main.catalogue_loads)"
        " GROUP BY resource, id) "
        "SELECT ?, row_number() OVER (ORDER BY last_load, resource, id) - 1, "
        "resource, id, last_load FROM changed "
        "UNION ALL "
        "SELECT resource, row_number() OVER (PARTITION BY resource ORDER BY last_load, id) - 1, "
        "resource, id, last_load FROM changed",
        (FEED_ALL,),
    )


def _spans(connection):
    """Since each load and in each scope: the position of the first record changed after
    it, and how many are (the records left out are taken off by ``_skips``)."""
    connection.execute(
        "INSERT INTO main.feed_spans (since_load, scope, start, count) "
        "WITH lasts AS (SELECT scope, last_load, count(*) AS records"
        " FROM main.feed_records GROUP BY scope, last_load) "
        "SELECT since.load_number, lasts.scope, "
        "sum(CASE WHEN lasts.last_load <= since.load_number THEN records ELSE 0 END), "
        "sum(CASE WHEN lasts.last_load > since.load_number THEN records ELSE 0 END) "
        "FROM main.catalogue_loads AS since, lasts "
        "GROUP BY since.load_number, lasts.scope "
        "HAVING max(lasts.last_load) > since.load_number"
    )


def _skips(connection):
    """The records that the feed since each load leaves out, in each scope: those whose
    first change after it has no value (``_changes``). A change row tells the loads from
    the record's previous change (or the first) up to its own."""
    connection.execute(
        "INSERT INTO main.feed_skips (since_load, scope, entries_before, skipped) "
        "WITH changes AS ("
        " SELECT resource, id, load_number, change,"
        " lag(load_number, 1, 0) OVER (PARTITION BY resource, id ORDER BY load_number)"
        " AS previous FROM main.feed_changes), "
        "left_out AS MATERIALIZED ("
        " SELECT since.load_number AS since_load, changes.resource, changes.id"
        " FROM changes JOIN main.catalogue_loads AS since"
        " ON since.load_number >= changes.previous AND since.load_number < changes.load_number"
        " WHERE changes.change IS NULL), "
        "placed AS ("
        " SELECT left_out.since_load, record.scope, record.position - feed.start AS from_start,"
        " row_number() OVER (PARTITION BY left_out.since_load, record.scope"
        " ORDER BY record.position) AS skipped"
        " FROM left_out JOIN main.feed_records AS record"
        " ON record.resource = left_out.resource AND record.id = left_out.id"
        " JOIN main.feed_spans AS feed"
        " ON feed.since_load = left_out.since_load AND feed.scope = record.scope) "
        "SELECT since_load, scope, from_start - (skipped - 1), skipped FROM placed"
    )
    connection.execute(
        "UPDATE main.feed_spans SET count = count - (SELECT count(*) FROM main.feed_skips "
        "WHERE feed_skips.since_load = feed_spans.since_load "
        "AND feed_skips.scope = feed_spans.scope)"
    )


def _history_digest(connection):
    """A digest of the loads the history holds: files of one version but of other
    histories answer the feed differently, so its validators differ."""
    loads = connection.execute(
        "SELECT load_number, version, loaded_at, counts FROM main.catalogue_loads "
        "ORDER BY load_number"
    ).fetchall()
    text = "\n".join("\t".join(map(str, load)) for load in loads)
    digest = hashlib.blake2b(text.encode(), digest_size=DIGEST_DIGITS // 2).hexdigest()
    connection.execute("UPDATE main.catalogue_info SET history = ?", (digest,))
