"""Measure the upstream's /api/adhoc/ answers at full size: the time the import spends
building them (beside the whole import's), the stored answers' sizes, and each path's
first ask in a fresh server process (over HTTP, demoserv-serve on loopback).

    python bench/adhoc.py --dump /work/bench-data/full-375000.sql.gz [--work bench/out]
                          [--baseline DIR] [--reuse]

Prints Markdown tables; ``--reuse`` measures the file a previous run loaded.
``--baseline DIR``: also import the same export, just before, with the code in DIR (a
checkout without these answers, e.g. ``git archive main | tar -x -C DIR``), for the
import's added time measured side by side.
"""

import argparse
import http.client
import os
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from servers import start_demoserv  # noqa: E402

from demoserv.loader.reporting import StageFinished, StageStarted  # noqa: E402
from demoserv.loader.sources import load_catalogue  # noqa: E402

PATHS = [
    "pouet-credits/",
    "pouet/prod-demozoo-ids-by-pouet-id/",
    "pouet/group-demozoo-ids-by-pouet-id/",
    "pouet/party-demozoo-ids-by-pouet-id/",
    "zxdemo/prod-demozoo-ids-by-zxdemo-id/",
    "zxdemo/group-demozoo-ids-by-zxdemo-id/",
    "zxdemo/party-demozoo-ids-by-zxdemo-id/",
    "eq/demos/",
    "group-abbreviations/",
]
MONTH_PATHS = ["klubi/demoshow-prods/", "scenesat/monthly-releases/"]


class Timed:
    """The wall time of each stage of a load: a reporter of its events."""

    def __init__(self):
        self.started = self.began = time.perf_counter()
        self.stages = {}

    def __call__(self, event):
        if isinstance(event, StageStarted):
            self.began = time.perf_counter()
        elif isinstance(event, StageFinished):
            self.stages[event.name] = time.perf_counter() - self.began

    def finish(self):
        return time.perf_counter() - self.started


def baseline_seconds(code, dump, work):
    """Wall seconds of importing ``dump`` with the package in the folder ``code``."""
    target = work / "baseline.sqlite3"
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", f"from demoserv.loader.sources import load_catalogue; "
         f"load_catalogue({str(dump)!r}, {str(target)!r})"],
        env=dict(os.environ, PYTHONPATH=str(code)),
        cwd=code,
        check=True,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    target.unlink()
    return seconds


def ask(base, path):
    """(seconds, status, bytes) of one GET."""
    connection = http.client.HTTPConnection(base.split("://")[1], timeout=60)
    started = time.perf_counter()
    connection.request("GET", "/api/adhoc/" + path)
    response = connection.getresponse()
    body = response.read()
    elapsed = time.perf_counter() - started
    connection.close()
    return elapsed, response.status, len(body)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=HERE / "out")
    parser.add_argument("--reuse", action="store_true")
    parser.add_argument("--baseline", type=Path, help="code without the adhoc answers")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    database = args.work / "adhoc.sqlite3"
    print("| import | |\n|---|---|")
    if args.baseline and not args.reuse:
        before = baseline_seconds(args.baseline.resolve(), args.dump.resolve(), args.work)
        print(f"| import without the adhoc answers ({args.baseline}) | {before:.1f} s |")
    if not args.reuse:
        progress = Timed()
        load_catalogue(args.dump, database, progress)
        total = progress.finish()
        adhoc = progress.stages.get("building the adhoc answers", 0)
        print(f"| import with them | {total:.1f} s |")
        if args.baseline:
            print(f"| added | {total - before:.1f} s ({total / before - 1:+.1%}) |")
        print(f"| of which building the answers | {adhoc:.1f} s ({adhoc / total:.1%}) |")
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as connection:
        months = connection.execute(
            "SELECT path, count(*), sum(length(body)), max(length(body)) FROM adhoc_answers "
            "WHERE month != '' GROUP BY path"
        ).fetchall()
        stored = connection.execute("SELECT sum(length(body)) FROM adhoc_answers").fetchone()[0]
        busiest = {
            path: month
            for path, month, _ in connection.execute(
                "SELECT path, month, max(length(body)) FROM adhoc_answers WHERE month != '' "
                "GROUP BY path"
            )
        }
    print(f"| stored answers | {stored / 1e6:.1f} MB |")
    for path, count, size, largest in months:
        print(f"| {path} | {count} months stored, {size / 1e6:.1f} MB, largest {largest} B |")
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")
    server = start_demoserv(env)
    base = server.url
    try:
        print("\n| first ask (fresh server) | ms | status | bytes |\n|---|---|---|---|")
        for path in PATHS + [f"{path}?month={busiest[path]}" for path in MONTH_PATHS]:
            elapsed, status, size = ask(base, path)
            print(f"| {path} | {elapsed * 1000:.1f} | {status} | {size} |")
        for path in MONTH_PATHS:
            firsts = [
                ask(base, f"{path}?month={year}-{month:02d}")[0]
                for year in range(1985, 2025)
                for month in (1, 6, 11)
            ]
            print(
                f"| {path} 120 months, first ask each | median "
                f"{statistics.median(firsts) * 1000:.1f}, max {max(firsts) * 1000:.1f} | | |"
            )
    finally:
        server.stop()


if __name__ == "__main__":
    main()
