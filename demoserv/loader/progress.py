"""What the commands print while they work and when they are done, and what a load's
events (``catalogue.reporting``) become: the command's display (progress bars on a
terminal, retries and warnings on standard error) or log lines; sizes, counts and
durations formatted one way (counts with thousands separators, sizes in kB/MB/GB with
one decimal, seconds with one).
Text that comes from a file or a server (names, messages, facts) is shown ``printable``:
it can neither move the cursor nor split a line."""

import logging
import sys
import time

import click

from . import reporting


def printable(text):
    """``text`` with each character that is not printable (a control character such as a
    carriage return or an escape, a line separator, a bidirectional mark) as its escape."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def say(text, err=False):
    """Print ``text`` (lines of a command's output) with every line ``printable``."""
    click.echo("\n".join(printable(line) for line in text.split("\n")), err=err)


def count(number):
    return f"{number:,}"


def size(number):
    for unit in ("bytes", "kB", "MB", "GB"):
        if number < 1000 or unit == "GB":
            return f"{number:,} {unit}" if unit == "bytes" else f"{number:,.1f} {unit}"
        number /= 1000


def seconds(number):
    return f"{number:,.1f} s"


def clock(number):
    """``m:ss`` or ``h:mm:ss``; ``--:--`` when unknown."""
    if number is None:
        return "--:--"
    number = int(number)
    hours, rest = divmod(number, 3600)
    return f"{hours}:{rest // 60:02}:{rest % 60:02}" if hours else f"{rest // 60}:{rest % 60:02}"


def counts(by_resource):
    return ", ".join(f"{count(number)} {name}" for name, number in by_resource.items())


def changes(after, before):
    """Each resource's count, as ``before → after`` when a catalogue was replaced."""
    if not before:
        return counts(after)
    names = list(after) + [name for name in before if name not in after]
    return ", ".join(
        f"{name} {count(before.get(name, 0))} → {count(after.get(name, 0))}" for name in names
    )


def _line(event):
    """A retry or a warning in one line, as the display and the log say it."""
    if isinstance(event, reporting.Retrying):
        return (
            f"Attempt {event.attempt} of {event.attempts} failed: {event.cause}; "
            f"next in {seconds(event.wait)}"
        )
    return event.message


class Display:
    """What a command shows of a load's events (``catalogue.reporting``): each retry of
    a download and each warning at once on standard error; with ``bars`` (on a
    terminal) also a bar per file read, a line redrawn as an export downloads and a line
    per step of the build."""

    def __init__(self, bars):
        self.bars = bars
        self.shown = None  # the bar of the file or download going on

    def __call__(self, event):
        if isinstance(event, (reporting.Retrying, reporting.Warned)):
            say(_line(event), err=True)
        elif not self.bars:
            return
        elif isinstance(event, reporting.StageStarted):
            if event.kind == reporting.STEP:
                click.echo(f"{event.name}...")
            else:
                self.shown = (FileBar if event.kind == reporting.FILE else DownloadLine)(event)
        elif isinstance(event, reporting.StageAdvanced):
            self.shown.advanced(event)
        elif isinstance(event, reporting.StageFinished) and event.kind != reporting.STEP:
            self.shown.finished()
            self.shown = None


class FileBar:
    """A file being read: a bar of its bytes, with records loaded and their rate, or
    (an export) the table being read and its rows."""

    def __init__(self, started):
        self.records = 0
        self.table = None
        self.started = time.monotonic()
        self.bar = click.progressbar(
            length=started.total,
            label=f"{printable(started.name):<22}",
            item_show_func=self._status,
            file=sys.stdout,
        )
        self.bar.__enter__()

    def _status(self, records):
        if records is None:
            return ""
        if self.table is not None:  # a dump: the table being read and its rows
            return f"{printable(self.table)}: {count(self.table_rows)} rows"
        rate = records / max(time.monotonic() - self.started, 1e-6)
        return f"{count(records)} records, {rate:,.0f}/s"

    def advanced(self, event):
        if event.table is not None:
            self.table, self.table_rows = event.table, event.rows
        self.records += event.records
        self.bar.update(event.size, self.records)

    def finished(self):
        self.bar.__exit__(None, None, None)


class DownloadLine:
    """An export downloading: one line redrawn as it arrives, a bar, bytes of the
    total, the rate and the time left."""

    WIDTH = 30
    EVERY = 0.1  # seconds between redraws

    def __init__(self, started):
        self.total, self.done, self.offset = started.total, started.done, started.done
        self.began = time.monotonic()
        self.drawn = 0.0
        self._draw()

    def advanced(self, event):
        self.done += event.size
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
                f"[{bar}] {size(self.done)} of {size(self.total)}, {size(rate)}/s, "
                f"{clock(left)} left"
            )
        else:
            text = f"{size(self.done)}, {size(rate)}/s"
        click.echo(f"\r{text:<78}", nl=False)


class LogLines:
    """A load's events as log lines (the server's build from the seed catalogue): a line
    for each stage done, what it read and how long it took (INFO), and for each retry
    and warning (WARNING)."""

    def __init__(self):
        self.log = logging.getLogger("demoserv.loader")
        self.started = self.bytes = None

    def __call__(self, event):
        if isinstance(event, (reporting.Retrying, reporting.Warned)):
            self.log.warning("%s", _line(event))
        elif isinstance(event, reporting.StageStarted):
            self.started, self.bytes = time.monotonic(), 0
        elif isinstance(event, reporting.StageAdvanced):
            self.bytes += event.size
        elif isinstance(event, reporting.StageFinished):
            what = event.name
            if event.kind == reporting.FILE:
                records = "" if event.records is None else f", {count(event.records)} records"
                what = f"read {event.name} ({size(self.bytes)}{records})"
            elif event.kind == reporting.DOWNLOAD:
                what = f"downloaded {event.name} ({size(self.bytes)})"
            elapsed = time.monotonic() - self.started
            self.log.info("%s in %s", what, seconds(elapsed))
