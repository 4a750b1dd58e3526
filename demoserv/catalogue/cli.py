"""``flask load DIR`` and ``flask export DIR``: thin wrappers over the catalogue package."""

import sys
import time
from pathlib import Path

import click
from flask import current_app
from flask.cli import with_appcontext

from ..db import database_path, get_database
from . import install, prebuilt
from .export import export_catalogue
from .load import CatalogueError, Progress, load_catalogue


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
@click.argument("source", type=click.Path(path_type=Path))
@click.option("--wait", is_flag=True, help="If another load is running, wait for it to end.")
@click.option(
    "--allow-empty",
    is_flag=True,
    help="Load even if a resource that the served catalogue has would be left empty.",
)
@with_appcontext
def load_command(source, wait, allow_empty):
    """Load SOURCE, replacing the served catalogue (kept as the previous one for
    ``flask rollback``): a catalogue folder, the upstream's daily database export
    (a .sql or .sql.gz file), or a catalogue file this service built (.sqlite3)."""
    target = database_path(current_app)
    built = prebuilt.is_built_catalogue(source)
    progress = TerminalProgress() if sys.stdout.isatty() else Progress()
    started = time.monotonic()
    # Everything, the summary included, under the signal handling: once the new file
    # is in place a signal can no longer turn the success into a failure.
    with install.handling_signals(target):
        try:
            if built:
                counts, before = prebuilt.install_built(
                    source, target, wait=wait, allow_empty=allow_empty
                )
            else:
                counts, before = load_catalogue(
                    source, target, progress, wait=wait, allow_empty=allow_empty
                )
        except (CatalogueError, install.InstallError) as error:
            _fail(error)
        elapsed = time.monotonic() - started
        click.echo(f"Loaded {_changes(counts, before)} into {target} in {elapsed:.1f} s.")


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
