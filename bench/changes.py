"""The cost of the history of changes at full size: ``flask load`` of an export over the
catalogue of the day before, with the history (record digests, the comparison with the
served file, the history carried forward) and without it, side by side in one run; and
the changes feed's answers over the history that load kept.

    python bench/changes.py [--dump /work/bench-data/full-375000.sql.gz] [--runs 2]

From the export DUMP it writes two (in --work): the day before, without the productions
whose id is a quarter of --every modulo --every; the day after, without those whose id is
half of it modulo --every, with the title of those whose id is 0 modulo --every edited
and the name of the nicks whose id is 1 modulo --every changed (a change that each
production crediting the nick shows). It loads the day before, then the day after over a
copy of it, --runs times each way, alternating; each load is a process of its own,
measured by its wall time and its peak RSS (``wait4``'s ``ru_maxrss``). Prints each run
and a summary, also written to changes.json in --work.
"""

import argparse
import gzip
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

from servers import measured_command

REPOSITORY = Path(__file__).resolve().parent.parent
DEFAULT_DUMP = "/work/bench-data/full-375000.sql.gz"
# The history's work switched off, for the loads measured without it.
WITHOUT_HISTORY = (
    "import sys; from demoserv.catalogue import history; "
    "history.record = lambda *args, **kwargs: {}; "
    "history.store_digests = lambda *args: None; "
    "from flask.cli import main; sys.argv[0] = 'flask'; main()"
)
# Columns that name a production, by table (any table: production_id).
PRODUCTION_COLUMNS = {"productions_soundtracklink": ("soundtrack_id",)}
PACK_COLUMNS = ("member_id", "pack_id")


def _copy_header(line):
    """(table, column names) of a COPY line."""
    head, _, rest = line.partition(" (")
    table = head.removeprefix("COPY public.")
    names = [name.strip().strip('"') for name in rest.split(")")[0].split(",")]
    return table, names


def edited_export(source, out, drop, edit_every=None):
    """``source`` without the productions ``drop(id)`` names (and every row naming them);
    with ``edit_every``: titles of ids 0 modulo it edited, nicks of ids 1 modulo it
    renamed."""
    with (
        gzip.open(source, "rt", encoding="utf-8", newline="") as reader,
        gzip.open(out, "wt", encoding="utf-8", newline="", compresslevel=1) as writer,
    ):
        table, checks = None, ()
        for line in reader:
            if table is None:
                if line.startswith("COPY public."):
                    table, names = _copy_header(line)
                    watched = {"production_id", *PRODUCTION_COLUMNS.get(table, ())}
                    if table == "productions_packmember":
                        watched.update(PACK_COLUMNS)
                    if table == "productions_production":
                        watched.add("id")
                    checks = [names.index(name) for name in names if name in watched]
                writer.write(line)
                continue
            if line == "\\.\n":
                table = None
                writer.write(line)
                continue
            fields = line.rstrip("\n").split("\t")
            if any(fields[at] != "\\N" and drop(int(fields[at])) for at in checks):
                continue
            if edit_every and table == "productions_production":
                if int(fields[0]) % edit_every == 0:
                    fields[1] += " (edited)"
                    line = "\t".join(fields) + "\n"
            elif edit_every and table == "demoscene_nick":
                if int(fields[0]) % edit_every == 1:
                    fields[1] += " (renamed)"
                    line = "\t".join(fields) + "\n"
            writer.write(line)


def load(source, database, with_history):
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")
    if with_history:
        command = [sys.executable, "-m", "flask", "--app", "demoserv", "load", str(source)]
    else:
        command = [sys.executable, "-c", WITHOUT_HISTORY, "--app", "demoserv", "load"]
        command.append(str(source))
    return measured_command(command, env)


def feed_timings(database):
    """Seconds of the feed's first, last and a resource's first page, each the median of
    five requests, over the history of the load measured."""
    from demoserv import create_app

    app = create_app({"DATABASE": str(database), "SEED_DIR": "", "TESTING": True})
    client = app.test_client()
    first = client.get("/api/v1/changes/")
    version = first.headers["X-Catalogue-Version"]
    timings = {"entries": first.json["count"]}
    for name, url in (
        ("first page", "/api/v1/changes/"),
        ("last page", "/api/v1/changes/?page=last"),
        ("releasers' first page", "/api/v1/changes/?resource=releasers"),
        ("since the served version", f"/api/v1/changes/?since={version}"),
    ):
        seconds = []
        for _ in range(5):
            started = time.perf_counter()
            assert client.get(url).status_code == 200
            seconds.append(time.perf_counter() - started)
        timings[name] = statistics.median(seconds)
    return timings


def step_timings(work):
    """Seconds of the history's own steps, timed in this process on the files of a run:
    digesting every record as built, and comparing and carrying the history (the new
    file's history emptied, then recorded again against the day before)."""
    import sqlite3

    from demoserv.catalogue import history
    from demoserv.resources import RESOURCES
    from demoserv.stored import RecordCodec

    copy = work / "steps.sqlite3"
    shutil.copyfile(work / "with.sqlite3", copy)
    connection = sqlite3.connect(copy)
    codecs = {
        (resource, kind): RecordCodec(data)
        for resource, kind, data in connection.execute("SELECT * FROM dictionaries")
    }
    docs = []
    for resource in RESOURCES:
        details = resource.details_table
        table, kind = (resource.table, "list") if details is None else (details, "detail")
        marked = codecs[(resource.name, kind)].marked
        docs += [marked(doc) for (doc,) in connection.execute(f"SELECT doc FROM {table.name}")]
    started = time.perf_counter()
    for doc in docs:
        history.digest(doc)
    digesting = time.perf_counter() - started
    with connection:
        connection.execute("DELETE FROM catalogue_loads")
        connection.execute("DELETE FROM catalogue_changes")
    connection.close()
    started = time.perf_counter()
    history.record(copy, work / "before.sqlite3")
    recording = time.perf_counter() - started
    copy.unlink()
    return {"records": len(docs), "digesting": digesting, "comparing and carrying": recording}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", default=DEFAULT_DUMP)
    parser.add_argument("--work", type=Path, default=REPOSITORY / "bench" / "out" / "changes")
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--steps", action="store_true", help="only time the history's steps on a run's files"
    )
    args = parser.parse_args()
    if args.steps:
        print(json.dumps(step_timings(args.work), indent=2))
        return
    args.work.mkdir(parents=True, exist_ok=True)
    before, after = args.work / "before.sql.gz", args.work / "after.sql.gz"
    every = args.every
    if not before.exists():
        edited_export(args.dump, before, lambda number: number % every == every // 4)
    if not after.exists():
        edited_export(args.dump, after, lambda number: number % every == every // 2, every)
    served = args.work / "before.sqlite3"
    if not served.exists():
        print("day before:", load(before, served, True)["output"])
    results = {"with": [], "without": []}
    for _ in range(args.runs):
        for name in ("without", "with"):
            target = args.work / f"{name}.sqlite3"
            for leftover in args.work.glob(f"{name}.sqlite3*"):
                leftover.unlink()
            shutil.copyfile(served, target)
            run = load(after, target, name == "with")
            print(f"{name} the history: {run['seconds']:.1f} s, {run['peak_rss_mb']:.0f} MB")
            results[name].append(run)
    summary = {}
    for name, runs in results.items():
        summary[name] = {
            "seconds": statistics.median(run["seconds"] for run in runs),
            "peak_rss_mb": max(run["peak_rss_mb"] for run in runs),
        }
    summary["time ratio"] = summary["with"]["seconds"] / summary["without"]["seconds"]
    summary["memory ratio"] = summary["with"]["peak_rss_mb"] / summary["without"]["peak_rss_mb"]
    summary["feed"] = feed_timings(args.work / "with.sqlite3")
    summary["history bytes"] = _history_bytes(args.work / "with.sqlite3")
    print(json.dumps(summary, indent=2))
    (args.work / "changes.json").write_text(json.dumps({"runs": results, **summary}, indent=2))


def _history_bytes(path):
    """Bytes of the history's tables in the file at ``path`` (SQLite's dbstat)."""
    import sqlite3

    connection = sqlite3.connect(path)
    try:
        return dict(
            connection.execute(
                "SELECT name, sum(pgsize) FROM dbstat WHERE name IN "
                "('record_digests', 'catalogue_loads', 'catalogue_changes') GROUP BY name"
            )
        )
    except sqlite3.Error:
        return {}
    finally:
        connection.close()


if __name__ == "__main__":
    main()
