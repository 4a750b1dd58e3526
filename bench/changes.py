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

    python bench/changes.py --history FILE [--days 90] [--runs 2]

With --history, FILE is a full-size catalogue file built by this code (``demoserv load``
of DUMP), taken as the day before. A copy of it is given a synthetic history of --days
loads of --per-load changes each over its own records (``synthetic_history``), ending
at its records; the day after (DUMP without the productions whose id is half of --every
modulo --every, titles and nicks edited as above) is loaded over that copy, and over
FILE with the history switched off, --runs times each way. Then, each as a process of
its own on the file that load wrote: the feed's tables built again, and the whole
history's step (carried, compared, the feed built) over the copy; and the feed's
answers over 90 days. Written to history.json in --work.
"""

import argparse
import datetime
import gzip
import json
import os
import random
import shutil
import sqlite3
import statistics
import sys
import time
from pathlib import Path

from servers import measured_command

BENCH = Path(__file__).resolve().parent
REPOSITORY = BENCH.parent
DEFAULT_DUMP = "/work/bench-data/full-375000.sql.gz"
# The history's work switched off, for the loads measured without it.
WITHOUT_HISTORY = (
    "import sys; from demoserv.loader import history; "
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


def feed_timings(database, runs=5, paths=None):
    """Seconds of the feed's answers (each the median of ``runs`` requests, in process)
    over the history of the file ``database``: by default the first and last page, a
    resource's first page and ``since`` the served version."""
    from demoserv import create_app

    # No answer kept: each request is answered by the feed's view.
    config = {"DATABASE": str(database), "SEED_DIR": "", "ANSWER_CACHE_BYTES": 0}
    client = create_app({**config, "TESTING": True}).test_client()
    first = client.get("/api/v1/changes/")
    version = first.headers["X-Catalogue-Version"]
    timings = {"entries": first.json["count"]}
    paths = paths or {
        "first page": "/api/v1/changes/",
        "last page": "/api/v1/changes/?page=last",
        "releasers' first page": "/api/v1/changes/?resource=releasers",
        "since the served version": f"/api/v1/changes/?since={version}",
    }
    for name, url in paths.items():
        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            response = client.get(url)
            seconds.append(time.perf_counter() - started)
            assert response.status_code == 200, (url, response.json)
        timings[name] = statistics.median(seconds)
    return timings


def step_timings(work):
    """Seconds of the history's own steps, timed in this process on the files of a run:
    digesting every record as built, and comparing and carrying the history (the new
    file's history emptied, then recorded again against the day before)."""
    from demoserv.loader import history
    from demoserv.resources import RESOURCES
    from demoserv.store.templates import RecordCodec

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
        for table in ("catalogue_loads", "catalogue_changes", *FEED_TABLES):
            connection.execute(f"DELETE FROM {table}")
    connection.close()
    started = time.perf_counter()
    history.record(copy, work / "before.sqlite3")
    recording = time.perf_counter() - started
    copy.unlink()
    return {"records": len(docs), "digesting": digesting, "comparing and carrying": recording}


def synthetic_history(path, days, per_load, seed=1):
    """Give the catalogue file at ``path`` a history of ``days`` loads, one a day up to
    now, of ``per_load`` changes each, that ends at its records (its record digests).
    Written backwards from them: each load changes random records (edits), adds some
    (absent before), removes some (new ids, present before), changes back some records
    the next load changes, and adds some that the next load removes. Then the feed's
    tables are built again from it."""
    from demoserv.loader import feed

    chance = random.Random(seed)
    connection = sqlite3.connect(path)
    state = {(r, i): d for r, i, d in connection.execute("SELECT * FROM record_digests")}
    keys = list(state)
    next_id = {}
    for resource, record_id in keys:
        next_id[resource] = max(next_id.get(resource, 0), record_id + 1)
    resources = sorted(next_id)
    rows, counts = [], {}
    edited_next, removed_next, after_next = [], [], {}  # what the load after this one did
    for number in range(days, 1, -1):
        before, edited, removed = {}, [], []
        for key in chance.sample(edited_next, min(per_load // 40, len(edited_next))):
            before[key] = after_next[key]  # changed here, changed back by the next load
        for key in chance.sample(removed_next, min(per_load // 80, len(removed_next))):
            before[key] = None  # added here, removed by the next load
        while len(before) < per_load * 9 // 10:
            key = chance.choice(keys)
            if key in before or state.get(key) is None:
                continue
            if chance.random() < 0.1:
                before[key] = None  # added by this load
            else:
                before[key] = chance.getrandbits(63)
                edited.append(key)
        while len(before) < per_load:  # removed by this load: present before, a new id
            resource = chance.choice(resources)
            key = (resource, next_id[resource])
            next_id[resource] += 1
            before[key] = chance.getrandbits(63)
            removed.append(key)
        after_next = {}
        each = counts.setdefault(number, {})
        for key, old in before.items():
            new = state.get(key)
            rows.append((*key, number, old, new))
            kind = "added" if old is None else "removed" if new is None else "changed"
            tally = each.setdefault(key[0], dict.fromkeys(("added", "changed", "removed"), 0))
            tally[kind] += 1
            after_next[key] = new
            state[key] = old
        edited_next, removed_next = edited, removed
    now = datetime.datetime.now(datetime.timezone.utc)
    (version,) = connection.execute("SELECT version FROM catalogue_info").fetchone()
    loads = []
    for number in range(1, days + 1):
        loaded_at = now - datetime.timedelta(days=days - number, hours=1)
        loads.append(
            (
                number,
                version if number == days else f"{chance.getrandbits(128):032x}",
                loaded_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                json.dumps(dict(sorted(counts.get(number, {}).items()))),
            )
        )
    with connection:
        for table in ("catalogue_loads", "catalogue_changes", *FEED_TABLES):
            connection.execute(f"DELETE FROM {table}")
        connection.executemany("INSERT INTO catalogue_loads VALUES (?, ?, ?, ?)", loads)
        rows.sort(key=lambda row: row[:3])
        connection.executemany("INSERT INTO catalogue_changes VALUES (?, ?, ?, ?, ?)", rows)
        feed.build(connection)
    connection.close()
    return len(rows)


FEED_TABLES = ("feed_changes", "feed_records", "feed_skips", "feed_spans")
# The feed's tables of a file emptied and built again, each step timed: run as a process
# of its own, for its peak RSS.
BUILD_FEED = """
import json, sqlite3, sys, time
from demoserv.loader import feed
connection = sqlite3.connect(sys.argv[1])
connection.execute("PRAGMA journal_mode = OFF")
connection.execute("PRAGMA synchronous = OFF")
with connection:
    for table in %r:
        connection.execute(f"DELETE FROM {table}")
steps = {}
with connection:
    for step in (feed._changes, feed._records, feed._spans, feed._skips, feed._history_digest):
        started = time.perf_counter()
        step(connection)
        steps[step.__name__.strip("_")] = time.perf_counter() - started
print(json.dumps(steps))
""" % (FEED_TABLES,)
SYNTHESIZE = (
    "import sys, changes; print(changes.synthetic_history(sys.argv[1], *map(int, sys.argv[2:])))"
)
# The whole history's step of a load: the new file's history emptied, then carried from
# the served file, compared with it, and the feed built.
RECORD_HISTORY = """
import sqlite3, sys
from demoserv.loader import history
connection = sqlite3.connect(sys.argv[1])
with connection:
    for table in ("catalogue_loads", "catalogue_changes", *%r):
        connection.execute(f"DELETE FROM {table}")
connection.close()
history.record(sys.argv[1], sys.argv[2])
""" % (FEED_TABLES,)


def alternate_loads(args, after, with_history, without_history):
    """Load ``after`` --runs times each way, alternating: over a copy of ``with_history``
    with the history's work, over a copy of ``without_history`` without it. Returns the
    runs and their summary (median time, peak RSS, the ratios)."""
    results = {"with": [], "without": []}
    for _ in range(args.runs):
        for name, served in (("without", without_history), ("with", with_history)):
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
    return results, summary


def history_main(args):
    """--history: a load's cost with --days of history, its steps, the feed's answers."""
    args.work.mkdir(parents=True, exist_ok=True)
    after = args.work / "after.sql.gz"
    every = args.every
    if not after.exists():
        edited_export(args.dump, after, lambda number: number % every == every // 2, every)
    served = args.work / f"served-{args.days}.sqlite3"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join((str(REPOSITORY), str(BENCH))))
    if not served.exists():
        shutil.copyfile(args.history, served)
        # In a process of its own: this one stays small, and so do the peaks of the
        # processes it starts (a child's ru_maxrss starts from its parent's RSS).
        run = measured_command(
            [sys.executable, "-c", SYNTHESIZE, str(served), str(args.days), str(args.per_load)],
            env,
        )
        print(f"history of {int(run['output']):,} changes written in {run['seconds']:.0f} s")
    results, summary = alternate_loads(args, after, served, args.history)
    loaded = args.work / "with.sqlite3"
    copy = args.work / "steps.sqlite3"
    shutil.copyfile(loaded, copy)
    build = measured_command([sys.executable, "-c", BUILD_FEED, str(copy)], env)
    summary["feed build"] = {**_step(build), "steps": json.loads(build["output"])}
    record = measured_command([sys.executable, "-c", RECORD_HISTORY, str(copy), str(served)], env)
    summary["history step"] = _step(record)
    copy.unlink()
    summary["history"] = _history_size(loaded)
    summary["history bytes"] = _history_bytes(loaded)
    summary["feed"] = feed_timings(loaded, args.answers, _history_paths(loaded))
    print(json.dumps(summary, indent=2))
    (args.work / "history.json").write_text(json.dumps({"runs": results, **summary}, indent=2))


def _step(run):
    return {"seconds": run["seconds"], "peak_rss_mb": run["peak_rss_mb"]}


def _history_size(path):
    connection = sqlite3.connect(path)
    try:
        sizes = {
            table: connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("catalogue_loads", "catalogue_changes", *FEED_TABLES)
        }
        sizes["feed_records (all resources)"] = connection.execute(
            "SELECT count(*) FROM feed_records WHERE scope = ''"
        ).fetchone()[0]
        return sizes
    finally:
        connection.close()


def _history_paths(path):
    """The feed's answers measured over a long history: since the oldest load and the
    newest, a deep page, a resource's."""
    connection = sqlite3.connect(path)
    try:
        loads = connection.execute("SELECT version FROM catalogue_loads ORDER BY load_number")
        versions = [version for (version,) in loads]
        (count,) = connection.execute(
            "SELECT count FROM feed_spans WHERE since_load = "
            "(SELECT min(load_number) FROM catalogue_loads) AND scope = ''"
        ).fetchone()
    finally:
        connection.close()
    oldest, newest = versions[0], versions[-2]
    middle = max(1, -(-count // 100) // 2)
    return {
        "last load's first page": "/api/v1/changes/",
        "since the oldest: first page": f"/api/v1/changes/?since={oldest}",
        f"since the oldest: page {middle} (deep)": f"/api/v1/changes/?since={oldest}&page={middle}",
        "since the oldest: last page": f"/api/v1/changes/?since={oldest}&page=last",
        "since the oldest: releasers' first page": (
            f"/api/v1/changes/?since={oldest}&resource=releasers"
        ),
        "since the oldest: productions' last page": (
            f"/api/v1/changes/?since={oldest}&resource=productions&page=last"
        ),
        "since the newest but one": f"/api/v1/changes/?since={newest}",
        "since the served version": f"/api/v1/changes/?since={versions[-1]}",
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", default=DEFAULT_DUMP)
    parser.add_argument("--work", type=Path, default=REPOSITORY / "bench" / "out" / "changes")
    parser.add_argument("--every", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument(
        "--steps", action="store_true", help="only time the history's steps on a run's files"
    )
    parser.add_argument("--history", type=Path, help="a full-size catalogue file: see above")
    parser.add_argument("--days", type=int, default=90)
    parser.add_argument("--per-load", type=int, default=4200)
    parser.add_argument("--answers", type=int, default=7, help="requests of each answer")
    args = parser.parse_args()
    if args.steps:
        print(json.dumps(step_timings(args.work), indent=2))
        return
    if args.history:
        history_main(args)
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
    results, summary = alternate_loads(args, after, served, served)
    summary["feed"] = feed_timings(args.work / "with.sqlite3")
    summary["history bytes"] = _history_bytes(args.work / "with.sqlite3")
    print(json.dumps(summary, indent=2))
    (args.work / "changes.json").write_text(json.dumps({"runs": results, **summary}, indent=2))


def _history_bytes(path):
    """Bytes of the history's tables in the file at ``path`` (SQLite's dbstat)."""
    connection = sqlite3.connect(path)
    try:
        return dict(
            connection.execute(
                "SELECT name, sum(pgsize) FROM dbstat WHERE name IN (?, ?, ?, ?, ?, ?, ?) "
                "GROUP BY name",
                ("record_digests", "catalogue_loads", "catalogue_changes", *FEED_TABLES),
            )
        )
    except sqlite3.Error:
        return {}
    finally:
        connection.close()


if __name__ == "__main__":
    main()
