"""``flask load DIR`` and ``flask export DIR``: thin wrappers over the catalogue package."""

import sys
import time
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from ..db import database_path, get_database
from . import fetch, install, sources, status
from .export import export_catalogue
from .reporting import CatalogueError, Progress


class TerminalProgress(Progress):
    """A progress bar per file: bytes read, records loaded and their rate."""

    def __init__(self):
        self.bar = None
        self.table = None

    def file_started(self, name, size):
        self.records = 0
        self.started = time.monotonic()
        self.bar = click.progressbar(
            length=size, label=f"{name:<22}", item_show_func=self._status, file=sys.stdout
        )
        self.bar.__enter__()

    def _status(self, records):
        if records is None:
            return ""
        if self.table is not None:  # a dump: the table being read and its rows
            return f"{self.table}: {self.table_rows:,} rows"
        rate = records / max(time.monotonic() - self.started, 1e-6)
        return f"{records:,} records, {rate:,.0f}/s"

    def reading(self, table, rows):
        self.table, self.table_rows = table, rows

    def advanced(self, size, records):
        self.records += records
        self.bar.update(size, self.records)

    def file_finished(self, name, records):
        self.bar.__exit__(None, None, None)

    def stage(self, description):
        click.echo(f"{description}...")


class DownloadBar(fetch.DownloadProgress):
    """On a terminal, one line redrawn as the export arrives: a bar, bytes of the
    total, the rate and the time left."""

    WIDTH = 30
    EVERY = 0.1  # seconds between redraws

    def started(self, total, offset):
        self.total, self.done, self.offset = total, offset, offset
        self.began = time.monotonic()
        self.drawn = 0.0
        self._draw()

    def advanced(self, size):
        self.done += size
        if time.monotonic() - self.drawn >= self.EVERY:
            self._draw()

    def finished(self):
        self._draw()
        click.echo("")

    def _draw(self):
        self.drawn = time.monotonic()
        rate = (self.done - self.offset) / max(self.drawn - self.began, 1e-6)
        if self.total:
            filled = int(min(self.done / self.total, 1) * self.WIDTH)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            left = (self.total - self.done) / rate if rate > 0 else None
            text = (
                f"[{bar}] {_size(self.done)} of {_size(self.total)}, {_size(rate)}/s, "
                f"{_duration(left)} left"
            )
        else:
            text = f"{_size(self.done)}, {_size(rate)}/s"
        click.echo(f"\r{text:<78}", nl=False)


def _duration(seconds):
    if seconds is None:
        return "--:--"
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}:{rest // 60:02}:{rest % 60:02}" if hours else f"{rest // 60}:{rest % 60:02}"


def _summary(counts):
    return ", ".join(f"{count} {name}" for name, count in counts.items())


def _changes(counts, before):
    """Each resource's count, as ``before → after`` when a catalogue was replaced."""
    if not before:
        return _summary(counts)
    names = list(counts) + [name for name in before if name not in counts]
    return ", ".join(f"{name} {before.get(name, 0)} → {counts.get(name, 0)}" for name in names)


def _fail(error):
    click.echo(str(error), err=True)
    sys.exit(getattr(error, "exit_status", 1))


@click.command("load")
@click.argument("source")
@click.option("--wait", is_flag=True, help="If another load is running, wait for it to end.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Load even if a resource that the served catalogue has would be left empty.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Load even if the export is the one served (same validators or bytes).",
)
@with_appcontext
def load_command(source, wait, allow_empty, force):
    """Load SOURCE, replacing the served catalogue (kept as the previous one for
    ``flask rollback``): a catalogue folder, the upstream's daily database export
    (a .sql or .sql.gz file, or its http(s) address), or a catalogue file this service
    built (.sqlite3). An export that is the one served is not loaded again."""
    target = database_path(current_app)
    terminal = sys.stdout.isatty()
    progress = TerminalProgress() if terminal else Progress()
    download_progress = DownloadBar() if terminal else None
    settings = fetch.Settings.from_config(current_app.config)
    started = time.monotonic()
    # Everything, the summary included, under the signal handling: once the new file
    # is in place a signal can no longer turn the success into a failure.
    with install.handling_signals(target):
        try:
            outcome = sources.load_source(
                source,
                target,
                progress,
                wait=wait,
                allow_empty=allow_empty,
                force=force,
                settings=settings,
                download_progress=download_progress,
            )
        except (CatalogueError, install.InstallError, fetch.FetchError) as error:
            _fail(error)
        elapsed = time.monotonic() - started
        if outcome.download is not None and outcome.download.received:
            click.echo(_downloaded(outcome))
        click.echo(_loaded(outcome, target, elapsed))


def _size(count):
    for unit in ("bytes", "kB", "MB", "GB"):
        if count < 1000 or unit == "GB":
            return f"{count:,} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1000


def _downloaded(outcome):
    download = outcome.download
    rate = download.received / max(download.elapsed, 1e-6)
    notes = [f"{download.attempts} attempts"] if download.attempts > 1 else []
    if download.resumed:
        notes.append(f"resumed {download.resumed}×")
    if download.restarted:
        notes.append(f"restarted {download.restarted}×")
    more = f"; {', '.join(notes)}" if notes else ""
    return (
        f"Downloaded {outcome.source}: {_size(download.received)} in "
        f"{download.elapsed:.1f} s ({_size(rate)}/s{more})."
    )


def _loaded(outcome, target, elapsed):
    if not outcome.changed:
        return (
            f"Unchanged: {target} already serves {outcome.source}: {outcome.why}; "
            f"nothing loaded (version {outcome.version_before})."
        )
    if outcome.version_before is None:
        records = f"version {outcome.version_after}"
    elif outcome.version_before == outcome.version_after:
        records = f"the same records as before, version {outcome.version_after}"
    else:
        records = f"records changed, version {outcome.version_before} → {outcome.version_after}"
    return (
        f"Loaded {outcome.source}: {_changes(outcome.counts, outcome.before)} into {target} "
        f"in {elapsed:.1f} s ({records})."
    )


@click.command("rollback")
@click.option("--wait", is_flag=True, help="If a load is running, wait for it to end.")
@with_appcontext
def rollback_command(wait):
    """Serve the previous catalogue again; the current one becomes the previous."""
    target = database_path(current_app)
    with install.handling_signals(target):
        try:
            counts = install.rollback(target, wait=wait)
        except install.InstallError as error:
            _fail(error)
        click.echo(f"Rolled back {target} to its previous catalogue: {_summary(counts)}.")


@click.command("status")
@with_appcontext
def status_command():
    """Say what is served: its source, the export's validators and date, when it was
    loaded, its version and record counts, and the previous catalogue kept for
    ``flask rollback``."""
    target = database_path(current_app)
    facts = status.status(target)
    if facts is None:
        _fail(install.InstallError(f"{target}: no catalogue served (load one with flask load)"))
    click.echo("\n".join(status.lines(target, facts)))


@click.command("export")
@click.argument("target", type=click.Path(path_type=Path, file_okay=False))
@with_appcontext
def export_command(target):
    """Write the served catalogue to the folder TARGET as catalogue files."""
    catalogue = get_database().current()
    with catalogue.engine.connect() as connection:
        counts = export_catalogue(connection, target)
    click.echo(f"Exported {_summary(counts)} to {target}.")


def init_app(app):
    app.cli.add_command(load_command)
    app.cli.add_command(rollback_command)
    app.cli.add_command(export_command)
    app.cli.add_command(status_command)
