"""The served catalogue database: one read-only SQLite file, replaced whole by a load.

A load never writes into the served file: it builds a new file and renames it over the
old one. Each file is therefore immutable once it has a served name, and is opened
read-only with ``immutable=1`` (no locking). Before each request the path is checked
(one ``stat``); when it names a new file, a new engine is opened on it. A request keeps
one connection for all its queries, so each answer comes wholly from one catalogue, and
requests already running on the old file finish on it.
"""

import logging
import os
import sqlite3
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

import orjson
from flask import current_app, g
from sqlalchemy import create_engine, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.pool import QueuePool

from . import tables
from .errors import APIError

log = logging.getLogger(__name__)

# Ids of ordered or filtered listings kept per file, in all: 8 bytes each, so 24 MB.
DERIVED_BUDGET = 3_000_000


class CatalogueUnavailable(APIError):
    """The database file is missing or unreadable: the API answers 503."""

    def __init__(self, detail):
        super().__init__(503, detail)


@dataclass
class Catalogue:
    """One database file as opened for serving."""

    file_id: tuple
    engine: object
    version: str
    loaded_at: str
    counts: dict
    features: frozenset = frozenset()
    derived: OrderedDict = field(default_factory=OrderedDict)
    derived_size: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def listing(self, resource, ordering, conditions, connection):
        """The ids of a filtered listing, or of one in an order on several keys, in
        order: found once per file while among the latest found (the file cannot
        change while it is served, so neither can what is derived from it)."""
        id_column = resource.table.c.id
        order = ordering.clauses() if ordering.single_key is None else [ordering.by_rank()]
        query = select(id_column).where(*conditions.clauses).order_by(*order)
        return self.remember(
            (resource.name, ordering.cache_key, conditions.key),
            lambda: array("q", connection.execute(query).scalars()),
        )

    def remember(self, key, compute, budget=DERIVED_BUDGET):
        """``compute()`` (a sequence), kept while the lengths of the latest computed add
        up to at most ``budget`` (each counts at least 1, so empty ones count too)."""
        value = self.derived.get(key)
        if value is not None:
            return value
        with self.lock:  # one computation at a time: each may read a whole table
            value = self.derived.get(key)
            if value is None:
                value = self.derived[key] = compute()
                self.derived_size += max(len(value), 1)
                while self.derived_size > budget and len(self.derived) > 1:
                    self.derived_size -= max(len(self.derived.popitem(last=False)[1]), 1)
        return value


def _file_id(stat):
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def read_only_engine(path):
    """An engine whose connections can only read ``path``."""
    uri = f"file:{quote(str(path))}?mode=ro&immutable=1"

    def connect():
        return sqlite3.connect(uri, uri=True, check_same_thread=False)

    return create_engine(
        "sqlite://",
        creator=connect,
        poolclass=QueuePool,
        pool_size=8,
        json_deserializer=orjson.loads,
    )


class Database:
    """The catalogue file at ``path`` and the engine on its current version."""

    def __init__(self, path):
        self.path = Path(path)
        self._current = None
        self._lock = threading.Lock()

    def current(self):
        """The catalogue the path names now, opened once per file."""
        try:
            file_id = _file_id(os.stat(self.path))
        except OSError as error:
            log.error("cannot read catalogue %s: %s", self.path, error)
            raise CatalogueUnavailable(
                "The catalogue is not available: no catalogue has been loaded."
            ) from None
        current = self._current
        if current is not None and current.file_id == file_id:
            return current
        with self._lock:
            if self._current is None or self._current.file_id != file_id:
                self._open(file_id)
            return self._current

    def _open(self, file_id):
        engine = read_only_engine(self.path)
        try:
            with engine.connect() as connection:
                info = connection.execute(select(tables.catalogue_info)).mappings().one()
                counts = dict(connection.execute(select(tables.record_counts)).all())
        except (DBAPIError, LookupError, ValueError) as error:
            engine.dispose()
            log.error("cannot open catalogue %s: %s", self.path, error)
            raise CatalogueUnavailable(
                "The catalogue is not available: its database file cannot be read."
            ) from None
        if info["schema_version"] != tables.SCHEMA_VERSION:
            engine.dispose()
            log.error(
                "catalogue %s has schema version %s, this server reads %s: load it again",
                self.path,
                info["schema_version"],
                tables.SCHEMA_VERSION,
            )
            raise CatalogueUnavailable(
                "The catalogue is not available: its database file was built by another "
                "version of the service and must be loaded again."
            )
        previous, self._current = (
            self._current,
            Catalogue(
                file_id,
                engine,
                info["version"],
                info["loaded_at"],
                counts,
                frozenset(info["features"]),
            ),
        )
        if previous is not None:
            # Connections still checked out finish their request and are then closed.
            previous.engine.dispose()
        log.info("serving catalogue %s loaded at %s", info["version"], info["loaded_at"])

    def close(self):
        if self._current is not None:
            self._current.engine.dispose()
            self._current = None


def database_path(app):
    path = Path(app.config["DATABASE"])
    return path if path.is_absolute() else Path(app.instance_path) / path


def get_database():
    return current_app.extensions["demoserv.db"]


def get_catalogue():
    """The catalogue this request reads: fixed at its first use in the request."""
    if "catalogue" not in g:
        g.catalogue = get_database().current()
    return g.catalogue


def get_connection():
    """This request's connection to its catalogue."""
    if "db_connection" not in g:
        g.db_connection = get_catalogue().engine.connect()
    return g.db_connection


def close_connection(exception=None):
    """End of a request (or of an app context used without one)."""
    connection = g.pop("db_connection", None)
    if connection is not None:
        connection.close()
    g.pop("catalogue", None)


def init_app(app):
    app.extensions["demoserv.db"] = Database(database_path(app))
    # Per request as well as per app context: a test client may run many requests in
    # one app context, and each must read the catalogue current when it starts.
    app.teardown_request(close_connection)
    app.teardown_appcontext(close_connection)
