"""demoserv: a read-only, paginated JSON API over a demoscene catalogue."""

import gc
import logging
import os
from pathlib import Path

from flask import Flask
from werkzeug.middleware.proxy_fix import ProxyFix

from . import access_log, caching, compression, db, errors, guard, openapi, rendering
from .access_log import AccessLog
from .catalogue import CatalogueError, load_catalogue
from .catalogue import cli as catalogue_cli
from .catalogue.install import InstallError
from .resources import BLUEPRINTS, RESOURCES
from .shared import SERVICE_URL_FIELDS

log = logging.getLogger(__name__)

DEFAULTS = {
    # The SQLite file served; a relative path is inside the instance folder.
    "DATABASE": "demoserv.sqlite3",
    # Base of every service_url: the public site whose pages the records mirror.
    "SITE_URL": "https://demozoo.org",
    # Catalogue folder loaded when DATABASE does not exist yet; "" disables it.
    "SEED_DIR": str(Path(__file__).resolve().parent.parent / "seed"),
    # Number of proxies in front whose X-Forwarded-Proto/-Host/-Port/-Prefix to trust.
    "TRUSTED_PROXIES": 0,
    # Host names served (Flask's setting); None serves any. Set it in production.
    "TRUSTED_HOSTS": None,
    # Seconds that clients and caches may reuse an answer (Cache-Control max-age).
    "CACHE_MAX_AGE": 300,
    # The name of the field holding a record's public page: "service_url", or the
    # upstream's own "demozoo_url" for programs written for the upstream API.
    "SERVICE_URL_FIELD": "service_url",
}


def create_app(test_config=None):
    """Configuration: defaults, then ``instance/config.py``, then ``DEMOSERV_*``
    environment variables; a test config replaces the last two."""
    app = Flask(__name__, instance_relative_config=True)
    app.config.from_mapping(DEFAULTS)
    if test_config is None:
        app.config.from_pyfile("config.py", silent=True)
        app.config.from_prefixed_env("DEMOSERV")
    else:
        app.config.from_mapping(test_config)
    if app.config["SERVICE_URL_FIELD"] not in SERVICE_URL_FIELDS:
        raise ValueError(
            f"SERVICE_URL_FIELD is {app.config['SERVICE_URL_FIELD']!r}: expected one of "
            + ", ".join(SERVICE_URL_FIELDS)
        )
    app.extensions["demoserv.resources"] = [resource.name for resource in RESOURCES]
    try:
        os.makedirs(app.instance_path, exist_ok=True)
    except OSError as error:
        # Needed only for the seed catalogue, which reports its own failure.
        log.warning("%s: %s", app.instance_path, error.strerror)

    access_log.configure(app)
    db.init_app(app)
    errors.init_app(app)
    guard.init_app(app)
    # Flask runs before_request hooks in the order they are added and after_request
    # hooks in the reverse order: compression goes first so that it sees the final
    # body and headers; negotiation goes before the conditional answers.
    compression.init_app(app)
    rendering.init_app(app)
    caching.init_app(app)
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    app.register_blueprint(openapi.bp)
    catalogue_cli.init_app(app)

    _seed_first_run(app)
    # What start-up allocated lives as long as the process: keep it out of the cyclic
    # collector's full passes, which would otherwise walk it while serving.
    gc.freeze()
    proxies = int(app.config["TRUSTED_PROXIES"])
    if proxies:
        app.wsgi_app = ProxyFix(
            app.wsgi_app,
            x_for=proxies,
            x_proto=proxies,
            x_host=proxies,
            x_port=proxies,
            x_prefix=proxies,
        )
    app.wsgi_app = AccessLog(app.wsgi_app)
    return app


def _seed_first_run(app):
    """Build the database from the seed catalogue the first time the app starts."""
    path = db.database_path(app)
    seed = app.config["SEED_DIR"]
    if not seed or os.path.lexists(path):
        return
    if not os.path.isdir(seed):
        log.warning("no database at %s and no seed catalogue at %s", path, seed)
        return
    try:
        counts, _ = load_catalogue(seed, path)
    except (CatalogueError, InstallError) as error:
        # One line, and the server starts: it answers 503 until a catalogue is loaded.
        log.error("cannot build the catalogue from the seed catalogue %s: %s", seed, error)
        return
    log.info("built %s from the seed catalogue: %s", path, counts)
