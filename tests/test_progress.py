"""What a load's events become (loader/progress.py): the command's display, with its bars on a
terminal and without them elsewhere, and log lines. The bars on a real terminal:
tests/test_load.py and tests/test_fetch.py."""

import logging
import re

from demoserv.loader.progress import Display, DownloadLine, LogLines
from demoserv.loader.reporting import (
    DOWNLOAD,
    FILE,
    STEP,
    Retrying,
    StageAdvanced,
    StageFinished,
    StageStarted,
    Warned,
)

RETRY = Retrying(1, 6, "HTTP 503 Busy\x1b[2J", 2.0)
WARNING = Warned("/srv/db.sqlite3: another load is running; waiting for it to finish")
# A load of a file, a step, and a download retried.
LOAD = [
    StageStarted(FILE, "productions.jsonl", 2_000),
    StageAdvanced(2_000, 12),
    StageFinished(FILE, "productions.jsonl", 12),
    StageStarted(STEP, "ranking"),
    StageFinished(STEP, "ranking"),
    StageStarted(DOWNLOAD, "https://example.org/export.sql.gz", None),
    StageAdvanced(1_500),
    StageFinished(DOWNLOAD, "https://example.org/export.sql.gz"),
    RETRY,
    WARNING,
]


def shown(display, events):
    for event in events:
        display(event)


def test_elsewhere_than_a_terminal_only_retries_and_warnings_are_shown(capsys):
    shown(Display(bars=False), LOAD)
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "Attempt 1 of 6 failed: HTTP 503 Busy\\x1b[2J; next in 2.0 s\n"
        "/srv/db.sqlite3: another load is running; waiting for it to finish\n"
    )


def test_with_bars_each_file_and_download_is_drawn_and_each_step_is_a_line(capsys):
    shown(Display(bars=True), LOAD)
    out, err = capsys.readouterr()
    # Not a terminal here: click draws the bar's label only.
    lines = out.replace("\r", "\n").splitlines()
    assert lines[0].startswith("productions.jsonl ") and "ranking..." in lines
    assert lines[-1].startswith("1.5 kB, ") and out.endswith("\n")
    assert err.count("\n") == 2


def test_the_download_line_shows_bytes_total_rate_and_time_left(capsys):
    shown(
        Display(bars=True),
        [
            StageStarted(DOWNLOAD, "export.sql.gz", 2_000_000),
            StageAdvanced(500_000),
            StageFinished(DOWNLOAD, "export.sql.gz"),
        ],
    )
    text = capsys.readouterr().out
    last = text.rstrip("\n").split("\r")[-1]
    assert last.startswith("[#######-----------------------] 500.0 kB of 2.0 MB, ")
    assert last.rstrip().endswith(" left") and "/s, " in last


def test_the_download_line_of_an_export_of_unknown_size_shows_bytes_and_rate(capsys, monkeypatch):
    monkeypatch.setattr(DownloadLine, "EVERY", 0)  # each chunk redrawn
    shown(
        Display(bars=True),
        [
            StageStarted(DOWNLOAD, "export.sql.gz", None),  # no Content-Length
            StageAdvanced(1_500),
            StageAdvanced(1_500),
            StageFinished(DOWNLOAD, "export.sql.gz"),
        ],
    )
    lines = capsys.readouterr().out.rstrip("\n").split("\r")[1:]
    assert [line.split(", ")[0] for line in lines] == ["0 bytes", "1.5 kB", "3.0 kB", "3.0 kB"]
    assert all(line.rstrip().endswith("/s") and "[" not in line for line in lines)


def test_a_resumed_download_counts_from_what_it_has(capsys):
    shown(Display(bars=True), [StageStarted(DOWNLOAD, "export.sql.gz", 2_000_000, 1_000_000)])
    assert "1.0 MB of 2.0 MB" in capsys.readouterr().out


def test_log_lines_say_each_stage_done_and_each_retry_and_warning(caplog):
    with caplog.at_level(logging.INFO, logger="demoserv.loader"):
        shown(LogLines(), LOAD)
    lines = [(record.levelname, record.getMessage()) for record in caplog.records]
    assert {record.name for record in caplog.records} == {"demoserv.loader"}
    timed, said = lines[:3], lines[3:]
    assert all(re.search(r" in [0-9.]+ s$", text) for _, text in timed)
    assert [(level, text.rsplit(" in ", 1)[0]) for level, text in timed] == [
        ("INFO", "read productions.jsonl (2.0 kB, 12 records)"),
        ("INFO", "ranking"),
        ("INFO", "downloaded https://example.org/export.sql.gz (1.5 kB)"),
    ]
    assert said == [
        ("WARNING", "Attempt 1 of 6 failed: HTTP 503 Busy\x1b[2J; next in 2.0 s"),
        ("WARNING", WARNING.message),
    ]
