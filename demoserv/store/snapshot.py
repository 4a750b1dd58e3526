"""The snapshot's files, which a load writes (``loader/snapshot.py``) and the server
serves (``web/views/snapshot.py``): where they are, what they are named, and the
manifest beside them.

A snapshot is every record's detail record, one gzip file of JSON lines per resource,
in id order, each line the detail answer's body byte for byte. Its addresses are
absolute, so the files are written for an ``Address`` (the API root a client reaches,
the site URL and the page-address field name), each address in a folder of its own:

``NAME.snapshot/<version>/<address key>/<resource>.ndjson.gz`` beside the catalogue file
``NAME``, with ``manifest.json`` (each file's records, bytes and SHA-256) in the same
folder. The version is the digest of every record as built, so one folder serves every
file of those records; a folder is complete once it has its name (it is written under
another and renamed). The path under ``NAME.snapshot/`` is the file's address under
``FILES_PATH``, so that a web server can serve the folder as it is.
"""

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

import orjson

from .templates import LinkStyle

SUFFIX = ".snapshot"  # the folder beside the catalogue file
MANIFEST = "manifest.json"
EXTENSION = ".ndjson.gz"
CONTENT_TYPE = "application/gzip"
FILES_PATH = "/snapshot"  # the files' addresses: FILES_PATH/<version>/<key>/<resource>.ndjson.gz
KEY_DIGITS = 16
# How lines are made from the stored records: a manifest of another format is not read,
# so that a load writes the version's files again.
FORMAT = 1
KEY = re.compile(f"[0-9a-f]{{{KEY_DIGITS}}}")


@dataclass(frozen=True)
class Address:
    """What a snapshot's lines hold beside the records: the API root of every ``url``
    (``http://127.0.0.1:8080/api/v1/``), the site of every page address and that
    field's name."""

    api_root: str  # ends with "/"
    site: str  # no trailing "/"
    field: str  # SERVICE_URL_FIELD

    @property
    def key(self):
        """The name of its folder: a digest of the three."""
        text = "\0".join((self.api_root, self.site, self.field)).encode()
        return hashlib.sha256(text).hexdigest()[:KEY_DIGITS]

    @property
    def style(self):
        """The addresses of a detail answer without a ``format``, at this API root."""
        return LinkStyle(self.api_root, "/", self.site)

    def as_dict(self):
        return {"api_root": self.api_root, "site": self.site, "field": self.field}


def folder(target):
    """The snapshots of the catalogue file ``target``: ``NAME.snapshot`` beside it."""
    target = Path(target)
    return target.with_name(target.name + SUFFIX)


def files_folder(target, version, key):
    """The folder of one version's files for one address (its ``key``)."""
    return folder(target) / version / key


def file_name(resource):
    return resource + EXTENSION


def file_path(version, key, resource):
    """A file's path under ``FILES_PATH`` and under ``folder``."""
    return f"{version}/{key}/{file_name(resource)}"


def read_manifest(target, version, key):
    """The manifest of ``version``'s files for the address ``key`` beside ``target``
    (``{"format", "version", "address", "resources": {name: {"count", "bytes",
    "sha256"}}}``); None if they were not written (in this ``FORMAT``)."""
    try:
        manifest = orjson.loads((files_folder(target, version, key) / MANIFEST).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        return None
    return manifest
