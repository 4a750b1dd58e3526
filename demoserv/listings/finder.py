"""The finder: a process of its own, one a server process, that finds never-seen
listings, so that finding one never holds the serving process's interpreter lock. It
reads the served file itself (files are immutable: a load renames a new one over the
path), its listing arrays each on first use (``columns.Columns``), and runs under
Linux's ``SCHED_IDLE`` policy, so that any thread of the machine that wakes up takes the
processor from it at once.

A request is the served file (its path and file id) and the listing's key (the
resource's name, ``Ordering.cache_key`` and ``Conditions.key``, plain values rebuilt
there with ``ordering.from_key`` and ``filters.from_key``); the answer is the listing's
ids, which the server receives as a ``memoryview`` of machine integers. ``start``
starts the process and ``wait`` waits for it (a server's start does both, so that its
first listing does not wait for the process's imports); ``find`` starts it if need be,
in every process anew (a worker forked from a parent that had one), and again when it
stopped.

Run as ``python -m demoserv.listings.finder DESCRIPTOR``, its end of a socket pair."""

import atexit
import collections
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import traceback
from multiprocessing.connection import Connection
from pathlib import Path

from ..api import filters, ordering
from ..api.error import APIError
from ..resources import BY_NAME
from ..store.reading import FileReplaced, read_only_engine

# numpy and the listing arrays (columns.py) are imported by the process's loop (serve),
# before it says it is ready: the server's end, in every server process, needs neither.

PACKAGE_ROOT = Path(__file__).resolve().parents[2]  # the folder that holds demoserv/
START_SECONDS = 60.0  # for the process's imports, on a machine busy with other work
FIND_SECONDS = 60.0  # for one listing (most take milliseconds) before the process is killed
FILES = 2  # files the process keeps open: the one served and the one before a load
READY = "ready"
# The process's environment besides the server's: no BLAS threads (numpy's sorts use none),
# and glibc's threshold for mapping allocations fixed at 128 KiB, so that a listing's
# temporary arrays are given back to the system once freed (as the server does:
# web/factory.give_back_large_blocks).
ENVIRONMENT = {
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
    "MALLOC_MMAP_THRESHOLD_": str(128 * 1024),
}

log = logging.getLogger(__name__)


class Replaced(APIError):
    """The file a request read was replaced before the finder opened it."""

    def __init__(self):
        super().__init__(
            503,
            "The catalogue was replaced while this listing was being found; try again.",
            {"Retry-After": "1"},
        )


class Failed(APIError):
    """The finder process stopped, or took too long, twice for one listing."""

    def __init__(self):
        super().__init__(
            503,
            "New listings cannot be found at the moment; try again in a second.",
            {"Retry-After": "1"},
        )


class Finder:
    """This process's finder process and its end of their socket pair, used by one
    thread at a time."""

    def __init__(self):
        self._process, self._connection, self._pid = None, None, None
        self._ready = False
        self._lock = threading.Lock()

    def start(self):
        """Start the process if it is not running, without waiting for it (``wait`` says
        why it could not)."""
        with self._lock:
            try:
                self._spawned()
            except RuntimeError:
                pass  # wait() tries again, and raises

    def wait(self):
        """Wait until the process has started (RuntimeError if it could not)."""
        with self._lock:
            self._started()

    def find(self, path, file_id, resource, order, conditions):
        """The ids of the listing of ``resource`` (its name) ``order``, ``conditions``
        (their keys) in the file ``path`` while it names ``file_id``: a memoryview of
        machine integers (len, slices, nbytes).
        Replaced if that file was replaced before the finder could open it; Failed if
        the process stopped or took too long, twice (each time a new one is started)."""
        request = (str(path), file_id, resource, order, conditions)
        with self._lock:
            for _ in range(2):
                connection = self._started()
                try:
                    connection.send(request)
                    if not connection.poll(FIND_SECONDS):
                        raise TimeoutError(f"no listing in {FIND_SECONDS:.0f} s")
                    answer = connection.recv()
                    if answer[0] == "ids":
                        kind, count = answer[1], answer[2]
                        ids = memoryview(bytearray(struct.calcsize(kind) * count)).cast(kind)
                        _read_into(connection.fileno(), ids)
                        return ids
                except (OSError, EOFError) as error:
                    log.error("the finder of listings stopped (%s); starting another", error)
                    self._stop()
                    continue
                if answer[0] == "replaced":
                    raise Replaced
                raise RuntimeError(f"the finder of listings failed:\n{answer[1]}")
            raise Failed

    def _started(self):
        """The connection to this process's finder, started if need be and ready."""
        connection = self._spawned()
        if not self._ready:
            try:
                if not connection.poll(START_SECONDS) or connection.recv() != READY:
                    raise TimeoutError(f"not ready in {START_SECONDS:.0f} s")
            except EOFError:
                self._stop()
                raise RuntimeError(
                    "the finder of listings stopped as it started (its error is in the log)"
                ) from None
            except OSError as error:
                self._stop()
                raise RuntimeError(f"the finder of listings did not start: {error}") from None
            self._ready = True
        return connection

    def _spawned(self):
        """The connection to this process's finder, started if need be."""
        if self._pid != os.getpid():  # none yet, or the one of the process forked from
            if self._connection is not None:
                self._connection.close()  # this process's copy of the parent's end only
            self._process, self._connection = None, None
            self._pid = os.getpid()
        if self._process is not None and self._process.poll() is not None:
            self._stop()
        if self._process is None:
            ours, theirs = socket.socketpair()
            # This very package first on its path, wherever the server imported it from
            # (a checkout, a folder gunicorn's --chdir left behind), then the server's.
            paths = [str(PACKAGE_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
            try:
                with theirs:
                    self._process = subprocess.Popen(
                        [sys.executable, "-m", __name__, str(theirs.fileno())],
                        pass_fds=[theirs.fileno()],
                        stdin=subprocess.DEVNULL,
                        env={**ENVIRONMENT, **os.environ, "PYTHONPATH": os.pathsep.join(paths)},
                    )
            except OSError as error:
                ours.close()
                raise RuntimeError(f"the finder of listings did not start: {error}") from None
            self._connection, self._ready = Connection(ours.detach()), False
        return self._connection

    def _stop(self):
        """Stop the process (if it still runs) and forget it."""
        if self._connection is not None:
            self._connection.close()
        if self._process is not None:
            self._process.kill()
            self._process.wait()
        self._process, self._connection, self._ready = None, None, False

    def stop(self):
        """Stop the process, if this process started one."""
        with self._lock:
            if self._pid == os.getpid():
                self._stop()


FINDER = Finder()  # this process's
atexit.register(FINDER.stop)


class _Files:
    """The finder's open files, the latest ``FILES``: each file's connection (held open,
    so that a replaced file is still read) and its resources' ``columns`` (the class
    columns.Columns, which the process's loop imports)."""

    def __init__(self, columns):
        self._columns = columns
        self._open = collections.OrderedDict()  # file id -> (engine, connection, {name: Columns})

    def columns(self, path, file_id, resource):
        opened = self._open.get(file_id)
        if opened is None:
            engine = read_only_engine(path, file_id)
            try:
                opened = (engine, engine.connect(), {})
            except FileReplaced:
                engine.dispose()
                raise
            self._open[file_id] = opened
            while len(self._open) > FILES:
                _, (old_engine, old_connection, _) = self._open.popitem(last=False)
                old_connection.close()
                old_engine.dispose()
        else:
            self._open.move_to_end(file_id)
        _, connection, columns = opened
        if resource.name not in columns:
            columns[resource.name] = self._columns(connection, resource)
        return columns[resource.name], connection


def _read_into(descriptor, array):
    """Fill ``array`` with the bytes that follow on ``descriptor``: straight into it, the
    interpreter's lock let go at each read, where a message of megabytes was copied
    twice while holding it."""
    view = memoryview(array).cast("B")
    while view:
        count = os.readv(descriptor, [view])
        if not count:
            raise EOFError("the finder of listings stopped while answering")
        view = view[count:]


def _write(descriptor, array):
    """Write ``array``'s bytes, whole, to ``descriptor`` (what ``_read_into`` reads)."""
    view = memoryview(array).cast("B")
    while view:
        view = view[os.write(descriptor, view) :]


def _idle():
    """This process under Linux's SCHED_IDLE policy: any other thread that wakes up
    takes the processor from it at once."""
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError) as error:  # not Linux: the server's own priority
        log.warning("new listings are found at the server's CPU priority: %s", error)


def serve(connection):
    """The finder's loop: a listing for each request on ``connection``, until the
    server's end is closed."""
    import numpy as np  # the process's alone: see the imports

    from .columns import Columns

    files = _Files(Columns)
    connection.send(READY)
    _idle()
    while True:
        try:
            path, file_id, name, order, conditions = connection.recv()
        except EOFError:
            return
        try:
            resource = BY_NAME[name]
            columns, reader = files.columns(path, file_id, resource)
            ids = columns.find(
                ordering.from_key(resource, order),
                filters.from_key(resource, conditions),
                reader,
            )
        except FileReplaced:
            connection.send(("replaced",))
        except Exception:  # said to the server, which logs it as its request's error
            connection.send(("error", traceback.format_exc()))
        else:
            ids = memoryview(np.ascontiguousarray(ids))
            connection.send(("ids", ids.format, len(ids)))
            _write(connection.fileno(), ids)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's ^C is the server's to act on
    serve(Connection(int(sys.argv[1])))
