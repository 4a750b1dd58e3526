"""Where a catalogue comes from, decided in one place: ``kind_of`` tells an address, a
built catalogue file, an export file and a catalogue folder apart, and ``load_source``
(``demoserv load``) and ``load_catalogue`` hand each to the one stage that reads it: the
download (``fetch``) and then the import (``upstream``), the check of a built file
(``prebuilt``), the import, or the folder's files (``files``, ``rows``, ``scratch``).
Every kind is built beside the served file and installed (``install``) only when good.

An address is downloaded under the load lock into ``.NAME.<hex>.loading.download``
beside the served file ``NAME`` (removed on leaving, and by the next load after a
``kill -9``, like every build file), then imported with every guarantee of a file load.
An export whose validators (``ETag``, ``Last-Modified``) or bytes (size and SHA-256) show
the one served is not loaded again, unless forced (``LoadOptions``): the served file is
left as it is.
"""

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from ..store import facts
from . import adhoc_facts, fetch, history, install, prebuilt, provenance, snapshot
from .build import Builder
from .files import adhoc_file, catalogue_files
from .pgdump import DumpError
from .reporting import CatalogueError, silent
from .rows import Loader
from .upstream import import_dump

ADDRESS_SCHEMES = ("http://", "https://")
SAME_BYTES = "the same bytes as the export served (SHA-256)"
ADDRESS, BUILT, EXPORT, FOLDER = "address", "built", "export", "folder"


def is_address(source):
    return str(source).lower().startswith(ADDRESS_SCHEMES)


def kind_of(source):
    """What ``source`` is: ADDRESS, BUILT (a catalogue file this service built), EXPORT
    (the upstream's database export, ``.sql`` or ``.sql.gz``) or FOLDER."""
    if is_address(source):
        return ADDRESS
    if prebuilt.is_built_catalogue(source):
        return BUILT
    if Path(source).is_file():
        return EXPORT
    return FOLDER


@dataclass(frozen=True)
class LoadOptions:
    """How a load goes: what ``demoserv load`` takes from its options and settings, in
    one object from the command to every stage."""

    wait: bool = False  # another load running: wait for it (else stop)
    allow_empty: bool = False  # a resource the served catalogue has may be left empty
    force: bool = False  # load even the export served
    fetch_settings: fetch.Settings = field(default_factory=fetch.Settings)  # how it downloads
    keep_days: int = history.KEEP_DAYS  # days of the history of changes kept
    # The addresses the snapshot is written for (``store.snapshot.Address``).
    snapshot_at: tuple = ()
    report: Callable = silent  # receives the load's events (``reporting``)


def load_catalogue(source, database, report=silent, snapshot_at=()):
    """Load ``source`` (any kind) into the database file ``database``, even if it is the
    export served, reporting to ``report``, its snapshot written for the addresses
    ``snapshot_at``. Returns (the number of records of each resource, the same of the
    catalogue it replaced). See ``install`` for the lock, the checks and the previous
    file."""
    options = LoadOptions(force=True, snapshot_at=tuple(snapshot_at), report=report)
    outcome = load_source(source, database, options)
    return outcome.counts, outcome.before


@dataclass
class Outcome:
    """What a load did: ``changed`` False when the served catalogue was left as it is
    (``why`` says how the source was known to be the same)."""

    source: str  # the address or the file's name, as status shows it
    changed: bool
    counts: dict = field(default_factory=dict)
    before: dict = field(default_factory=dict)
    why: str = ""
    download: fetch.Download | None = None
    version_before: str | None = None
    version_after: str | None = None


def load_source(source, target, options=None):
    """Load ``source`` into the served file ``target`` unless it is the export served
    (``options``: a LoadOptions; its defaults when None). Returns an Outcome; raises
    CatalogueError, InstallError or fetch.FetchError in one line, leaving the served file
    as it was."""
    target = Path(target)
    options = options or LoadOptions()
    version_before = _version(target)
    kind = kind_of(source)
    if kind == ADDRESS:
        outcome = _load_address(str(source), target, options)
    elif kind == BUILT:
        source = Path(source)
        counts, before = prebuilt.install_built(
            source,
            target,
            wait=options.wait,
            allow_empty=options.allow_empty,
            snapshot_at=options.snapshot_at,
            report=options.report,
        )
        outcome = Outcome(source.name, True, counts, before)
    elif kind == EXPORT:
        outcome = _load_file(Path(source), target, options)
    else:
        outcome = _load_folder(Path(source), target, options)
    outcome.version_before = version_before
    outcome.version_after = _version(target) if outcome.changed else version_before
    if not outcome.changed:
        outcome.counts = facts.counts(target)
    return outcome


def _version(target):
    info = facts.version_and_time(target)
    return info.version if info else None


def _building(target, options):
    return install.building(target, wait=options.wait, report=options.report)


def _install(building, target, counts, options):
    return install.install(
        building,
        target,
        counts,
        allow_empty=options.allow_empty,
        snapshot_at=options.snapshot_at,
        report=options.report,
    )


def _unchanged(target, options, **outcome):
    """The Outcome of a load that leaves the served file as it is: its snapshot is
    written for the addresses it lacks (a file built before snapshots, a new address)."""
    snapshot.write(target, target, options.snapshot_at, options.report)
    return Outcome(changed=False, **outcome)


def _load_folder(source, target, options):
    paths = catalogue_files(source)  # a folder that cannot be read: said before the lock
    with _building(target, options) as building:
        counts = _build(
            lambda builder: _read_folder(builder, source, paths, options.report),
            building, target, provenance.of_path(source), options,
        )  # fmt: skip
        before = _install(building, target, counts, options)
    return Outcome(source.name, True, counts, before)


def _read_folder(builder, source, paths, report):
    counts = Loader(builder, paths, report).run()
    adhoc = adhoc_file(source)
    if adhoc is not None:
        adhoc_facts.read_file(builder, adhoc, report)
    adhoc_facts.derive(builder)
    return counts


def _load_file(source, target, options):
    with _building(target, options) as building:
        try:
            origin = provenance.of_file(source)
        except OSError as error:
            raise CatalogueError(f"{source}: cannot be read: {error.strerror}") from None
        if not options.force and provenance.same_export(origin, facts.provenance(target)):
            return _unchanged(target, options, source=source.name, why=SAME_BYTES)
        counts = _build_export(source, building, target, origin, options)
        before = _install(building, target, counts, options)
    return Outcome(source.name, True, counts, before)


def file_name(url):
    """The last part of the address's path (what errors about the dump's text name)."""
    return unquote(PurePosixPath(urlsplit(url).path).name) or urlsplit(url).hostname or url


def _load_address(url, target, options):
    shown = provenance.public_address(url)
    with _building(target, options) as building:
        served = facts.provenance(target)
        same_address = served.get("kind") == "url" and served.get("source") == shown
        known = served if same_address and not options.force else None
        download_path = building.with_name(building.name + ".download")
        try:
            try:
                with open(download_path, "w+b") as file:
                    download = fetch.fetch(
                        url,
                        file,
                        known=known,
                        settings=options.fetch_settings,
                        report=options.report,
                    )
            except OSError as error:
                raise install.InstallError(
                    f"{shown}: cannot be saved: {install.describe(error, download_path)}"
                ) from None
            if not download.changed:
                return _unchanged(
                    target, options, source=shown, why=download.why, download=download
                )
            if not options.force and provenance.same_export(download.facts, served):
                return _unchanged(target, options, source=shown, why=SAME_BYTES, download=download)
            try:
                counts = _build_export(download_path, building, target, download.facts, options)
            except CatalogueError as error:
                text = str(error).replace(download_path.name, file_name(url))
                raise CatalogueError(f"{shown}: {text}") from None
            before = _install(building, target, counts, options)
        finally:
            download_path.unlink(missing_ok=True)
    return Outcome(shown, True, counts, before, download=download)


def _build_export(source, building, target, origin, options):
    def fill(builder):
        try:
            return import_dump(source, builder, options.report)
        except DumpError as error:
            raise CatalogueError(str(error)) from None

    return _build(fill, building, target, origin, options)


def _build(fill, building, target, origin, options):
    """Build into the new file ``building`` that is to replace ``target`` what ``fill``
    writes with a Builder, and record in it its history of changes (``options.keep_days``)
    and ``origin`` (provenance facts). Returns the number of records of each resource."""
    builder = Builder(building)
    try:
        counts = fill(builder)
        # Known once the files are read: stop before the long work of finishing.
        install.refuse_to_empty(target, counts, allow_empty=options.allow_empty)
        builder.finish(counts, options.report)
    finally:
        builder.close()
    history.record(building, target, options.keep_days)
    provenance.record(building, origin)
    return counts
