"""What a load reports: the error that stops it, and the events it emits as it goes.

A reporter is any callable that takes one event. Every stage of a load and the
install around it report to the one the load was given (``sources.LoadOptions.report``),
in order:

- ``StageStarted``, ``StageAdvanced``..., ``StageFinished`` for each stage: a catalogue
  file or an export read (FILE), an export downloaded (DOWNLOAD, one stage an attempt),
  a step of the build (STEP);
- ``Retrying`` before each further attempt of a download;
- ``Warned`` for what does not stop the load (a wait for the lock, a build file of a
  killed load removed, an owner that cannot be kept).

Its consumers: the command's display (``demoserv/loader/progress.py``: bars on a terminal,
retries and warnings on standard error), log lines (``progress.LogLines``: the server's
build from the seed catalogue), or ``silent`` (tests, library use)."""

from contextlib import contextmanager
from dataclasses import dataclass

FILE, DOWNLOAD, STEP = "file", "download", "step"


class CatalogueError(Exception):
    """A catalogue that cannot be loaded, and where and why."""


@dataclass(frozen=True)
class StageStarted:
    """A stage begins: a FILE read or a DOWNLOAD (``total``: its bytes, None if unknown;
    ``done``: bytes already received, by a resumed download), or a STEP of the build."""

    kind: str
    name: str
    total: int | None = None
    done: int = 0


@dataclass(frozen=True)
class StageAdvanced:
    """The stage going on: ``size`` more bytes, ``records`` more records (lines of a
    catalogue file); reading an export, ``table`` is the table being read and ``rows``
    its rows so far."""

    size: int = 0
    records: int = 0
    table: str | None = None
    rows: int = 0


@dataclass(frozen=True)
class StageFinished:
    """A stage is over: a file read to its end (``records``: the records a catalogue
    file gave), a step done, or a download's attempt ended, its body whole or cut (a
    ``Retrying`` or the load's error follows a cut one). A load that fails stops in its
    stage, without this."""

    kind: str
    name: str
    records: int | None = None


@dataclass(frozen=True)
class Retrying:
    """Attempt ``attempt`` of at most ``attempts`` failed with ``cause``; the next starts
    in ``wait`` seconds."""

    attempt: int
    attempts: int
    cause: str
    wait: float


@dataclass(frozen=True)
class Warned:
    """Something the load does not stop for, in one line naming the path."""

    message: str


def silent(event):
    """The reporter that ignores every event."""


@contextmanager
def step(report, name):
    """A STEP of the build: StageStarted, then StageFinished once the block is done."""
    report(StageStarted(STEP, name))
    yield
    report(StageFinished(STEP, name))
