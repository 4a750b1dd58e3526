"""``/api/v1/snapshot/``: the manifest of the snapshot (every record's detail record, a
gzip file of JSON lines per resource, written at load: ``loader/snapshot.py``), and the
files themselves at ``/snapshot/<version>/<key>/<resource>.ndjson.gz``.

No request writes a snapshot or reads a record: the manifest is the small file written
beside the files for the request's address (its API root, the site URL and the
page-address field name), or a 404 where none was written (an address that is not one
of ``SNAPSHOT_URLS``, which any Host header may ask for at the cost of one failed
open); a file is served from disk by ``send_file`` (Content-Length, ETag and 304,
Range and 206), outside the API's prefix, so that no JSON negotiation, compression or
kept answer applies to it, and a web server in front can serve the folder itself. Not a
resource, so not in the API root."""

import re

from flask import current_app, request, send_file

from ...api.error import APIError
from ...resources import NAMES
from ...store import snapshot
from ...store.values import DIGEST_DIGITS
from ..address_style import request_address
from ..db import database_path, get_catalogue
from . import openapi
from .endpoints import Endpoint, options_body

# A file's address never names other bytes (the version and the address are in it).
FILE_MAX_AGE = 365 * 24 * 3600
RESOURCE = f"<any({', '.join(NAMES)}):resource>"
VERSION = f"[0-9a-f]{{{DIGEST_DIGITS}}}"
FACTS = ("count", "bytes", "sha256")  # of each file, in the manifest


def _files_root():
    return request.site_root + snapshot.FILES_PATH + "/"


def manifest():
    catalogue = get_catalogue()
    address = request_address()
    found = snapshot.read_manifest(database_path(current_app), catalogue.version, address.key)
    if found is None or not all(name in found["resources"] for name in NAMES):
        raise APIError(
            404,
            f"No snapshot is written for {address.api_root}: a load writes it for each "
            "address that this mirror's SNAPSHOT_URLS setting names.",
        )
    root = _files_root()
    return current_app.json.response(
        {
            "version": catalogue.version,
            "loaded_at": catalogue.loaded_at,
            "resources": {
                name: {
                    "url": root + snapshot.file_path(catalogue.version, address.key, name),
                    **{fact: found["resources"][name][fact] for fact in FACTS},
                }
                for name in NAMES
            },
        }
    )


def snapshot_file(version, key, resource):
    """A snapshot's file as written, whichever catalogue is served now (the served and
    the previous file's are kept)."""
    target = database_path(current_app)
    found = None
    if re.fullmatch(VERSION, version) and snapshot.KEY.fullmatch(key):
        found = snapshot.read_manifest(target, version, key)
    if found is None or found.get("version") != version:
        raise APIError(404)
    path = snapshot.files_folder(target, version, key) / snapshot.file_name(resource)
    try:
        return send_file(
            path,
            mimetype=snapshot.CONTENT_TYPE,
            etag=found["resources"][resource]["sha256"],
            max_age=FILE_MAX_AGE,
            conditional=True,
        )
    except FileNotFoundError:  # removed by a load since the manifest was read
        raise APIError(404) from None


def describe():
    return options_body(
        "Snapshot",
        "Every record's detail record in one download a resource: the manifest of the "
        "gzip files of JSON lines written at load.",
    )


def _manifest_schema():
    entry = {
        "type": "object",
        "additionalProperties": False,
        "required": ["url", *FACTS],
        "properties": {
            "url": {
                "type": "string",
                "format": "uri",
                "description": "The gzip file of JSON lines: one line a record, in id "
                "order, each the body of the record's detail answer at this address.",
            },
            "count": {"type": "integer", "minimum": 0, "description": "Lines (records)."},
            "bytes": {"type": "integer", "minimum": 0, "description": "The file's size."},
            "sha256": {
                "type": "string",
                "pattern": "^[0-9a-f]{64}$",
                "description": "SHA-256 of the file's bytes, in hex (also its ETag).",
            },
        },
    }
    return {
        "type": "object",
        "additionalProperties": False,
        "required": ["version", "loaded_at", "resources"],
        "properties": {
            "version": {
                "type": "string",
                "description": "The catalogue version of the records: follow the changes "
                "feed from it (/api/v1/changes/?since=).",
            },
            "loaded_at": {"type": "string", "description": "Since when they are served (UTC)."},
            "resources": {
                "type": "object",
                "additionalProperties": False,
                "required": list(NAMES),
                "properties": {name: openapi.ref("SnapshotFile") for name in NAMES},
            },
        },
    }, entry


def _manifest_operations(spec):
    manifest_schema, entry = _manifest_schema()
    spec.components.schema("SnapshotFile", entry)
    spec.components.schema("Snapshot", manifest_schema)
    return {
        "get": {
            "summary": "The snapshot: every record's detail record, a file a resource",
            "description": "The address, records, bytes and SHA-256 of each resource's "
            "gzip file of JSON lines, written at load for this address (the url fields "
            "are absolute): a 404 where none was written. See docs/snapshot.md.",
            "parameters": openapi.COMMON_PARAMETERS,
            "responses": openapi.answers(
                openapi.json_or_jsonp(
                    openapi.ref("Snapshot"), "The files of the catalogue served."
                ),
                "400",
                "404",
                "406",
                "503",
            ),
        },
        "options": openapi.options("the snapshot"),
    }


def _path_parameter(name, schema, description):
    return {
        "name": name,
        "in": "path",
        "required": True,
        "description": description,
        "schema": schema,
    }


# No pattern for the version and the key: any text is routed (and answered 404 unless
# it names a file written), so OPTIONS answers for any.
FILE_PARAMETERS = (
    _path_parameter(
        "version",
        {"type": "string"},
        f"The catalogue version ({DIGEST_DIGITS} hexadecimal digits).",
    ),
    _path_parameter(
        "key",
        {"type": "string"},
        f"The address the file was written for ({snapshot.KEY_DIGITS} hexadecimal digits).",
    ),
    _path_parameter("resource", {"type": "string", "enum": list(NAMES)}, "The resource."),
)


def _file_operations(spec):
    gzip = {snapshot.CONTENT_TYPE: {"schema": {"type": "string", "format": "binary"}}}
    methods = openapi.methods_only("a snapshot's file", negotiated=False)
    return {
        "get": {
            "summary": "A snapshot's file, as the manifest names it",
            "description": "gzip-compressed JSON lines; ETag (the file's SHA-256) and "
            "If-None-Match, Range and If-Range.",
            "responses": {
                "200": {"description": "The whole file.", "content": gzip},
                "206": {"description": "The part a Range asked for.", "content": gzip},
                "304": {"description": "If-None-Match names the file's ETag."},
                **openapi.errors("404", "416"),
            },
        },
        # A path that names no file (its variables' values aside) is not routed: 404.
        "options": {**methods, "responses": {**methods["responses"], **openapi.errors("404")}},
    }


ENDPOINTS = [
    Endpoint("/snapshot/", "snapshot", manifest, _manifest_operations, describe),
    Endpoint(
        f"{snapshot.FILES_PATH}/<version>/<key>/{RESOURCE}{snapshot.EXTENSION}",
        "snapshot_file",
        snapshot_file,
        _file_operations,
        path_parameters=FILE_PARAMETERS,
        prefix="",
    ),
]
