"""``/api/v1/status/``: what this mirror serves, for monitors: the served catalogue's
source, the export's validators and own date, when it was loaded, its version and
record counts, and the previous catalogue kept for a rollback (``demoserv status`` says the
same, with the file system paths, which this never shows).

Not a resource, so not in the API root (which stays the upstream's). Its facts are read
once per served file (and previous file), not per request: kept in a ``ByteCache``. The
served file's are read (``store/facts.py``) in the request's own connection, so that they
are those of the file the answer is kept under, and the served file is not opened again."""

import os

from flask import Blueprint, current_app

from ...byte_cache import ByteCache
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
from ..negotiation import API_PREFIX
from .resources import add_view, options_body

bp = Blueprint("status", __name__)
STATUS_PATH = f"{API_PREFIX}/status/"
KEPT = "demoserv.web.views.status"
# The facts of the served file, under the previous file's id: a few KB; not a setting.
KEPT_BYTES = 256 * 1024


@bp.record_once
def _keep_facts(state):
    state.app.extensions[KEPT] = ByteCache(KEPT_BYTES)


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
    kept = current_app.extensions[KEPT]
    facts = kept.find(previous, catalogue.file_id)
    if facts is None:
        served = store_facts.read_file_facts(driver_connection(get_connection()))
        facts = status_facts.status(target, paths=False, served=served)
        if facts is None:  # removed since the request began
            raise CatalogueUnavailable(UNAVAILABLE + "the catalogue file is missing.")
        kept.keep(previous, facts, len(current_app.json.dumps(facts)), catalogue.file_id)
    # Its facts change with the previous file too: labelled by its bytes.
    return label_by_content(current_app.json.response(facts))


# The path and, like every API path, the same with a format suffix (/api/v1/status_facts.json).
add_view(bp, STATUS_PATH, mirror_status, describe)
