"""The history of changes, kept at load: which records each load added, changed or
removed, carried from the served file into the new one, so that the changes feed
(``demoserv/web/views/changes.py``) answers from stored rows and never compares catalogues itself.

While the read models are built, each record's detail record (its list record, for a
resource without details) is digested as built (``store_digests``: 64 bits of BLAKE2b,
into ``record_digests``). After the build, ``record`` compares the new file's digests
with the served file's, resource by resource in id order (two joins on the tables' keys:
SQLite's page cache, not the catalogue's size, bounds the memory), and writes one row per
record whose digest differs, with its digest before and after (null where the record is
absent). The served file's loads and changes of the last ``keep_days`` days are copied
into the new file first; its last load is always kept, whatever its age.

The changes feed's answers are then built from the history (``feed``). A load whose
records are the served ones adds nothing to the history. The first load, or a load over a
file without digests (built by an earlier version), starts the history: its load is
recorded with no changes, as there is nothing to compare with. A built catalogue file
(``demoserv load built.sqlite3``) keeps the history it was built with.
"""

import datetime
import hashlib
import sqlite3
from pathlib import Path
from urllib.parse import quote

import orjson

from ..store import facts
from ..store.values import TIME_FORMAT, read_only_uri
from . import feed

KEEP_DAYS = 90  # the default of the CHANGES_KEPT_DAYS setting
CHANGES = ("added", "changed", "removed")


def digest(doc):
    """A record's 64-bit digest (a signed integer, as SQLite stores it)."""
    return int.from_bytes(hashlib.blake2b(doc, digest_size=8).digest(), "big", signed=True)


def store_digests(raw, resource, docs):
    """Keep the digest of each (id, detail record JSON) of ``docs``, in id order."""
    raw.executemany(
        "INSERT INTO main.record_digests (resource, id, digest) VALUES (?, ?, ?)",
        [(resource, record_id, digest(doc)) for record_id, doc in docs],
    )


def _has_history(connection):
    """Whether the attached served file holds a history (a damaged one holds none)."""
    try:
        names = {
            row[0]
            for row in connection.execute(
                "SELECT name FROM served.sqlite_master WHERE type = 'table'"
            )
        }
    except sqlite3.DatabaseError:
        return False
    return {"record_digests", "catalogue_loads", "catalogue_changes"} <= names


def record(build, target, keep_days=KEEP_DAYS):
    """Write into the new catalogue file ``build`` the history of ``target`` (the served
    file, if any) from the last ``keep_days`` days, and this load's changes against it."""
    now = datetime.datetime.now(datetime.timezone.utc)
    cutoff = (now - datetime.timedelta(days=keep_days)).strftime(TIME_FORMAT)
    connection = sqlite3.connect(f"file:{quote(str(build))}", uri=True)
    try:
        # A new private file, as while it was built (build.py): a crash discards it.
        connection.execute("PRAGMA journal_mode = OFF")
        connection.execute("PRAGMA synchronous = OFF")
        with connection:
            served = Path(target).exists()
            if served:
                connection.execute("ATTACH DATABASE ? AS served", (read_only_uri(target),))
                served = _has_history(connection)
            version, loaded_at = facts.read_version(connection)  # the new file's (main)
            if served:
                number = _copy_history(connection, cutoff) + 1
                _compare(connection, number)
                counts = _counts(connection, number)
                if counts:
                    _add_load(connection, number, version, loaded_at, counts)
            else:
                _add_load(connection, 1, version, loaded_at, {})
            feed.build(connection)
    finally:
        connection.close()


def _copy_history(connection, cutoff):
    """Copy the served file's loads since ``cutoff`` (and its last) and their changes.
    Returns the served file's last load number (0 if it has none)."""
    last = connection.execute("SELECT max(load_number) FROM served.catalogue_loads").fetchone()
    last = last[0] or 0
    connection.execute(
        "INSERT INTO main.catalogue_loads SELECT * FROM served.catalogue_loads "
        "WHERE loaded_at >= ? OR load_number = ?",
        (cutoff, last),
    )
    connection.execute(
        "INSERT INTO main.catalogue_changes SELECT * FROM served.catalogue_changes "
        "WHERE load_number IN (SELECT load_number FROM main.catalogue_loads)"
    )
    return last


def _compare(connection, number):
    """One row of load ``number`` per record added, changed or removed."""
    connection.execute(
        "INSERT INTO main.catalogue_changes "
        "(resource, id, load_number, digest_before, digest_after) "
        "SELECT new.resource, new.id, ?, old.digest, new.digest "
        "FROM main.record_digests AS new LEFT JOIN served.record_digests AS old "
        "ON old.resource = new.resource AND old.id = new.id "
        "WHERE old.digest IS NOT new.digest",
        (number,),
    )
    connection.execute(
        "INSERT INTO main.catalogue_changes "
        "(resource, id, load_number, digest_before, digest_after) "
        "SELECT old.resource, old.id, ?, old.digest, NULL FROM served.record_digests AS old "
        "WHERE NOT EXISTS (SELECT 1 FROM main.record_digests AS new "
        "WHERE new.resource = old.resource AND new.id = old.id)",
        (number,),
    )


def _counts(connection, number):
    counts = {}
    for resource, added, changed, removed in connection.execute(
        "SELECT resource, sum(digest_before IS NULL), "
        "sum(digest_before IS NOT NULL AND digest_after IS NOT NULL), "
        "sum(digest_after IS NULL) FROM main.catalogue_changes WHERE load_number = ? "
        "GROUP BY resource ORDER BY resource",
        (number,),
    ):
        counts[resource] = dict(zip(CHANGES, (added, changed, removed)))
    return counts


def _add_load(connection, number, version, loaded_at, counts):
    connection.execute(
        "INSERT INTO main.catalogue_loads (load_number, version, loaded_at, counts) "
        "VALUES (?, ?, ?, ?)",
        (number, version, loaded_at, orjson.dumps(counts).decode()),
    )
