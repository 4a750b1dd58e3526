"""The served catalogue database: one read-only SQLite file, replaced whole by a load.

A load never writes into the served file: it builds a new file and renames it over the
old one. Each file is therefore immutable once it has a served name, and is opened
read-only with ``immutable=1`` (no locking). Before each request the path is checked
(one ``stat``); when it names a new file, a new engine is opened on it. A request keeps
one connection for all its queries, so each answer comes wholly from one catalogue, and
requests already running on the old file finish on it. A connection is opened by path,
so each new one checks that the path still names its engine's file: one opened just
after a switch would read the new file under the old file's version and dictionaries.
"""

import logging
import os
import sqlite3
import threading
from dataclasses import dataclass, field
from pathlib import Path

from flask import current_app, g
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError

from ..listings import kept
from ..store import facts, reading, tables
from ..store.reading import FileReplaced, read_only_engine
from ..store.templates import RecordCodec
from ..store.values import facts_error
from .error_handlers import APIError

log = logging.getLogger(__name__)


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
    history: str | None = None  # a digest of the history of loads (loader/feed.py)
    path: Path | None = None  # the path it was opened at, which may since name another
    # (resource, "list" or "detail") -> the codec of those stored records
    codecs: dict = field(default_factory=dict)

    def expander(self, resource, kind="list"):
        """A function from a stored record to its JSON (loader/build.py)."""
        return self.codecs[(resource, kind)].expand

    def listing(self, resource, ordering, conditions):
        """The ids of a filtered listing, or of one in an order on several keys, in
        order (listings/kept.py)."""
        return kept.ids(self.path, self.file_id, resource, ordering, conditions)


UNAVAILABLE = "The catalogue is not available: "
REPLACED = "it was replaced again and again while being opened; try again."
# Each attempt follows a switch that happened within one file's opening: a few suffice.
OPEN_ATTEMPTS = 3


class Database:
    """The catalogue file at ``path`` and the engine on its current version; a file of
    another ``schema_version`` than the declarations' is refused.

    A file that cannot be served is reported in the log once per file version (or once
    while the file is missing), not per request; clients get a 503 naming no path.
    """

    def __init__(self, path, schema_version):
        self.path = Path(path)
        self.schema_version = schema_version
        self._current = None
        self._failure = None  # (file id or error kind, detail) of the last unusable file
        self._lock = threading.Lock()
        self._expected = tables.expected_columns()

    def current(self):
        """The catalogue the path names now, opened once per file."""
        for _ in range(OPEN_ATTEMPTS):
            try:
                return self._current_file()
            except FileReplaced:
                continue  # switched while it was opened: the path names a newer file
        raise CatalogueUnavailable(UNAVAILABLE + REPLACED)

    def _current_file(self):
        try:
            file_id = reading.file_id(os.stat(self.path))
        except FileNotFoundError:
            self._fail(
                "missing",
                f"{self.path}: the catalogue file is missing",
                "the catalogue file is missing.",
            )
        except OSError as error:
            self._fail(
                ("stat", error.errno),
                f"{self.path}: {error.strerror}",
                "the catalogue file cannot be read.",
            )
        current = self._current
        if current is not None and current.file_id == file_id:
            return current
        failure = self._failure
        if failure is not None and failure[0] == file_id:
            raise CatalogueUnavailable(failure[1])
        with self._lock:
            if self._current is None or self._current.file_id != file_id:
                self._open(file_id)
            return self._current

    def _fail(self, key, logged, detail):
        """Answer 503 with ``detail``; log ``logged`` if this failure is new."""
        detail = UNAVAILABLE + detail
        if self._failure is None or self._failure[0] != key:
            self._failure = (key, detail)
            log.error("cannot serve the catalogue: %s", logged)
        raise CatalogueUnavailable(detail) from None

    def _open(self, file_id):
        engine = read_only_engine(self.path, file_id)
        try:
            with engine.connect() as connection:
                mismatch = tables.schema_mismatch(connection, self._expected)
                if mismatch is None:
                    # The file's facts as every reader reads them (store/facts.py), in
                    # this one connection.
                    driver = driver_connection(connection)
                    info = facts.read_info(driver)
                    counts = facts.read_counts(driver)
                    codecs = {
                        (resource, kind): RecordCodec(data)
                        for resource, kind, data in connection.execute(select(tables.dictionaries))
                    }
                    if info is not None and info.schema_version != self.schema_version:
                        mismatch = (
                            f"schema version {info.schema_version}, "
                            f"this server reads {self.schema_version}"
                        )
        except FileReplaced:
            engine.dispose()
            raise
        except (DBAPIError, sqlite3.Error, LookupError, ValueError) as error:
            engine.dispose()
            cause = getattr(error, "orig", None) or error
            self._fail(
                file_id,
                f"{self.path}: {str(cause).splitlines()[0]}",
                "its database file cannot be read.",
            )
        if mismatch is not None:
            engine.dispose()
            self._fail(
                file_id,
                f"{self.path}: not a catalogue of this version of the service ({mismatch})",
                "its database file was not built by this version of the service; "
                "load the catalogue again.",
            )
        # What reaches every answer's headers, in the forms a build writes: a file put in
        # place without a load's check (by hand, a rollback) is refused, not answered 500.
        if info is None:
            damaged = "catalogue_info: not one row"
        else:
            damaged = facts_error(info.version, info.loaded_at, info.history)
        if damaged:
            engine.dispose()
            self._fail(
                file_id,
                f"{self.path}: damaged catalogue facts ({damaged})",
                "its database file cannot be read.",
            )
        self._failure = None
        previous, self._current = (
            self._current,
            Catalogue(
                file_id,
                engine,
                info.version,
                info.loaded_at,
                counts,
                info.features,
                info.history,
                path=self.path,
                codecs=codecs,
            ),
        )
        if previous is not None:
            # Connections still checked out finish their request and are then closed.
            previous.engine.dispose()
        log.info("serving catalogue %s loaded at %s", info.version, info.loaded_at)

    def describe(self):
        """What is served, in a few words, for the start-up line."""
        try:
            return f"catalogue version {self.current().version}"
        except CatalogueUnavailable as error:
            return f"no catalogue ({error.detail})"

    def close(self):
        if self._current is not None:
            self._current.engine.dispose()
            self._current = None


DEFAULT_DATABASE = "demoserv.sqlite3"  # in the instance folder, when no database is named


def resolve_database(named, instance_path):
    """The one rule for where the database is, whether named by ``--database``,
    ``DEMOSERV_DATABASE`` or ``DATABASE`` in ``instance/config.py``: a relative path is
    taken from the current folder; with none named, ``demoserv.sqlite3`` in the
    instance folder."""
    if named is None or named == "":
        return Path(instance_path) / DEFAULT_DATABASE
    return Path(os.path.abspath(os.path.expanduser(str(named))))


def database_path(app):
    """The database file, absolute (``create_app`` resolved it once)."""
    return Path(app.config["DATABASE"])


def get_database(app=None):
    return (app or current_app).extensions["demoserv.web.db"]


def get_catalogue():
    """The catalogue this request reads: fixed at its first use in the request, with the
    request's connection to it, opened at once so that both are of one file."""
    if "catalogue" not in g:
        database = get_database()
        for _ in range(OPEN_ATTEMPTS):
            catalogue = database.current()
            try:
                g.db_connection = catalogue.engine.connect()
            except FileReplaced:
                continue  # a load switched files since: the next current() names it
            g.catalogue = catalogue
            return catalogue
        raise CatalogueUnavailable(UNAVAILABLE + REPLACED)
    return g.catalogue


def get_connection():
    """This request's connection to its catalogue."""
    get_catalogue()
    return g.db_connection


def driver_connection(connection):
    """The sqlite3 connection under an engine's ``connection``: what store/facts.py's
    readers ask."""
    return connection.connection.driver_connection


def close_connection(exception=None):
    """End of a request (or of an app context used without one)."""
    connection = g.pop("db_connection", None)
    if connection is not None:
        connection.close()
    g.pop("catalogue", None)


def init_app(app, schema_version):
    """Serve the catalogue file of ``app``'s configuration, if its schema version is
    ``schema_version`` (the registry's)."""
    app.extensions["demoserv.web.db"] = Database(database_path(app), schema_version)
    # Per request (pipeline) as well as per app context (a CLI command, a test).
    app.teardown_appcontext(close_connection)
