"""``/api/v1/status/``: what this mirror serves, for monitors: the served catalogue's
source, the export's validators and own date, when it was loaded, its version and
record counts, and the previous catalogue kept for a rollback (``demoserv status`` says the
same, with the file system paths, which this never shows).

Not a resource, so not in the API root (which stays the upstream's). Its facts are read
once per served file (and previous file), not per request: kept in a ``ByteCache``. The
served file's are read (``store/facts.py``) in the request's own connection, so that they
are those of the file the answer is kept under, and the served file is not opened again."""

import os

from flask import current_app

from ...loader import install, status_facts
from ...store import facts as store_facts
from ..conditional import label_by_content
from ..db import (
    UNAVAILABLE,
    CatalogueUnavailable,
    database_path,
    driver_connection,
    get_catalogue,
    get_connection,
)
from . import openapi
from .endpoints import Endpoint, kept, options_body


def _previous_id(target):
    try:
        stat = os.stat(install.previous_path(target))
    except OSError:
        return None
    return (stat.st_dev, stat.st_ino, stat.st_mtime_ns)


def describe():
    return options_body(
        "Status",
        "What this mirror serves: its source, version, counts and the previous catalogue "
        "kept for a rollback.",
    )


def mirror_status():
    catalogue = get_catalogue()  # a 503 when no catalogue can be read
    target = database_path(current_app)
    previous = _previous_id(target)
    cache = kept("status")
    facts = cache.find(previous, catalogue.file_id)
    if facts is None:
        served = store_facts.read_file_facts(driver_connection(get_connection()))
        facts = status_facts.status(target, paths=False, served=served)
        if facts is None:  # removed since the request began
            raise CatalogueUnavailable(UNAVAILABLE + "the catalogue file is missing.")
        cache.keep(previous, facts, len(current_app.json.dumps(facts)), catalogue.file_id)
    # Its facts change with the previous file too: labelled by its bytes.
    return label_by_content(current_app.json.response(facts))


def _schema():
    text = {"type": ["string", "null"]}
    source = {
        "type": "object",
        "description": "Where the catalogue came from; null where not known.",
        "additionalProperties": False,
        "required": list(status_facts.SOURCE_KEYS),
        "properties": {
            "kind": {
                "type": ["string", "null"],
                "enum": ["url", "file", "folder", None],
                "description": "An export's address, an export file or a catalogue folder.",
            },
            "source": {**text, "description": "The address, or the file's or folder's name."},
            "etag": {**text, "description": "The ETag the export was sent with."},
            "last_modified": {**text, "description": "The export's Last-Modified."},
            "size": {"type": ["integer", "null"], "minimum": 0, "description": "Bytes."},
            "sha256": {**text, "description": "SHA-256 of the export's bytes, in hex."},
            "export_date": {**text, "description": "The date the dump states, if any."},
        },
    }
    catalogue = {
        "version": {"type": "string", "description": "The records' digest (ETags use it)."},
        "records_since": {
            "type": "string",
            "description": "Since when these records are served (Last-Modified).",
        },
        "loaded_at": {**text, "description": "When this file was built (UTC)."},
        "schema_version": {
            "type": "string",
            "description": "A digest of the declarations the file was built with.",
        },
        "source": source,
    }
    counts = {
        "type": "object",
        "additionalProperties": {"type": "integer", "minimum": 0},
        "description": "Records of each resource.",
    }
    previous = {
        "type": ["object", "null"],
        "description": "The catalogue kept for a rollback; null if none.",
        "additionalProperties": False,
        "required": list(catalogue),
        "properties": catalogue,
    }
    change_counts = {
        "type": "object",
        "additionalProperties": {
            "type": "object",
            "additionalProperties": False,
            "required": ["added", "changed", "removed"],
            "properties": {
                name: {"type": "integer", "minimum": 0} for name in ("added", "changed", "removed")
            },
        },
        "description": "Records added, changed and removed, by resource.",
    }
    load = {"version": {"type": "string"}, "loaded_at": {"type": "string"}}
    changes_facts = {
        "type": ["object", "null"],
        "description": "The history of changes (/api/v1/changes/); null if none.",
        "additionalProperties": False,
        "required": ["last_load", "since"],
        "properties": {
            "last_load": {
                "type": "object",
                "description": "The last load that changed records, and its counts "
                "(empty where it started the history).",
                "additionalProperties": False,
                "required": [*load, "counts"],
                "properties": {**load, "counts": change_counts},
            },
            "since": {
                "type": "object",
                "description": "The oldest load the history holds: how far back it goes.",
                "additionalProperties": False,
                "required": list(load),
                "properties": load,
            },
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": [*catalogue, "counts", "changes", "previous"],
        "properties": {
            **catalogue,
            "counts": counts,
            "changes": changes_facts,
            "previous": previous,
        },
    }


def _operations(spec):
    spec.components.schema("Status", _schema())
    return {
        "get": {
            "summary": "What this mirror serves, for monitors",
            "description": "The served catalogue's source, the export's validators and "
            "own date, when it was loaded, its version and record counts, and the "
            "previous catalogue kept for a rollback. Not cached (no ETag).",
            "parameters": openapi.COMMON_PARAMETERS,
            "responses": openapi.answers(
                openapi.json_or_jsonp(
                    openapi.ref("Status"), "The served catalogue and the previous one."
                ),
                "404",
                "406",
                "503",
            ),
        },
        "options": openapi.options("the mirror's status"),
    }


# The facts of the served file, under the previous file's id: a few KB; not a setting.
ENDPOINT = Endpoint(
    "/status/", "status", mirror_status, _operations, describe, kept_bytes=256 * 1024
)
