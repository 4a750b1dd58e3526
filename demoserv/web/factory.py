"""The app: ``create_app`` (configuration, then the serving side's parts) and
``serving_app`` (what a server process adds, the seed catalogue's build on a first start
among it): the one module that wires the serving side and the loader together. The
package's face finds both here and adds the commands (``demoserv.create_app``)."""

import ctypes
import gc
import logging
import os
import shlex
import sys
from pathlib import Path

from flask import Flask

from .. import settings
from ..listings import guard, kept
from ..listings.finder import FINDER
from ..loader import progress
from ..loader.install import InstallError
from ..loader.reporting import CatalogueError
from ..resources import RESOURCES
from ..store import facts
from ..store.fingerprint import schema_version
from . import access_log, db, error_handlers, negotiation, pipeline
from .address_style import snapshot_addresses
from .kept_answers import KeptAnswers
from .views import adhoc, endpoints, table

log = logging.getLogger(__name__)

DEFAULTS = settings.DEFAULTS


# Seconds a thread may hold the interpreter while others want it (Python's default: 5 ms).
# A request waits about that long each time it needs the interpreter back from a thread
# building a page (a new listing's first page takes a few ms), and a kept page needs it
# two or three times for a few hundredths of a millisecond each; under a flood of
# refusals every thread of the server wants it.
SWITCH_INTERVAL = 0.00025

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


def create_app(
    test_config=None, instance_path=None, database=None, kept_answers_class=None, page_sizes=None
):
    """Configuration: defaults, then ``instance/config.py``, then ``DEMOSERV_*``
    environment variables; a test config replaces the last two. ``instance_path``
    replaces the checkout's ``instance/`` folder, ``database`` (``--database``) the
    ``DATABASE`` setting. The tests' seams: ``kept_answers_class`` replaces
    ``KeptAnswers`` (one that answers each request twice), ``page_sizes`` ({resource:
    records a page}) the declared page sizes. A bad setting raises
    ``settings.SettingError``."""
    # Named after the package, whose folder is the app's root (instance/ beside it).
    app = Flask("demoserv", instance_path=instance_path, instance_relative_config=True)
    app.config.from_mapping(DEFAULTS)
    if test_config is None:
        app.config.from_pyfile("config.py", silent=True)
        app.config.from_prefixed_env("DEMOSERV")
    else:
        app.config.from_mapping(test_config)
    if database is not None:
        app.config["DATABASE"] = str(database)
    config_file = os.path.join(app.instance_path, "config.py") if test_config is None else None
    settings.check(app.config, config_file)
    if test_config is None:
        for warning in settings.unknown_variables(os.environ):
            log.warning(warning)
    app.config["DATABASE_ORIGIN"] = database_origin(app.config, database, config_file)
    app.config["DATABASE"] = str(db.resolve_database(app.config["DATABASE"], app.instance_path))

    app.kept_answers_class = kept_answers_class or KeptAnswers
    error_handlers.init_app(app)
    db.init_app(app, schema_version(RESOURCES))
    guard.init_app(app)
    kept.init_app(app)
    negotiation.init_app(app)
    pipeline.init_app(app)
    app.url_map.converters.update(endpoints.CONVERTERS)
    app.register_blueprint(endpoints.blueprint(table.served(page_sizes)))
    app.register_blueprint(adhoc.bp)
    return app


def database_origin(config, database, config_file):
    """Where the database was named: ``--database`` (``database``), ``DEMOSERV_DATABASE``,
    ``DATABASE`` in ``config_file`` (None: a test configuration); None when none was
    named, and the default in the instance folder is used."""
    if database is not None:
        return "--database"
    if config.get("DATABASE") in (None, ""):
        return None
    if config_file is None:
        return "the DATABASE setting"
    if os.environ.get(settings.PREFIX + "DATABASE"):
        return settings.PREFIX + "DATABASE"
    return f"DATABASE in {config_file}"


def missing_database(app, catalogue=None):
    """Why a server must not start on ``app``'s database, in one line; None when it may.
    A database named (``--database``, ``DEMOSERV_DATABASE``, ``DATABASE`` in config.py)
    that does not exist is refused, unless ``catalogue`` (``--catalogue``) asks for it
    to be built: a mistyped path would otherwise be made, folders and all, and served.
    Only the default database (``db.DEFAULT_DATABASE`` in the instance folder) is built
    from the seed catalogue on a first start."""
    path = db.database_path(app)
    origin = app.config.get("DATABASE_ORIGIN")
    if origin is None or catalogue is not None or os.path.lexists(path):
        return None
    load = f"demoserv load seed --database {shlex.quote(str(path))}"
    return (
        f"{path} does not exist (database from {origin}), and only the default database "
        f"is built from the seed: create it with {load} (or load another catalogue)"
    )


def serving_app(database=None, catalogue=None):
    """The app as a server process runs it (``demoserv serve``, ``waitress-serve --call
    demoserv:serving_app``, ``wsgi.py``): ``create_app``, refused in one log line and
    exit status 2 when its database was named but does not exist
    (``missing_database``), then ``start_serving``. ``database`` (``--database``)
    replaces the DATABASE setting, ``catalogue`` (the folder ``--catalogue`` names) the
    seed catalogue."""
    app = create_app(database=database)
    access_log.configure(app)
    refusal = missing_database(app, catalogue)
    if refusal is not None:
        log.error(refusal)
        raise SystemExit(2)
    start_serving(app, catalogue)
    return app


def start_serving(app, catalogue=None, base_urls=()):
    """What belongs to the whole server process, which ``create_app`` leaves alone: the
    log on standard error (unless logging is configured already); the database built
    from the seed catalogue on the first start, or from ``catalogue``
    (``build_from_seed``, its snapshot written for the server's ``base_urls`` too); what
    start-up allocated kept out of the cyclic collector's full passes, which would
    otherwise walk it while serving; a shorter interpreter switch interval
    (``SWITCH_INTERVAL``); large blocks given back to the system when freed
    (``give_back_large_blocks``); and the finder of listings started, so that the first
    never-seen listing does not wait for its imports (``listings/finder.py``; one that
    cannot start is said, and tried again at the first listing)."""
    FINDER.start()
    access_log.configure(app)
    build_from_seed(app, catalogue, base_urls)
    gc.freeze()
    sys.setswitchinterval(SWITCH_INTERVAL)
    give_back_large_blocks()
    try:
        FINDER.wait()
    except RuntimeError as error:
        log.error("%s", error)


def build_from_seed(app, catalogue=None, base_urls=()):
    """Build the database from the seed catalogue (``SEED_DIR``) when it does not exist:
    the first start of a server on the default database (``serving_app`` refuses a
    named one that does not exist first). ``catalogue``, a folder given in place of the
    seed, is loaded also when the database was loaded from another source. Its snapshot
    is written for ``SNAPSHOT_URLS`` and the server's own ``base_urls``. Commands that
    only read never call it."""
    path = db.database_path(app)
    seed = app.config["SEED_DIR"] if catalogue is None else str(catalogue)
    if not seed:
        return
    if os.path.lexists(path):
        if catalogue is None or facts.provenance(path).get("path") == str(Path(seed).resolve()):
            return
    if not os.path.isdir(seed):
        log.warning("no database at %s and no seed catalogue at %s", path, seed)
        return
    # Imported only where a catalogue is loaded: the loading machinery (the export's reader,
    # the download's requests, the build) would weigh on every server process otherwise.
    from ..loader.sources import load_catalogue

    try:
        addresses = snapshot_addresses(app.config, base_urls)
        counts, _ = load_catalogue(seed, path, progress.LogLines(), addresses)
    except (CatalogueError, InstallError) as error:
        # One line, and the server starts: it answers 503 until a catalogue is loaded.
        log.error("cannot build the catalogue from the seed catalogue %s: %s", seed, error)
        return
    log.info("built %s from the catalogue %s: %s", path, seed, progress.counts(counts))
