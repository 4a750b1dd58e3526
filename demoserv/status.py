"""``/api/v1/status/``: what this mirror serves, for monitors: the served catalogue's
source, the export's validators and own date, when it was loaded, its version and
record counts, and the previous catalogue kept for a rollback (``demoserv status`` says the
same, with the file system paths, which this never shows).

Not a resource, so not in the API root (which stays the upstream's). Its facts are read
once per served file (and previous file), not per request."""

import os

from flask import Blueprint, current_app

from .caching import label_by_content
from .catalogue import install, status
from .db import UNAVAILABLE, CatalogueUnavailable, database_path, get_catalogue
from .rendering import API_PREFIX
from .resources.answers import add_view, options_body

bp = Blueprint("status", __name__)
STATUS_PATH = f"{API_PREFIX}/status/"


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
    key = (catalogue.file_id, _previous_id(target))
    cached = current_app.extensions.get("demoserv.status")
    if cached is None or cached[0] != key:
        facts = status.status(target, paths=False)
        if facts is None:  # removed since the request began
            raise CatalogueUnavailable(UNAVAILABLE + "the catalogue file is missing.")
        cached = (key, facts)
        current_app.extensions["demoserv.status"] = cached
    # Its facts change with the previous file too: labelled by its bytes.
    return label_by_content(current_app.json.response(cached[1]))


# The path and, like every API path, the same with a format suffix (/api/v1/status.json).
add_view(bp, STATUS_PATH, mirror_status, describe)
