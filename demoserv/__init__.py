"""demoserv: a read-only, paginated JSON API over a demoscene catalogue."""

import ctypes
import gc
import logging
import os
import sys
from pathlib import Path

import click
from flask import Flask

from . import access_log, db, errors, listing, openapi, pipeline, rendering, status
from .catalogue import CatalogueError, load_catalogue
from .catalogue import cli as catalogue_cli
from .catalogue.install import InstallError
from .resources import BLUEPRINTS
from .shared import SERVICE_URL_FIELDS
from .version import __version__

log = logging.getLogger(__name__)

# The seed catalogue: in a built package as demoserv/seed (pyproject.toml maps seed/
# there), and read from the top of the repository in a checkout (an editable install).
PACKAGED_SEED = Path(__file__).resolve().parent / "seed"
CHECKOUT_SEED = Path(__file__).resolve().parent.parent / "seed"

DEFAULTS = {
    # The SQLite file served; a relative path is inside the instance folder.
    "DATABASE": "demoserv.sqlite3",
    # Base of every service_url: the public site whose pages the records mirror.
    "SITE_URL": "https://demozoo.org",
    # Catalogue folder loaded when DATABASE does not exist yet; "" disables it.
    "SEED_DIR": str(PACKAGED_SEED if PACKAGED_SEED.is_dir() else CHECKOUT_SEED),
    # Number of proxies in front whose X-Forwarded-Proto/-Host/-Port/-Prefix to trust.
    "TRUSTED_PROXIES": 0,
    # Host names served (Flask's setting); None serves any. Set it in production.
    "TRUSTED_HOSTS": None,
    # Seconds that clients and caches may reuse an answer (Cache-Control max-age).
    "CACHE_MAX_AGE": 300,
    # The name of the field holding a record's public page: "service_url", or the
    # upstream's own "demozoo_url" for programs written for the upstream API.
    "SERVICE_URL_FIELD": "service_url",
    # Threads each server process runs requests on, where the server cannot say
    # (demoserv-serve says): up to half of them may wait for a turn to find a new
    # listing. None: new listings never wait, and get 503 while one is being found.
    "SERVER_THREADS": None,
}


# Seconds a thread may hold the interpreter while others want it (Python's default: 5 ms).
# A request waits about that long each time it needs the interpreter back from a
# thread that is finding a new listing; a page takes 1 to 2 ms.
SWITCH_INTERVAL = 0.001

# Allocations of at least this many bytes are mapped from the system each time and given
# back when freed (glibc's M_MMAP_THRESHOLD, fixed, so glibc no longer raises it). Finding
# a listing allocates temporary arrays of megabytes on whichever server thread runs it;
# under glibc's rising threshold each thread's arena kept them after use, and the
# server's resident memory grew by about 100 MB at full size.
MMAP_THRESHOLD = 128 * 1024
M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)


def give_back_large_blocks(libc=None):
    """Fix the C library's mmap threshold at ``MMAP_THRESHOLD`` (glibc's ``mallopt``);
    False where the C library has no ``mallopt`` (it then keeps its own policy)."""
    if libc is None:
        try:
            libc = ctypes.CDLL(None)
        except OSError:
            return False
    mallopt = getattr(libc, "mallopt", None)
    return mallopt is not None and mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1


def create_app(test_config=None, instance_path=None):
    """Configuration: defaults, then ``instance/config.py``, then ``DEMOSERV_*``
    environment variables; a test config replaces the last two. ``instance_path``
    replaces the checkout's ``instance/`` folder."""
    app = Flask(__name__, instance_path=instance_path, instance_relative_config=True)
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
    try:
        os.makedirs(app.instance_path, exist_ok=True)
    except OSError as error:
        # Needed only for the seed catalogue, which reports its own failure.
        log.warning("%s: %s", app.instance_path, error.strerror)

    errors.init_app(app)
    db.init_app(app)
    listing.init_app(app, db.database_path(app))
    rendering.init_app(app)
    pipeline.init_app(app)
    for blueprint in BLUEPRINTS:
        app.register_blueprint(blueprint)
    app.register_blueprint(openapi.bp)
    app.register_blueprint(status.bp)
    catalogue_cli.init_app(app)
    app.cli.add_command(version_command)
    _seed_first_run(app)
    return app


def serving_app():
    """The app as a server process runs it (``waitress-serve --call
    demoserv:serving_app``, ``wsgi.py``): ``create_app`` plus what belongs to the whole
    process, which ``create_app`` leaves alone: the access log on standard error (unless
    logging is configured already); what start-up allocated kept out of the cyclic
    collector's full passes, which would otherwise walk it while serving; a shorter
    interpreter switch interval (``SWITCH_INTERVAL``); and large blocks given back to
    the system when freed (``give_back_large_blocks``)."""
    app = create_app()
    access_log.configure(app)
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL)
    give_back_large_blocks()
    return app


@click.command("version")
def version_command():
    """Show the version of demoserv."""
    click.echo(f"demoserv {__version__}")


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
