"""Where a catalogue file came from: facts recorded in its ``catalogue_source`` table when
it is built, read back (``store.facts.provenance``) to decide whether a new export differs
from the served one and to tell operators and monitors what a mirror serves.

Keys (each optional but ``kind``, ``source`` and ``loaded_at``):

- ``kind``: ``url``, ``file`` or ``folder``;
- ``source``: the address (without any user name or password) or the file's name;
- ``path``: the file's or folder's absolute path (shown by ``demoserv status``, never over HTTP);
- ``etag``, ``last_modified``: the validators the server sent with the export;
- ``size``, ``sha256``: the export's bytes as downloaded or read;
- ``export_date``: the date the dump states for itself (pg_dump's ``-- Started on``
  line, written by ``pg_dump --verbose``), if it states one;
- ``loaded_at``: when this file was built (UTC).

The records' own version and time (``catalogue_info``) do not depend on these facts: the
same records give the same version whatever their source.
"""

import datetime
import hashlib
import re
import sqlite3
import zlib
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from ..store.values import TIME_FORMAT

HEAD = 1 << 16  # bytes of a dump's text searched for its own date
HASH_CHUNK = 1 << 20
_STARTED_ON = re.compile(rb"^-- (?:Started|Dumped) on (\d{4}-\d\d-\d\d[ T][^\r\n]*)$", re.M)


def now():
    return datetime.datetime.now(datetime.timezone.utc).strftime(TIME_FORMAT)


def public_address(url):
    """``url`` without a user name or password, which no file or answer should hold."""
    parts = urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def export_date(head):
    """The date a dump states for itself in its first bytes ``head`` (gzipped or not),
    or None."""
    if head[:2] == b"\x1f\x8b":
        try:
            head = zlib.decompressobj(wbits=31).decompress(head, HEAD)
        except zlib.error:
            return None
    match = _STARTED_ON.search(head[:HEAD])
    return match.group(1).decode("utf-8", "replace").strip() if match else None


def of_file(path):
    """The facts of the export file at ``path``: its name, path, size, digest and date."""
    path = Path(path)
    digest = hashlib.sha256()
    size = 0
    head = b""
    with open(path, "rb") as file:
        while chunk := file.read(HASH_CHUNK):
            if len(head) < HEAD:
                head += chunk[: HEAD - len(head)]
            digest.update(chunk)
            size += len(chunk)
    facts = {
        "kind": "file",
        "source": path.name,
        "path": str(path.resolve()),
        "size": str(size),
        "sha256": digest.hexdigest(),
    }
    date = export_date(head)
    if date:
        facts["export_date"] = date
    return facts


def of_path(source):
    """The facts of ``source``, a catalogue folder or an export file."""
    source = Path(source)
    if source.is_file():
        return of_file(source)
    return {"kind": "folder", "source": source.name, "path": str(source.resolve())}


def record(path, facts):
    """Write ``facts`` (and the load time, unless given) into the new catalogue file at
    ``path``."""
    facts = {"loaded_at": now(), **facts}
    connection = sqlite3.connect(path)
    try:
        with connection:
            connection.execute("DELETE FROM catalogue_source")
            connection.executemany(
                "INSERT INTO catalogue_source (key, value) VALUES (?, ?)",
                [(key, str(value)) for key, value in facts.items() if value is not None],
            )
    finally:
        connection.close()


def same_export(facts, served):
    """Whether the export of ``facts`` (size and digest) is the one ``served`` came from."""
    return bool(facts.get("sha256")) and (facts.get("sha256"), facts.get("size")) == (
        served.get("sha256"),
        served.get("size"),
    )
