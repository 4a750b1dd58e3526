"""The ``demoserv`` command: serve, load, status, rollback, export and version.

Every subcommand takes ``--database PATH`` and finds the database by the one rule of
``db.resolve_database``. The same commands (but serve) are Flask commands too
(``flask --app demoserv load ...``), and ``demoserv-serve`` is ``demoserv serve``. A
mistake is one line on standard error and a non-zero exit, never a traceback."""

import errno
import functools
import sys
import textwrap
import time
from pathlib import Path
from urllib.parse import urlsplit

import click
from flask import current_app
from flask.cli import ScriptInfo

from ..loader import fetch, install, progress, snapshot, sources, status_facts
from ..loader.export import export_catalogue
from ..loader.reporting import CatalogueError
from ..server import serving
from ..settings import PACKAGED, packaged_catalogue
from ..store import facts
from ..store import snapshot as snapshot_format
from ..version import __version__
from ..web.address_style import snapshot_addresses
from ..web.db import DEFAULT_DATABASE, database_path, get_database


class OneLineErrors:
    """Click's usage errors as one line naming the command and its help, in place of
    click's usage block."""

    def main(self, args=None, prog_name=None, **extra):
        extra["standalone_mode"] = False
        try:
            result = super().main(args, prog_name, **extra)
        except click.exceptions.NoArgsIsHelpError as error:
            click.echo(error.ctx.get_help())
            sys.exit(0)
        except click.UsageError as error:
            command = error.ctx.command_path if error.ctx else "demoserv"
            message = error.format_message().rstrip(".")
            click.echo(f"{command}: {message} (see {command} --help)", err=True)
            sys.exit(error.exit_code)
        except click.ClickException as error:
            click.echo(error.format_message(), err=True)
            sys.exit(error.exit_code)
        except click.Abort:
            click.echo("Interrupted.", err=True)
            sys.exit(130)
        sys.exit(result if isinstance(result, int) else 0)


class Group(OneLineErrors, click.Group):
    pass


class Command(OneLineErrors, click.Command):
    pass


def fail(message, exit_status=1):
    progress.say(message, err=True)
    sys.exit(exit_status)


DATABASE_HELP = (
    "The database file. A relative path is taken from the current folder, as in "
    f"DEMOSERV_DATABASE, which this replaces. Default: {DEFAULT_DATABASE} in the instance "
    "folder (demoserv status shows which file and why)."
)


def database_option(function):
    return click.option(
        "--database", metavar="PATH", type=click.Path(dir_okay=False), help=DATABASE_HELP
    )(function)


def app_for(database):
    """The app whose database a command uses: Flask's (``flask --app demoserv``) unless
    ``--database`` names another, else one made for the command."""
    from ..settings import SettingError
    from ..web.factory import create_app

    info = click.get_current_context().find_object(ScriptInfo)
    try:
        if database is None and info is not None:
            return info.load_app()
        return create_app(database=database)
    except SettingError as error:
        fail(str(error))


def with_app(function):
    """Run the command in an app context, with ``--database``."""

    @database_option
    @functools.wraps(function)
    def command(database, **arguments):
        app = app_for(database)
        with app.app_context():
            return function(**arguments)

    return command


def database_origin(app):
    """Why the database is where it is: the option, the setting (``create_app`` noted
    which), or the default."""
    return (
        app.config.get("DATABASE_ORIGIN")
        or f"the default: {DEFAULT_DATABASE} in the instance folder"
    )


def existing_database():
    """The database of a command that reads it: one line and exit 1 if it is missing."""
    target = database_path(current_app)
    if not target.exists():
        fail(
            f"{target} does not exist (database from {database_origin(current_app)}): "
            "name another with --database, or load a catalogue into it with demoserv load"
        )
    return target


def checked_source(source):
    """``source`` as given, or one line and exit 2 when it cannot be a catalogue."""
    scheme = urlsplit(source).scheme
    if "://" in source and not sources.is_address(source):
        fail(
            f"{source}: the address scheme {scheme}:// is not supported: "
            "give an http:// or https:// address, a file or a folder",
            2,
        )
    if sources.is_address(source):
        return source
    path = Path(source)
    if not path.exists() and source in PACKAGED:
        return str(packaged_catalogue(source))
    if not path.exists():
        fail(
            f"{source} does not exist: give a catalogue folder, an export (.sql or "
            ".sql.gz), a built catalogue file (.sqlite3) or an http(s) address",
            2,
        )
    if path.is_file() and path.name.endswith(".gz"):
        with open(path, "rb") as file:
            if file.read(2) != fetch.GZIP_MAGIC:
                fail(
                    f"{source} is not gzip-compressed, though its name ends in .gz: "
                    "give the export as downloaded, or name it .sql if it is plain SQL",
                    2,
                )
    return source


MAIN_HELP = f"""demoserv serves a demoscene catalogue as a read-only, paginated JSON API that
answers like the upstream catalogue (Demozoo).

Start with "demoserv serve": it builds a database from the seed catalogue on its
first start and listens on http://127.0.0.1:8080/api/v1/. Load the upstream's
export with "demoserv load ADDRESS". Each command has its own --help.

Settings are DEMOSERV_* variables ("demoserv settings" lists them); the database
is found the same way by every command: --database, else DEMOSERV_DATABASE, else
{DEFAULT_DATABASE} in the instance folder.
"""


@click.group(cls=Group, help=MAIN_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="demoserv", message="%(prog)s %(version)s"
)
def main():
    """The demoserv command: its subcommands below (its help is MAIN_HELP)."""


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
@with_app
def load_command(source, wait, allow_empty, force):
    """Load SOURCE into the database, replacing the catalogue it serves.

    SOURCE is the upstream's daily export (its http:// or https:// address, or the
    downloaded .sql.gz or .sql file), a catalogue folder, a catalogue file this
    service built (.sqlite3), or seed or sample, the catalogues in the package (where
    no folder of that name is in the current folder). The catalogue served before is
    kept for demoserv rollback. An export that is the one served is not loaded again.
    A running server serves the new catalogue from its next request on.
    """
    source = checked_source(source)
    target = database_path(current_app)
    try:
        settings = fetch.Settings.from_config(current_app.config)
    except (TypeError, ValueError) as error:
        fail(f"a DEMOSERV_FETCH_* setting is wrong: {error}")
    options = sources.LoadOptions(
        wait=wait,
        allow_empty=allow_empty,
        force=force,
        fetch_settings=settings,
        keep_days=current_app.config["CHANGES_KEPT_DAYS"],
        snapshot_at=snapshot_addresses(current_app.config),
        report=progress.Display(bars=sys.stdout.isatty()),
    )
    started = time.monotonic()
    # Everything, the summary included, under the signal handling: once the new file
    # is in place a signal can no longer turn the success into a failure.
    with install.handling_signals(target):
        try:
            outcome = sources.load_source(source, target, options)
        except (CatalogueError, install.InstallError, fetch.FetchError) as error:
            fail(str(error), getattr(error, "exit_status", 1))
        elapsed = time.monotonic() - started
        if outcome.download is not None and outcome.download.received:
            progress.say(_downloaded(outcome))
        progress.say(_loaded(outcome, target, elapsed))


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
        f"Downloaded {outcome.source}: {progress.size(download.received)} in "
        f"{progress.seconds(download.elapsed)} ({progress.size(rate)}/s{more})."
    )


def _records_changed(target, version):
    """Whether the load that made ``version`` changed records: the history records a
    load only when it does (a load can change only what the /api/adhoc/ answers hold,
    which catalogue files do not all carry)."""
    history = facts.history(target)
    return history is None or history["last_load"]["version"] == version


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
    elif _records_changed(target, outcome.version_after):
        records = f"records changed, version {outcome.version_before} → {outcome.version_after}"
    else:
        records = (
            "the same records as before, other /api/adhoc/ answers, version "
            f"{outcome.version_before} → {outcome.version_after}"
        )
    return (
        f"Loaded {outcome.source}: {progress.changes(outcome.counts, outcome.before)} into "
        f"{target} in {progress.seconds(elapsed)} ({records})."
    )


@click.command("rollback")
@click.option("--wait", is_flag=True, help="If a load is running, wait for it to end.")
@with_app
def rollback_command(wait):
    """Serve the previous catalogue again; the one served now becomes the previous.

    Files left by an interrupted load are removed. A running server serves the
    previous catalogue from its next request on.
    """
    target = database_path(current_app)
    if not target.exists() and not install.previous_path(target).exists():
        existing_database()
    with install.handling_signals(target):
        try:
            counts = install.rollback(
                target,
                wait=wait,
                snapshot_at=snapshot_addresses(current_app.config),
                report=progress.Display(bars=False),
            )
        except install.InstallError as error:
            fail(str(error))
        progress.say(f"Rolled back {target} to its previous catalogue: {progress.counts(counts)}.")


@click.command("status")
@with_app
def status_command():
    """Say which database is used and why, and what it serves.

    That is: the catalogue's source, the export's validators and date, when it was
    loaded, its version and record counts, the previous catalogue kept for demoserv
    rollback, and any files an interrupted load left.
    """
    target = existing_database()
    found = status_facts.status(target)
    if found is None:
        fail(f"{target}: not a catalogue database: load one into it with demoserv load")
    lines = status_facts.lines(target, found)
    lines.insert(1, f"  {'database from:':<15}{database_origin(current_app)}")
    lines += ["", *_snapshot_lines(target, found["version"])]
    leftovers = install.leftovers(target)
    if leftovers:
        lines += ["", "Left by an interrupted load (the next load or rollback removes them):"]
        lines += [f"  {path} ({progress.size(path.stat().st_size)})" for path in leftovers]
    progress.say("\n".join(lines))


def _snapshot_lines(target, version):
    """The served catalogue's snapshot: each address's folder and files."""
    written = snapshot.written(target, version)
    if not written:
        return [
            f"Snapshot (/api/v1/snapshot/): none for version {version} in "
            f"{snapshot_format.folder(target)} (the next load writes it for DEMOSERV_SNAPSHOT_URLS)"
        ]
    lines = ["Snapshot (/api/v1/snapshot/):"]
    for address, folder, files in written:
        total = sum(file["bytes"] for file in files.values())
        lines.append(
            f"  {address['api_root']} ({address['field']} at {address['site']}): "
            f"{folder}, {progress.size(total)}"
        )
        for name, file in files.items():
            lines.append(
                f"    {snapshot_format.file_name(name):<28}{file['count']:>11,} records"
                f"{progress.size(file['bytes']):>12}"
            )
    return lines


@click.command("export")
@click.argument("target", type=click.Path(path_type=Path, file_okay=False))
@with_app
def export_command(target):
    """Write the served catalogue to the folder TARGET as catalogue files.

    The files are those demoserv load reads from a folder: one JSON-lines file per
    resource.
    """
    existing_database()
    catalogue = get_database().current()
    with catalogue.engine.connect() as connection:
        counts = export_catalogue(connection, target)
    progress.say(f"Exported {progress.counts(counts)} to {target}.")


@click.command("settings")
@with_app
def settings_command():
    """List every setting: its name in the environment, its value here and what it
    does. Set one as DEMOSERV_<NAME> in the environment or <NAME> in the instance
    folder's config.py."""
    from ..settings import PREFIX, SETTINGS

    click.echo(f"Instance folder: {current_app.instance_path}")
    for setting in SETTINGS:
        value = current_app.config[setting.name]
        click.echo(f"\n{PREFIX}{setting.name} = {'' if value is None else value}")
        click.echo(textwrap.fill(setting.help, initial_indent="  ", subsequent_indent="  "))


@click.command("version")
def version_command():
    """Show the version of demoserv."""
    click.echo(f"demoserv {__version__}")


# Waitress settings of serve: (option, click type, help); their defaults are serving.DEFAULTS.
WAITRESS_OPTIONS = (
    ("threads", click.IntRange(min=1), "worker threads"),
    ("connection-limit", click.IntRange(min=1), "connections open at once"),
    ("channel-timeout", click.IntRange(min=1), "seconds an idle connection is kept"),
    ("cleanup-interval", click.IntRange(min=1), "seconds between checks for idle connections"),
    ("backlog", click.IntRange(min=1), "connections waiting to be accepted"),
)


class Address(click.ParamType):
    name = "HOST:PORT"

    def convert(self, value, param, ctx):
        host, colon, port = value.rpartition(":")
        if not colon or not host or not port.isdigit() or int(port) > 65535:
            self.fail(f"{value!r} is not HOST:PORT with a port from 0 to 65535", param, ctx)
        return value


def serve_options(function):
    for name, kind, what in reversed(WAITRESS_OPTIONS):
        default = serving.DEFAULTS[name.replace("-", "_")]
        function = click.option(f"--{name}", type=kind, help=f"The {what} (default {default}).")(
            function
        )
    options = (
        click.option(
            "--listen",
            multiple=True,
            type=Address(),
            help="Address to listen on; repeat for several. Default 127.0.0.1:8080. "
            "Port 0: any free port.",
        ),
        click.option(
            "--catalogue",
            type=click.Choice(sorted(PACKAGED)),
            help="Serve a catalogue in the package: seed (a few records of each resource) "
            "or sample (the upstream's sample export, about 2,350 productions). It is "
            "loaded into the database unless the database serves it already; a database "
            "that does not exist is built.",
        ),
        click.option(
            "--request-timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=serving.REQUEST_TIMEOUT,
            show_default=True,
            help="Seconds from a request's first byte to its last before the connection is closed.",
        ),
        click.option("--trusted-proxy", help="Address of the reverse proxy in front."),
        click.option(
            "--trusted-proxy-count", type=click.IntRange(min=1), help="Proxies in front to trust."
        ),
        click.option(
            "--trusted-proxy-headers",
            help='Proxy headers to apply, space-separated ("x-forwarded-proto x-forwarded-host").',
        ),
        click.option("--url-scheme", help="Scheme of the url fields when no proxy says."),
        database_option,
        click.option(
            "--ready-file",
            metavar="PATH",
            help="Once the server listens and its catalogue is ready, write its base URL "
            "(one line per --listen) to PATH; PATH is removed at start.",
        ),
    )
    for option in reversed(options):
        function = option(function)
    return function


@click.command("serve", cls=Command, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(
    __version__, "--version", prog_name="demoserv", message="%(prog)s %(version)s"
)
@serve_options
def serve_command(listen, catalogue, request_timeout, database, ready_file, **waitress):
    """Serve the API with waitress on 127.0.0.1:8080 (see --listen).

    On the first start, when the default database (in the instance folder) does not
    exist, it is built from the seed catalogue (DEMOSERV_SEED_DIR; empty: none). A
    database named by --database or DEMOSERV_DATABASE that does not exist is refused,
    unless --catalogue asks for it to be built. Loads into the database (demoserv
    load) are served from the next request on, without a restart. Beyond loopback,
    set DEMOSERV_TRUSTED_HOSTS (see demoserv settings).
    """
    from ..settings import SettingError
    from ..web import factory

    settings = {name: value for name, value in waitress.items() if value is not None}
    settings["listen"] = " ".join(listen or ["127.0.0.1:8080"])
    try:
        serving.check_settings(settings)
    except ValueError as error:
        fail(f"demoserv serve: {error} (see demoserv serve --help)", 2)
    if ready_file:
        Path(ready_file).unlink(missing_ok=True)  # a file of an earlier run must not count
    folder = None if catalogue is None else packaged_catalogue(catalogue)
    try:
        app = factory.create_app(database=database)
    except SettingError as error:
        fail(str(error))
    refusal = factory.missing_database(app, folder)
    if refusal is not None:
        fail(f"demoserv serve: {refusal}, or serve it with --catalogue seed", 2)
    # Listening first: a taken port is said before anything is built or opened.
    try:
        listener = serving.Listener(settings, request_timeout=request_timeout)
    except OSError as error:
        fail(f"demoserv serve: {_listen_failure(error, settings['listen'])}")
    factory.start_serving(app, folder, listener.urls)
    serving.serve(listener, app, ready_file=ready_file)


def serve_main(argv=None):
    """``demoserv-serve``: the same as ``demoserv serve``."""
    serve_command.main(argv, prog_name="demoserv-serve")


def _listen_failure(error, listen):
    if error.errno == errno.EADDRINUSE:
        return (
            f"cannot listen on {listen}: the address is in use by another program: stop "
            "it, or choose another port with --listen HOST:PORT"
        )
    if error.errno == errno.EACCES:
        return (
            f"cannot listen on {listen}: permission denied (ports below 1024 need "
            "privileges): choose a port of 1024 or more with --listen HOST:PORT"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return (
            f"cannot listen on {listen}: no such address on this machine: choose one of "
            "its addresses with --listen HOST:PORT"
        )
    return f"cannot listen on {listen}: {error.strerror or error}"


COMMANDS = (
    load_command,
    status_command,
    rollback_command,
    export_command,
    settings_command,
    version_command,
)
for _command in (serve_command, *COMMANDS):
    main.add_command(_command)


def init_app(app):
    """The commands as Flask commands too (``flask --app demoserv load ...``)."""
    for command in COMMANDS:
        app.cli.add_command(command)
