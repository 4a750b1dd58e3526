"""``flask load SOURCE`` for every kind of source, and only when it changed.

SOURCE is a catalogue folder, an export file (``.sql``, ``.sql.gz``), a catalogue file
built by this service, or the ``http(s)`` address of an export. An address is downloaded
(``fetch``) under the load lock into ``.NAME.<hex>.loading.download`` beside the served
file ``NAME`` (removed on leaving, and by the next load after a ``kill -9``, like every
build file), then imported with every guarantee of a file load.

An export whose validators (``ETag``, ``Last-Modified``) or bytes (size and SHA-256) show
the one served is not loaded again, unless ``force``: the served file is left as it is.
"""

import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from urllib.parse import unquote, urlsplit

from . import fetch, install, prebuilt, provenance
from .load import CatalogueError, build_catalogue, load_catalogue

ADDRESS_SCHEMES = ("http://", "https://")
SAME_BYTES = "the same bytes as the export served (SHA-256)"


def is_address(source):
    return str(source).lower().startswith(ADDRESS_SCHEMES)


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


def load_source(
    source,
    target,
    progress=None,
    *,
    wait=False,
    allow_empty=False,
    force=False,
    settings=None,
    download_progress=None,
    sleep=time.sleep,
):
    """Load ``source`` into the served file ``target`` unless it is the export served.
    Returns an Outcome; raises CatalogueError, InstallError or fetch.FetchError in one
    line, leaving the served file as it was."""
    target = Path(target)
    version_before = _version(target)
    if is_address(source):
        outcome = _load_address(
            str(source), target, progress, wait, allow_empty, force, settings,
            download_progress, sleep,
        )  # fmt: skip
    else:
        source = Path(source)
        if prebuilt.is_built_catalogue(source):
            counts, before = prebuilt.install_built(
                source, target, wait=wait, allow_empty=allow_empty
            )
            outcome = Outcome(source.name, True, counts, before)
        elif source.is_file():
            outcome = _load_file(source, target, progress, wait, allow_empty, force)
        else:
            counts, before = load_catalogue(
                source, target, progress, wait=wait, allow_empty=allow_empty
            )
            outcome = Outcome(source.name, True, counts, before)
    outcome.version_before = version_before
    outcome.version_after = _version(target) if outcome.changed else version_before
    if not outcome.changed:
        outcome.counts = install.served_counts(target)
    return outcome


def _version(target):
    info = install._version_and_time(target)
    return info[0] if info else None


def _load_file(source, target, progress, wait, allow_empty, force):
    with install.building(target, wait=wait) as building:
        try:
            facts = provenance.of_file(source)
        except OSError as error:
            raise CatalogueError(f"{source}: cannot be read: {error.strerror}") from None
        if not force and provenance.same_export(facts, provenance.read(target)):
            return Outcome(source.name, False, why=SAME_BYTES)
        counts = build_catalogue(
            source, building, target, progress, allow_empty=allow_empty, origin=facts
        )
        before = install.install(building, target, counts, allow_empty=allow_empty)
    return Outcome(source.name, True, counts, before)


def file_name(url):
    """The last part of the address's path (what errors about the dump's text name)."""
    return unquote(PurePosixPath(urlsplit(url).path).name) or urlsplit(url).hostname or url


def _load_address(
    url, target, progress, wait, allow_empty, force, settings, download_progress, sleep
):
    shown = provenance.public_address(url)
    with install.building(target, wait=wait) as building:
        served = provenance.read(target)
        same_address = served.get("kind") == "url" and served.get("source") == shown
        known = served if same_address and not force else None
        download_path = building.with_name(building.name + ".download")
        try:
            try:
                with open(download_path, "w+b") as file:
                    download = fetch.fetch(
                        url,
                        file,
                        known=known,
                        settings=settings,
                        progress=download_progress,
                        sleep=sleep,
                    )
            except OSError as error:
                raise install.InstallError(
                    f"{shown}: cannot be saved: {install.describe(error, download_path)}"
                ) from None
            if not download.changed:
                return Outcome(shown, False, why=download.why, download=download)
            if not force and provenance.same_export(download.facts, served):
                return Outcome(shown, False, why=SAME_BYTES, download=download)
            try:
                counts = build_catalogue(
                    download_path,
                    building,
                    target,
                    progress,
                    allow_empty=allow_empty,
                    origin=download.facts,
                )
            except CatalogueError as error:
                text = str(error).replace(download_path.name, file_name(url))
                raise CatalogueError(f"{shown}: {text}") from None
            before = install.install(building, target, counts, allow_empty=allow_empty)
        finally:
            download_path.unlink(missing_ok=True)
    return Outcome(shown, True, counts, before, download=download)
