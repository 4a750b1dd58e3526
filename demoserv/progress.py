"""What the commands print while they work and when they are done: progress bars on a
terminal, retries of a download, and sizes, counts and durations formatted one way
(counts with thousands separators, sizes in kB/MB/GB with one decimal, seconds with one).
Text that comes from a file or a server (names, messages, facts) is shown ``printable``:
it can neither move the cursor nor split a line."""

import sys
import time

import click

from .catalogue import fetch
from .catalogue.reporting import Progress


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


class TerminalProgress(Progress):
    """A progress bar per file: bytes read, records loaded and their rate."""

    def __init__(self):
        self.bar = None
        self.table = None

    def file_started(self, name, size):
        self.records = 0
        self.started = time.monotonic()
        self.bar = click.progressbar(
            length=size,
            label=f"{printable(name):<22}",
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

    def reading(self, table, rows):
        self.table, self.table_rows = table, rows

    def advanced(self, size, records):
        self.records += records
        self.bar.update(size, self.records)

    def file_finished(self, name, records):
        self.bar.__exit__(None, None, None)

    def stage(self, description):
        click.echo(f"{description}...")


class Retries(fetch.DownloadProgress):
    """Each failed attempt of a download, at once, on standard error: its cause and the
    time until the next."""

    def retrying(self, attempt, attempts, cause, wait):
        say(f"Attempt {attempt} of {attempts} failed: {cause}; next in {seconds(wait)}", err=True)


class DownloadBar(Retries):
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
                f"[{bar}] {size(self.done)} of {size(self.total)}, {size(rate)}/s, "
                f"{clock(left)} left"
            )
        else:
            text = f"{size(self.done)}, {size(rate)}/s"
        click.echo(f"\r{text:<78}", nl=False)
