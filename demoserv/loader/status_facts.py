"""What a mirror serves: the served catalogue file's source, validators, the export's own
date, load time, version and record counts, its last load's changes and how far back its
history of changes goes, and the same of the previous file kept for a rollback.
``demoserv status`` prints it; ``/api/v1/status/`` answers it without the file system paths
and without an address's query string."""

from urllib.parse import urlsplit

from ..store import facts as store_facts
from . import install

KINDS = {"url": "an address", "file": "an export file", "folder": "a catalogue folder"}
SOURCE_KEYS = ("kind", "source", "etag", "last_modified", "size", "sha256", "export_date")


def file_status(path, *, paths=True):
    """The facts of the catalogue file at ``path``, read in one connection; None if it
    is absent or unusable."""
    return described(store_facts.file_facts(path), paths=paths)


def described(read, *, paths=True):
    """The status of a file whose facts are ``read`` (a store.facts.FileFacts; None for
    none); with ``paths``, the file system path of its source too (demoserv status),
    without it no path and no address's query string (over HTTP)."""
    if read is None:
        return None
    facts = read.provenance
    source = {key: facts.get(key) for key in SOURCE_KEYS}
    if source["size"] is not None:
        source["size"] = int(source["size"])
    if paths:
        source["path"] = facts.get("path")
    elif source["kind"] == "url" and source["source"]:
        # Answered to anyone: not a query string, which may hold an access token.
        source["source"] = urlsplit(source["source"])._replace(query="").geturl()
    return {
        "version": read.version,
        "records_since": read.loaded_at,
        "loaded_at": facts.get("loaded_at"),
        "schema_version": read.schema_version,
        "counts": read.counts,
        "changes": read.history,
        "source": source,
    }


def status(target, *, paths=True, served=None):
    """The served file's facts, with ``previous``: the previous file's (or None). None
    if no catalogue is served. ``served``: the served file's FileFacts, when the caller
    has read them in its own connection to it (the server's request); None: they are
    read from ``target``. Each file is opened once."""
    if served is None:
        served = file_status(target, paths=paths)
    else:
        served = described(served, paths=paths)
    if served is None:
        return None
    previous = file_status(install.previous_path(target), paths=paths)
    if previous is not None:
        previous.pop("counts")
        previous.pop("changes")
    return {**served, "previous": previous}


def lines(target, facts):
    """``demoserv status``'s text: one fact a line."""
    out = [f"Served catalogue: {target}"]
    out += _file_lines(facts)
    previous = facts["previous"]
    out.append("")
    if previous is None:
        out.append(
            f"Previous catalogue (for demoserv rollback): none at {install.previous_path(target)}"
        )
    else:
        out.append(f"Previous catalogue (for demoserv rollback): {install.previous_path(target)}")
        out += _file_lines(previous)
    return out


def _file_lines(facts):
    source = facts["source"]
    where = source["source"] or "unknown"
    if source.get("path") and source["kind"] != "url":
        where = f"{where} ({source['path']})"
    kind = KINDS.get(source["kind"])
    rows = [("source", f"{where}, {kind}" if kind else where)]
    if source["kind"] == "url":
        rows.append(("ETag", source["etag"] or "none sent"))
        rows.append(("Last-Modified", source["last_modified"] or "none sent"))
    if source["size"] is not None:
        rows.append(("export", f"{source['size']:,} bytes, SHA-256 {source['sha256']}"))
    if source["kind"] != "folder":
        rows.append(("export's date", source["export_date"] or "not stated in the export"))
    rows.append(("loaded at", facts["loaded_at"] or "unknown"))
    rows.append(("version", f"{facts['version']} (these records since {facts['records_since']})"))
    if "counts" in facts:
        counts = ", ".join(f"{count:,} {name}" for name, count in facts["counts"].items())
        rows.append(("records", counts))
    if "changes" in facts:
        rows += _change_rows(facts["changes"])
    return [f"  {name + ':':<15}{value}" for name, value in rows]


def _change_rows(changes):
    if changes is None:
        return [("changes", "no history of changes (built by an earlier version)")]
    last = changes["last_load"]
    counts = "; ".join(
        f"{name} +{each['added']:,} ~{each['changed']:,} -{each['removed']:,}"
        for name, each in last["counts"].items()
    )
    history_from = changes["since"]
    return [
        ("last changes", f"{counts or 'none: the history starts here'} (at {last['loaded_at']})"),
        ("history since", f"{history_from['loaded_at']} (version {history_from['version']})"),
    ]
