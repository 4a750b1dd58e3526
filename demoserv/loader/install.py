"""The life cycle of the served catalogue file around a load: one load at a time, a new
file built beside the served one, checked and renamed over it, the previous file kept
for a rollback, and every operational failure told in one line naming the path.

File names beside the served file ``NAME``:

- ``.NAME.lock``: the load lock (``fcntl.flock``); held by a running load or rollback.
- ``.NAME.<hex>.loading``: a file being built; one left by a killed load is removed by
  the next load, which holds the lock, so it is never one that a running load writes.
- ``.NAME.<hex>.loading.download`` (and ``.scratch``, ``.staging``): an export being
  downloaded, and what a build keeps beside its file; removed with it.
- ``NAME.previous``: the catalogue served before the last load (a hard link).
- ``NAME.snapshot/``: the snapshots of the served and the previous file's records
  (``loader/snapshot.py``), written before the switch, the others removed after it.
"""

import errno
import fcntl
import os
import signal
import sqlite3
import stat
import threading
import uuid
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from ..store import facts
from . import snapshot
from .reporting import Warned, silent

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MIN_FREE = 1 << 20  # bytes: below this no catalogue can be built


class InstallError(Exception):
    """An operational failure, in one line naming the path and the cause."""

    exit_status = 1


class Interrupted(InstallError):
    """A signal stopped the load before the new catalogue was in place."""

    def __init__(self, signum, target):
        name = signal.Signals(signum).name
        super().__init__(f"{target}: load interrupted by {name}; the served catalogue is unchanged")
        self.exit_status = 128 + signum


def lock_path(target):
    return target.with_name(f".{target.name}.lock")


def previous_path(target):
    return target.with_name(f"{target.name}.previous")


def _scratch_path(target):
    return target.with_name(f".{target.name}.{uuid.uuid4().hex}.loading")


def describe(error, path):
    """One line naming the path and the cause of an OSError or an SQLite error."""
    if isinstance(error, DBAPIError):
        error = error.orig
    if isinstance(error, sqlite3.Error):
        text = str(error)
        if "full" in text:
            return f"{path.parent}: no space left on the device ({text})"
        return f"{path}: {text}"
    if isinstance(error, OSError):
        where = error.filename or path
        cause = error.strerror or str(error)
        if error.errno == errno.ENOSPC:
            where = Path(where).parent
        return f"{where}: {cause}"
    if isinstance(error, MemoryError):
        return f"{path}: out of memory"
    return f"{path}: {error}"


# Signals: before the switch a signal aborts the load; after it, it is only noted.


class _SignalState:
    def __init__(self):
        self.target = None
        self.switched = False
        self.aborting = False
        self.count = 0  # signals received while active


_signals = _SignalState()


def _on_signal(signum, frame):
    _signals.count += 1
    if _signals.switched or _signals.aborting:
        return  # after the switch or during the clean-up: ignored
    _signals.aborting = True  # further signals during the clean-up are only counted
    raise Interrupted(signum, _signals.target)


@contextmanager
def handling_signals(target):
    """For a command that loads or rolls back ``target``: SIGINT, SIGTERM and SIGHUP
    raise Interrupted before the catalogue is switched, and are ignored once it is
    switched, so that success is reported exactly when the new catalogue is in place."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {signum: signal.signal(signum, _on_signal) for signum in SIGNALS}
    _signals.__init__()
    _signals.target = target
    try:
        yield
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)
        _signals.__init__()


@contextmanager
def _switching():
    """Signals held back while the files are switched: none can land between the
    rename and the moment the switch is recorded."""
    held = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield
        _signals.switched = True
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)


# The lock, the build file and its clean-up.


@contextmanager
def _locked(target, wait, report):
    lock = lock_path(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as error:
        raise InstallError(describe(error, lock)) from None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not wait:
                raise InstallError(
                    f"{target}: another load is running (it holds {lock}); "
                    "wait for it to finish, or load with --wait"
                ) from None
            report(Warned(f"{target}: another load is running; waiting for it to finish"))
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def _leftover_files(target):
    return sorted(target.parent.glob(f".{target.name}.*.loading*"))


def leftovers(target):
    """The build files of interrupted loads beside ``target``: none while a load runs
    (they are then its own files)."""
    target = Path(target)
    try:
        descriptor = os.open(lock_path(target), os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return _leftover_files(target)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return []
    finally:
        os.close(descriptor)
    return _leftover_files(target)


def _remove_leftovers(target, report):
    """Build files of killed loads: no load is running, since this one holds the lock."""
    for leftover in _leftover_files(target):
        try:
            size = leftover.stat().st_size
            leftover.unlink()
            report(Warned(f"removed {leftover} ({size:,} bytes) left by an interrupted load"))
        except OSError as error:
            raise InstallError(describe(error, leftover)) from None


def _check_space(target):
    """Refuse early when the folder clearly cannot hold a new catalogue: less than half
    the size of the served one (or than MIN_FREE) is free."""
    try:
        status = os.statvfs(target.parent)
    except OSError as error:
        raise InstallError(describe(error, target.parent)) from None
    free = status.f_bavail * status.f_frsize
    try:
        served = target.stat().st_size
    except OSError:
        served = 0
    needed = max(served // 2, MIN_FREE)
    if free < needed:
        raise InstallError(
            f"{target.parent}: no space left on the device for a new catalogue "
            f"({free:,} bytes free, at least {needed:,} needed)"
        )


@contextmanager
def building(target, *, wait=False, report=silent):
    """Take the load lock beside ``target`` (if another load holds it: wait if ``wait``,
    else raise InstallError), remove the build files of killed loads, refuse early if
    the folder clearly has too little space, and yield a new, empty build path in
    ``target``'s folder. The build file is removed on leaving, whatever happens; any
    OSError or SQLite error from the block becomes an InstallError naming the path.
    What it does not stop for is reported to ``report`` (Warned)."""
    target = Path(target)
    with _locked(target, wait, report):
        _remove_leftovers(target, report)
        _check_space(target)
        build = _scratch_path(target)
        try:
            os.close(os.open(build, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
            yield build
        except (OSError, DBAPIError, sqlite3.Error, MemoryError) as error:
            raise InstallError(describe(error, build)) from None
        finally:
            for path in (build, build.with_name(build.name + "-journal")):
                try:
                    path.unlink(missing_ok=True)
                except OSError as error:
                    report(Warned(f"cannot remove {path}: {error.strerror}"))


# Switching files.


def _keep_time_of_same_records(build, loaded_at):
    """A new file of the records already served keeps their time (``Last-Modified``):
    reloading unchanged data changes no answer, not even a date."""
    connection = sqlite3.connect(build)
    try:
        with connection:
            connection.execute("UPDATE catalogue_info SET loaded_at = ?", (loaded_at,))
    finally:
        connection.close()


def _fsync(path, flags=os.O_RDONLY):
    descriptor = os.open(path, flags)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _take_owner_and_mode(build, target, report):
    """The owner and mode of the file replaced, or for a first file its folder's owner,
    read and write for it and the folder's read bits for group and others."""
    try:
        model = os.stat(target)
        mode = stat.S_IMODE(model.st_mode)
    except FileNotFoundError:
        model = os.stat(target.parent)
        mode = 0o600 | (stat.S_IMODE(model.st_mode) & 0o044)
    os.chmod(build, mode)
    current = os.stat(build)
    if (current.st_uid, current.st_gid) != (model.st_uid, model.st_gid):
        try:
            os.chown(build, model.st_uid, model.st_gid)
        except PermissionError:
            # Not root: keep our user, the group if we may, and warn.
            try:
                os.chown(build, -1, model.st_gid)
            except PermissionError:
                pass
            report(
                Warned(
                    f"{target}: new file owned by uid {current.st_uid}, the file it replaces "
                    f"by uid {model.st_uid}"
                )
            )


def _keep_previous(target):
    """``target.previous`` becomes a second name of the served file."""
    if not target.exists():
        return
    scratch = _scratch_path(target)
    os.link(target, scratch)
    os.replace(scratch, previous_path(target))


def refuse_to_empty(target, counts, *, allow_empty=False):
    """InstallError if a catalogue of ``counts`` would leave empty a resource that the
    catalogue served at ``target`` has (unless ``allow_empty``). Returns the served
    catalogue's counts ({} if there is none)."""
    before = facts.counts(target)
    emptied = [name for name, count in before.items() if count and not counts.get(name)]
    if emptied and not allow_empty:
        lost = ", ".join(f"{name} (served: {before[name]:,})" for name in emptied)
        raise InstallError(
            f"{target}: the new catalogue has no {lost}; nothing was replaced "
            "(load with --allow-empty to empty them on purpose)"
        )
    return before


def install(build_path, target, counts, *, allow_empty=False, snapshot_at=(), report=silent):
    """Put the finished file ``build_path`` in place as ``target``: refuse if it would
    leave empty a resource that the served catalogue has (unless ``allow_empty``);
    write its snapshot for the addresses ``snapshot_at`` (``store.snapshot.Address``)
    that its records lack; give it the owner and mode of the file it replaces; fsync
    it; keep the served file as ``target.previous``, unless it holds the same records (a
    reload of them keeps the catalogue before them for a rollback); rename; fsync the
    folder; remove the snapshots that neither file holds. Returns the served
    catalogue's counts before the switch ({} if there was none). An owner that cannot
    be kept and a failed fsync of the folder are reported to ``report`` (Warned)."""
    build_path, target = Path(build_path), Path(target)
    before = refuse_to_empty(target, counts, allow_empty=allow_empty)
    try:
        served, built = facts.version_and_time(target), facts.version_and_time(build_path)
        same_records = bool(served and built) and served.version == built.version
        if same_records and served.loaded_at != built.loaded_at:
            _keep_time_of_same_records(build_path, served.loaded_at)
        snapshot.write(build_path, target, snapshot_at, report)
        _take_owner_and_mode(build_path, target, report)
        _fsync(build_path)
        with _switching():
            if _signals.aborting:
                raise InstallError(f"{target}: interrupted; the served catalogue is unchanged")
            if not same_records:
                _keep_previous(target)
            os.replace(build_path, target)
    except OSError as error:
        raise InstallError(describe(error, target)) from None
    try:
        _fsync(target.parent)
    except OSError as error:
        report(Warned(f"{target}: the new catalogue is in place, but fsync failed: {error}"))
    _prune_snapshots(target, report)
    return before


def _prune_snapshots(target, report):
    """The snapshots of the served and the previous file kept, the others removed."""
    versions = {facts.version_and_time(path) for path in (target, previous_path(target))}
    snapshot.prune(target, {each.version for each in versions if each}, report)


def rollback(target, *, wait=False, snapshot_at=(), report=silent):
    """Switch atomically back to ``target.previous``, its snapshot first written for
    the addresses ``snapshot_at`` that its records lack; the served file becomes the
    previous one. Returns the counts of the catalogue now served. What it does not stop
    for is reported to ``report`` (Warned), as a load's is."""
    target = Path(target)
    previous = previous_path(target)
    with _locked(target, wait, report):
        _remove_leftovers(target, report)
        try:
            previous_stat = os.stat(previous)
        except FileNotFoundError:
            raise InstallError(f"{previous}: no previous catalogue to roll back to") from None
        except OSError as error:
            raise InstallError(describe(error, previous)) from None
        try:
            served_stat = os.stat(target)
        except FileNotFoundError:
            served_stat = None
        if served_stat is not None and os.path.samestat(previous_stat, served_stat):
            raise InstallError(f"{previous}: the previous catalogue is the one served")
        if not facts.counts(previous):
            raise InstallError(f"{previous}: not a usable catalogue file")
        scratch = _scratch_path(target)
        try:
            snapshot.write(previous, target, snapshot_at, report)
            with _switching():
                if served_stat is not None:
                    os.link(target, scratch)
                os.replace(previous, target)
                if served_stat is not None:
                    os.replace(scratch, previous)
        except (OSError, sqlite3.Error) as error:
            scratch.unlink(missing_ok=True)
            raise InstallError(describe(error, target)) from None
        try:
            _fsync(target.parent)
        except OSError as error:
            report(Warned(f"{target}: rolled back, but fsync failed: {error}"))
        _prune_snapshots(target, report)
        return facts.counts(target)
