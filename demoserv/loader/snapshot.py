"""The snapshot written at load (``store/snapshot.py`` says where and how): for each
address it is served at, every resource's detail records resolved to that address,
in id order, one per line, gzip-compressed, and a manifest of the files' records,
bytes and SHA-256.

A catalogue file is read in one read-only connection, resource by resource in id order,
a batch of stored records at a time: the batch's templates are resolved for each
address with one ``%`` (as the server resolves a page) and handed to a thread per
address that compresses, digests and writes them (zlib and hashlib let go of the
interpreter meanwhile), so memory stays a few batches whatever the catalogue's size.
Each address's files are written in a folder of their own under a temporary name and
renamed once complete; an address whose folder exists for the version is not written
again. Called by ``install`` before it switches files, under the load lock.
"""

import contextlib
import hashlib
import os
import queue
import shutil
import threading
import uuid
import zlib

import orjson

from ..resources import RESOURCES
from ..store import facts, snapshot
from ..store.templates import RecordCodec, escape_line_separators, resolver
from ..store.values import connect_read_only
from .reporting import Warned, silent, step

# zlib's level: level 6 (gzip's default) makes files a quarter smaller than level 1 for
# twice the time; the time is the load's, the size every client's download.
LEVEL = 6
ROWS = 100  # stored records read at once
BATCH_BYTES = 1 << 20  # bytes of templates resolved at once, at least (but for the last)
QUEUED = 4  # batches waiting for an address's thread at most
LOADING = ".loading"  # the end of a folder being written


def write(catalogue, target, addresses, report=silent):
    """Write beside ``target`` the snapshot of the catalogue file ``catalogue`` (a new
    build, or ``target`` itself) for each of ``addresses`` (``store.snapshot.Address``)
    whose files its version lacks. Returns the addresses written. OSError and SQLite's
    errors are the caller's to report (``install`` names the path)."""
    version = facts.version_and_time(catalogue)
    if version is None:
        return []
    missing = [
        address
        for address in dict.fromkeys(addresses)
        if snapshot.read_manifest(target, version.version, address.key) is None
    ]
    if not missing:
        return []
    with step(report, "writing the snapshot"):
        connection = connect_read_only(catalogue)
        try:
            _write(connection, target, version.version, missing)
        finally:
            connection.close()
    return missing


def _write(connection, target, version, addresses):
    parent = snapshot.folder(target) / version
    parent.mkdir(parents=True, exist_ok=True)
    writing = {
        address: parent / f".{address.key}.{uuid.uuid4().hex}{LOADING}" for address in addresses
    }
    try:
        for folder in writing.values():
            folder.mkdir()
        codecs = {
            (resource, kind): RecordCodec(data)
            for resource, kind, data in connection.execute(
                "SELECT resource, kind, data FROM dictionaries"
            )
        }
        manifests = {address: {} for address in addresses}
        for resource in RESOURCES:
            details = resource.details_table
            table, kind = (resource.table, "list") if details is None else (details, "detail")
            files = {}
            try:
                for address in addresses:
                    path = writing[address] / snapshot.file_name(resource.name)
                    files[address] = Compressed(path)
                count = _write_records(
                    connection.execute(f"SELECT doc FROM {table.name} ORDER BY id"),
                    codecs[(resource.name, kind)].expand,
                    {resolver(each.style, each.field): files[each] for each in addresses},
                )
            finally:
                for file in files.values():
                    file.finish()
            for address, file in files.items():
                manifests[address][resource.name] = {"count": count, **file.result()}
        for address, folder in writing.items():
            manifest = {
                "format": snapshot.FORMAT,
                "version": version,
                "address": address.as_dict(),
                "resources": manifests[address],
            }
            with open(folder / snapshot.MANIFEST, "xb") as file:
                file.write(orjson.dumps(manifest))
                file.flush()
                os.fsync(file.fileno())
            _fsync(folder)
            written = parent / address.key
            if written.exists():  # of another format: moved aside, then replaced
                os.rename(written, folder.with_name(folder.name + ".old"))
            os.rename(folder, written)
        _fsync(parent)
    finally:
        for folder in writing.values():
            shutil.rmtree(folder, ignore_errors=True)
            shutil.rmtree(folder.with_name(folder.name + ".old"), ignore_errors=True)
        with contextlib.suppress(OSError):
            parent.rmdir()  # a version's folder left empty by a failure


def _write_records(cursor, expand, files):
    """Each stored record of ``cursor`` (in id order) as a line of every file of
    ``files`` ({resolve: Compressed}); the number of records."""
    count, pending, size = 0, [], 0
    while True:
        rows = cursor.fetchmany(ROWS)
        for (doc,) in rows:
            pending.append(expand(doc))
            size += len(pending[-1])
        count += len(rows)
        if pending and (size >= BATCH_BYTES or not rows):
            # One template of the batch's lines: each address is one % over it.
            batch = b"\n".join(pending) + b"\n"
            pending, size = [], 0
            for resolve, file in files.items():
                file.write(escape_line_separators(resolve(batch)))
        if not rows:
            return count


class Compressed:
    """A gzip file written by a thread of its own, its bytes counted and digested as
    written; ``finish`` waits for it, ``result`` tells its bytes and digest."""

    def __init__(self, path):
        self.path = path
        self.queue = queue.Queue(QUEUED)
        self.error = None
        self.size = 0
        self.digest = hashlib.sha256()
        self.file = open(path, "xb")  # noqa: SIM115 (closed by the thread)
        self.thread = threading.Thread(target=self._run, name=f"snapshot {path.name}", daemon=True)
        self.thread.start()

    def write(self, data):
        if self.error is not None:
            raise self.error
        self.queue.put(data)

    def _run(self):
        # wbits 31: the gzip format, its header without a name or a time, so that the
        # same records give the same bytes.
        compressor = zlib.compressobj(LEVEL, zlib.DEFLATED, 31)
        try:
            with self.file:
                while True:
                    data = self.queue.get()
                    compressed = compressor.flush() if data is None else compressor.compress(data)
                    if compressed and self.error is None:
                        self.size += len(compressed)
                        self.digest.update(compressed)
                        self.file.write(compressed)
                    if data is None:
                        self.file.flush()
                        os.fsync(self.file.fileno())
                        return
        except BaseException as error:  # handed to the writer, which raises it
            self.error = error
            while self.queue.get() is not None:  # the writer may wait to put
                pass

    def finish(self):
        """Wait for the file to be written whole (or for its thread's error)."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def result(self):
        """``{"bytes", "sha256"}`` of the file written; its thread's error raised."""
        if self.error is not None:
            raise self.error
        return {"bytes": self.size, "sha256": self.digest.hexdigest()}


def _fsync(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def prune(target, versions, report=silent):
    """Remove beside ``target`` the snapshots of every version but ``versions`` (the
    served and the previous file's), and folders that an interrupted load left. What
    cannot be removed is reported (Warned): it takes only space."""
    root = snapshot.folder(target)
    try:
        entries = list(root.iterdir())
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name in versions and entry.is_dir():
            leftovers = [each for each in entry.iterdir() if each.name.startswith(".")]
        else:
            leftovers = [entry]
        for leftover in leftovers:
            try:
                shutil.rmtree(leftover)
            except OSError as error:
                report(Warned(f"cannot remove {leftover}: {error.strerror or error}"))


def written(target, version):
    """The snapshot's files of ``version`` beside ``target``: [(address, folder,
    {resource: {"count", "bytes", "sha256"}})], by API root."""
    found = []
    try:
        folders = sorted((snapshot.folder(target) / version).iterdir())
    except OSError:
        return found
    for folder in folders:
        if folder.name.startswith("."):
            continue
        manifest = snapshot.read_manifest(target, version, folder.name)
        if manifest is not None:
            found.append((manifest["address"], folder, manifest["resources"]))
    return sorted(found, key=lambda each: (each[0]["api_root"], each[1].name))
