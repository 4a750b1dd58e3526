"""A catalogue file opened to be read, by the server and by its finder of listings
(``listings/finder.py``): read-only, and only while its path names the file version it
was opened for. A load never writes into a served file but renames a new one over it,
so a file version, named by its ``file_id``, never changes."""

import os

import orjson
from sqlalchemy import create_engine
from sqlalchemy.pool import QueuePool

from .values import connect_read_only

# SQLite's own page cache, in KiB, of each connection (one a server thread): the file is
# immutable and in the system's page cache already, so SQLite's default of 2 MiB a
# connection held up to 32 MiB of copies under demoserv serve's 16 threads.
CACHE_KIB = 256


def file_id(stat):
    """What tells one version of a catalogue file from another: a new file is a new inode."""
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns)


def named_file(path):
    """The file id ``path`` names now; None if it names none."""
    try:
        return file_id(os.stat(path))
    except OSError:
        return None


class FileReplaced(Exception):
    """The path named another file than the engine's when a connection was opened."""


def read_only_engine(path, file_id=None):
    """An engine whose connections can only read ``path``; with ``file_id``, only while
    the path names that file (FileReplaced otherwise)."""

    def connect():
        connection = connect_read_only(path, check_same_thread=False)
        if file_id is not None and named_file(path) != file_id:
            connection.close()
            raise FileReplaced(path)
        connection.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        return connection

    return create_engine(
        "sqlite://",
        creator=connect,
        poolclass=QueuePool,
        pool_size=16,  # one connection for each of demoserv-serve's threads
        json_deserializer=orjson.loads,
    )
