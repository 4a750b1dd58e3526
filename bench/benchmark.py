"""Benchmark demoserv at full size, from the upstream's daily export: the import, and the
service over HTTP through waitress on loopback, all in one run.

    python bench/benchmark.py [--dump /work/bench-data/full.sql.gz] [--work bench/out]
                              [--samples 100] [--reuse] [--quick]

It loads the export (``--dump``; without it, one of ``--productions`` productions is
written first with bench/generate_dump.py) with ``flask load``, starts ``demoserv-serve``
(its production settings) and measures:

- the import: wall time, peak resident memory of the load process, database file size;
- median and p99 latency of the platforms page (the floor, sampled between every two
  other requests) and of the first, middle, last and random pages of productions in
  every single-key order, each direction; production details with every kind of nested
  record; the parties with the most competition results; the most credited releasers,
  their ``productions`` and ``member_productions``;
- listings nobody asked for before: for every filter of productions and every pair of
  ordering keys, the first page and a last, deep or random page of fresh values; new
  searches of every term length from 1 to 16 characters and of several terms, and tags;
- whether equivalent parameter values (``1991``, ``1991-01``, ``1991-01-01``) are one
  listing: the first spelling pays for the listing, the others should not;
- the time to walk every page of productions by following ``next``;
- requests per second of 32 clients over the mix of bench/clients.py, against the same 32
  clients on the platforms page alone;
- readers' latency alone and beside 8 clients sending only never-seen listings
  (bench/clients.py's attack), and beside 8 sending only new searches and tags;
- server memory while 100,000 distinct never-seen listings are asked for, and the first
  request of a new listing before and after them;
- the server's peak resident memory (VmHWM) over the whole run;
- Datasette (if installed) on the first and a deep page of the same file.

It prints Markdown tables and each target met or missed, and writes the numbers to
``<work>/results.json``. Exit status 1 when a target is missed. ``--reuse`` serves the
database a previous run loaded (no import measured); ``--quick`` shortens every phase
(for trying the script, not for numbers).
"""

import argparse
import http.client
import importlib.util
import json
import os
import platform
import random
import sqlite3
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from urllib.parse import urlencode, urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from clients import (  # noqa: E402
    PAIR_ORDERINGS,
    SEARCH_ATTACK,
    SEARCH_LENGTHS,
    NeverSeen,
    attack,
    attack_table,
    catalogue_info,
    request_mix,
    run_clients,
    timed_clients,
)
from generate import generate as generate_folder  # noqa: E402
from servers import measured_load, memory_mb, start, start_demoserv  # noqa: E402

from demoserv.resources import BY_NAME  # noqa: E402

ORDERINGS = {
    "productions": ["sortable_title", "release_date_date", "supertype", "id"],
}
PAGE_SIZE = BY_NAME["productions"].page_size  # every listing measured is of productions
JSONL_DATABASE_MB = 205  # the JSONL-era build of the same size
DEFAULT_DUMP = Path("/work/bench-data/full.sql.gz")


class Client:
    """One keep-alive HTTP connection; ``get`` returns (status, body bytes)."""

    def __init__(self, base):
        parts = urlsplit(base)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)

    def get(self, path, headers=None):
        headers = headers or {}
        try:
            self.connection.request("GET", path, headers=headers)
            response = self.connection.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            self.connection.close()  # closed while idle: GET again on a new connection
            self.connection.request("GET", path, headers=headers)
            response = self.connection.getresponse()
        return response.status, response.read()

    def timed(self, path, expected=(200,), headers=None):
        started = time.perf_counter()
        status, body = self.get(path, headers)
        elapsed = time.perf_counter() - started
        if status not in expected:
            raise RuntimeError(f"{path}: {status} {body[:200]!r}")
        return elapsed, body


def peak_rss_mb(pid):
    return memory_mb(pid)[1]


def summary(samples):
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "max_ms": ordered[-1] * 1000,
        "samples": len(ordered),
    }


def sample(client, paths, count):
    """Latency summary of ``count`` requests cycling through ``paths`` (after a warm-up)."""
    for path in paths[:3]:
        client.timed(path)
    return summary([client.timed(paths[i % len(paths)])[0] for i in range(count)])


class Floor:
    """Latency of ``paths`` measured against the platforms page: a platforms request
    follows each measured one, so that each measurement has its own floor, taken over
    the same seconds of a shared machine."""

    PATH = "/api/v1/platforms/"

    def __init__(self, client):
        self.client = client
        self.samples = []

    def measure(self, paths, count):
        for path in [*paths[:3], self.PATH]:
            self.client.timed(path)
        measured, floor = [], []
        for index in range(count):
            measured.append(self.client.timed(paths[index % len(paths)])[0])
            floor.append(self.client.timed(self.PATH)[0])
        self.samples += floor
        result = summary(measured)
        result["floor_median_ms"] = statistics.median(floor) * 1000
        result["ratio"] = result["median_ms"] / result["floor_median_ms"]
        return result


# What the catalogue holds, found in its SQLite file.

RICH_PRODUCTIONS = """
SELECT p.id,
  EXISTS (SELECT 1 FROM credits x WHERE x.production_id = p.id)
  + EXISTS (SELECT 1 FROM production_links x WHERE x.production_id = p.id AND x.is_download)
  + EXISTS (SELECT 1 FROM production_links x WHERE x.production_id = p.id AND NOT x.is_download)
  + EXISTS (SELECT 1 FROM screenshots x WHERE x.production_id = p.id)
  + EXISTS (SELECT 1 FROM placings x WHERE x.production_id = p.id)
  + EXISTS (SELECT 1 FROM party_releases x WHERE x.production_id = p.id)
  + EXISTS (SELECT 1 FROM party_invitations x WHERE x.production_id = p.id)
  + EXISTS (SELECT 1 FROM production_nicks x
            WHERE x.production_id = p.id AND x.role = 'affiliation')
  + EXISTS (SELECT 1 FROM production_platforms x WHERE x.production_id = p.id)
  + EXISTS (SELECT 1 FROM production_type_links x WHERE x.production_id = p.id)
  + (p.tags != '[]') AS kinds,
  length(d.doc) AS size
FROM productions p JOIN productions_details d ON d.id = p.id
ORDER BY kinds DESC, size DESC LIMIT ?
"""
BIG_PARTIES = """
SELECT c.party_id, count(DISTINCT c.id), count(*) FROM competitions c
JOIN placings p ON p.competition_id = c.id
GROUP BY c.party_id ORDER BY count(*) DESC LIMIT ?
"""
CREDITED_RELEASERS = """
SELECT releaser_id, count(DISTINCT production_id) FROM production_nicks
WHERE role = 'author' GROUP BY releaser_id ORDER BY 2 DESC LIMIT ?
"""
AFFILIATED_RELEASERS = """
SELECT releaser_id, count(DISTINCT production_id) FROM production_nicks
WHERE role = 'affiliation' GROUP BY releaser_id ORDER BY 2 DESC LIMIT ?
"""


def database_facts(database):
    """Ids worth measuring, and what the catalogue holds, from the file itself."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    try:
        rich = connection.execute(RICH_PRODUCTIONS, (20,)).fetchall()
        parties = connection.execute(BIG_PARTIES, (10,)).fetchall()
        authors = connection.execute(CREDITED_RELEASERS, (10,)).fetchall()
        affiliated = connection.execute(AFFILIATED_RELEASERS, (10,)).fetchall()
        production_ids = [row[0] for row in connection.execute("SELECT id FROM productions")]
        party_ids = [row[0] for row in connection.execute("SELECT id FROM parties")]
        urls = [
            row[0]
            for row in connection.execute(
                "SELECT url FROM production_links WHERE production_id % 211 = 0 LIMIT 2000"
            )
        ] or [row[0] for row in connection.execute("SELECT url FROM production_links LIMIT 2000")]
        titles = [
            row[0]
            for row in connection.execute(
                "SELECT title FROM productions ORDER BY random() LIMIT 5000"
            )
        ]
        tags = [
            row[0]
            for row in connection.execute(
                "SELECT tag FROM production_tags GROUP BY tag ORDER BY count(*) DESC LIMIT 500"
            )
        ]
        authors_all = [
            row[0]
            for row in connection.execute(
                "SELECT DISTINCT releaser_id FROM production_nicks WHERE role = 'author'"
            )
        ]
        sizes = dict(
            connection.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
        )
    finally:
        connection.close()
    return {
        "rich_productions": [
            {"id": row[0], "kinds": row[1], "detail_bytes": row[2]} for row in rich
        ],
        "big_parties": [
            {"id": row[0], "competitions": row[1], "results": row[2]} for row in parties
        ],
        "credited_releasers": [{"id": row[0], "productions": row[1]} for row in authors],
        "affiliated_releasers": [{"id": row[0], "productions": row[1]} for row in affiliated],
        "production_ids": production_ids,
        "party_ids": party_ids,
        "urls": urls,
        "titles": titles,
        "tags": tags,
        "authors": authors_all,
        "table_mb": {
            name: round(size / 1e6, 1)
            for name, size in sorted(sizes.items(), key=lambda item: -item[1])[:12]
        },
    }


# The measurements.


def measure_orderings(floor, rng, samples, pages):
    results = {}
    for resource, keys in ORDERINGS.items():
        last = pages[resource]
        for key in keys:
            for sign in ("", "-"):
                base = f"/api/v1/{resource}/?ordering={sign}{key}"
                randoms = [f"{base}&page={rng.randint(1, last)}" for _ in range(samples)]
                results[f"{resource} {sign}{key}"] = {
                    "first": floor.measure([base], samples),
                    "middle": floor.measure([f"{base}&page={(last + 1) // 2}"], samples),
                    "last": floor.measure([f"{base}&page={last}"], samples),
                    "random": floor.measure(randoms, samples),
                }
    return results


def measure_records(floor, facts, samples):
    """Details with many nested records, and releasers' sub-resources."""
    releasers = [r["id"] for r in facts["credited_releasers"]]
    affiliated = [r["id"] for r in facts["affiliated_releasers"]]
    paths = {
        "production detail, every kind of nested record": [
            f"/api/v1/productions/{p['id']}/" for p in facts["rich_productions"]
        ],
        "party detail, most competition results": [
            f"/api/v1/parties/{p['id']}/" for p in facts["big_parties"]
        ],
        "releaser detail, most credited": [f"/api/v1/releasers/{i}/" for i in releasers],
        "releaser productions, most credited": [
            f"/api/v1/releasers/{i}/productions/" for i in releasers
        ],
        "releaser member_productions, most affiliated": [
            f"/api/v1/releasers/{i}/member_productions/" for i in affiliated
        ],
    }
    return {name: floor.measure(path_list, samples) for name, path_list in paths.items()}


def walk(client, path):
    started, pages = time.perf_counter(), 0
    while path:
        _, body = client.timed(path)
        pages += 1
        following = json.loads(body)["next"]
        path = urlsplit(following)._replace(scheme="", netloc="").geturl() if following else None
    return {"pages": pages, "seconds": time.perf_counter() - started}


def measure_never_seen(client, never_seen, rng, per_kind):
    """For each filter kind: ``per_kind`` fresh values, each asked for its first page
    (in one fresh ordering), then its last page and a random page (each in another
    fresh ordering, so each request is a listing never asked for). Pairs of ordering
    keys: every pair's first page, unfiltered, and last and random pages of every pair
    over (nearly) every production."""

    results = {}

    def one(kind):
        # One new value in three orderings: each request is a listing never asked for.
        first_path, last_path, deep_path = never_seen.paths(kind, 3)
        first, body = client.timed(first_path)
        count = json.loads(body)["count"]
        pages = max(1, -(-count // PAGE_SIZE))
        last, _ = client.timed(f"{last_path}&page=last")
        deep, _ = client.timed(f"{deep_path}&page={rng.randint(1, pages)}")
        return first, max(last, deep), count

    searches = [f"search:{length}" for length in SEARCH_LENGTHS]
    for kind in [*never_seen.KINDS, *searches]:
        if kind in ("pair", "search"):
            continue
        found = [one(kind) for _ in range(per_kind)]
        results[kind] = {
            "first_ms": [round(f * 1000, 1) for f, _, _ in found],
            "any_page_ms": [round(a * 1000, 1) for _, a, _ in found],
            "first_max_ms": max(f for f, _, _ in found) * 1000,
            "first_median_ms": statistics.median(f for f, _, _ in found) * 1000,
            "any_page_max_ms": max(a for _, a, _ in found) * 1000,
            "any_page_median_ms": statistics.median(a for _, a, _ in found) * 1000,
            "counts": [min(c for _, _, c in found), max(c for _, _, c in found)],
        }
    firsts, anys, counts = [], [], []
    for ordering in PAIR_ORDERINGS:
        elapsed, body = client.timed(never_seen.path("pair", orderings=(ordering,)))
        firsts.append(elapsed)
        counts.append(json.loads(body)["count"])
        last_pages = -(-max(counts) // PAGE_SIZE)
        last, _ = client.timed(never_seen.path("everything", "last", (ordering,)))
        deep, _ = client.timed(
            never_seen.path("everything", rng.randint(1, last_pages * 3 // 4), (ordering,)),
            expected=(200, 404),
        )
        anys.append(max(last, deep))
    results["pair (every one of 48)"] = {
        "first_ms": [round(f * 1000, 1) for f in firsts],
        "any_page_ms": [round(a * 1000, 1) for a in anys],
        "first_max_ms": max(firsts) * 1000,
        "first_median_ms": statistics.median(firsts) * 1000,
        "any_page_max_ms": max(anys) * 1000,
        "any_page_median_ms": statistics.median(anys) * 1000,
        "counts": [min(counts), max(counts)],
    }
    return results


def equivalents(title):
    """Spellings of one listing, by filter; ``title`` is a production's title."""
    return {
        "released_since": [
            "released_since=1991",
            "released_since=1991-01",
            "released_since=1991-01-01",
        ],
        "released_before": ["released_before=2003-07", "released_before=2003-07-01"],
        "platform": ["platform=7", "platform=07", "platform=7,7", "platform=7&platform=7"],
        "production_type": ["production_type=2,1", "production_type=1&production_type=2"],
        "title": [urlencode({"title": title.upper()}), urlencode({"title": title.lower()})],
    }


def measure_equivalents(client, title, ordering="-supertype,release_date_date"):
    """The first spelling of each value pays for the listing; the equivalent spellings
    should cost what a repeat of the first costs (a cached listing), and answer the
    same body."""
    results = {}
    for name, spellings in equivalents(title).items():
        paths = [f"/api/v1/productions/?{s}&ordering={ordering}" for s in spellings]
        first, body = client.timed(paths[0], (200, 404))
        repeat, _ = client.timed(paths[0], (200, 404))
        others = [client.timed(path, (200, 404)) for path in paths[1:]]
        # The same records (``next`` and ``previous`` keep each spelling as given).
        records = json.loads(body).get("results")
        same = all(json.loads(other).get("results") == records for _, other in others)
        slowest = max(elapsed for elapsed, _ in others)
        results[name] = {
            "spellings": spellings,
            "first_ms": first * 1000,
            "repeat_ms": repeat * 1000,
            "others_ms": [elapsed * 1000 for elapsed, _ in others],
            "same_body": same,
            # One listing: no other spelling costs more than twice the repeat and half the
            # first (the first computed the listing; a new one would cost that again).
            "one_listing": same and slowest <= max(2 * repeat, first / 2),
        }
    return results


def measure_memory(base, pid, never_seen, rng, count, clients=4, probes=50):
    """Server memory while ``count`` distinct never-seen listings (many empty) are asked
    for by ``clients`` clients, and the first request of new listings before and
    after."""

    def probe():
        client = Client(base)  # a new connection: waitress closes idle ones after 120 s
        kinds = ("released_window", "random_title", "author")
        found = {kind: [] for kind in kinds}
        for index in range(probes):
            for kind in kinds:
                found[kind].append(client.timed(never_seen.path(kind))[0])
        return {kind: statistics.median(values) * 1000 for kind, values in found.items()}

    before = probe()
    rss_before, _ = memory_mb(pid)
    remaining = [count]
    lock = threading.Lock()
    flood_kinds = (
        "random_title",
        "random_title",
        "random_title",
        "random_author",
        "random_author",
        "author",
        "title",
        "released_window",
        "random_link_url",
        "link_url",
    )

    def next_request(local):
        with lock:
            remaining[0] -= 1
        kind = local.choice(flood_kinds)
        path = never_seen.path(kind, local.choice((None, None, "last")))
        return "GET", path, {}, (200, 503)  # 503: new listings queued up, retry

    sampled = []
    done = threading.Event()

    def watch():
        while not done.wait(0.5):
            sampled.append(memory_mb(pid)[0])

    watcher = threading.Thread(target=watch)
    watcher.start()
    started = time.monotonic()
    # Clients run until the count is reached: each checks it before every request.

    statuses = Counter()
    threads, latencies, unexpected, errors = timed_clients(
        base, next_request, clients, going=lambda: remaining[0] > 0, statuses=statuses
    )
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    done.set()
    watcher.join()
    after = probe()
    rss_after, hwm = memory_mb(pid)
    return {
        "listings": count - max(0, remaining[0]),
        "turned_away": statuses[503],
        "seconds": elapsed,
        "requests_per_second": len(latencies) / elapsed,
        "unexpected": sum(unexpected.values()),
        "connection_errors": sum(errors.values()),
        "rss_before_mb": rss_before,
        "rss_max_mb": max(sampled + [rss_after]),
        "rss_after_mb": rss_after,
        "hwm_mb": hwm,
        "first_request_before_ms": before,
        "first_request_after_ms": after,
        "after_over_before": max(after[kind] / before[kind] for kind in before),
    }


def measure_throughput(base, facts, counts, clients, seconds):
    """Requests per second of ``clients`` clients over bench/clients.py's mix, then of the
    same clients on the platforms page alone."""

    mix = request_mix(
        counts["productions"],
        counts["parties"],
        production_ids=facts["production_ids"],
        party_ids=facts["party_ids"],
    )
    platforms = [("GET", "/api/v1/platforms/", {}, 200)]
    results = {}
    for name, requests in (("mix", mix), ("platforms", platforms)):
        started = time.monotonic()
        threads, latencies, unexpected, errors = run_clients(base, requests, clients, seconds)
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
        latencies.sort()
        results[name] = {
            "requests_per_second": len(latencies) / elapsed,
            "median_ms": statistics.median(latencies) * 1000,
            "p99_ms": latencies[int(len(latencies) * 0.99)] * 1000,
            "unexpected": sum(unexpected.values()),
            "connection_errors": sum(errors.values()),
        }
    results["clients"] = clients
    results["ratio"] = (
        results["mix"]["requests_per_second"] / results["platforms"]["requests_per_second"]
    )
    return results


def measure_datasette(database, samples):
    """Datasette on the same file: the first and a deep page of productions, flat rows,
    sorted by the same rank column, the deep page reached by its keyset token."""
    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    count = connection.execute(
        "SELECT count FROM record_counts WHERE resource = 'productions'"
    ).fetchone()[0]
    deep_rank = max(0, count - PAGE_SIZE)
    deep_id = connection.execute(
        "SELECT id FROM productions WHERE rank_sortable_title = ?", (deep_rank,)
    ).fetchone()
    connection.close()
    server = start(
        [
            sys.executable,
            "-m",
            "datasette",
            "serve",
            "-i",
            str(database),
            "-h",
            "127.0.0.1",
            "-p",
            "0",
            "--setting",
            "default_page_size",
            str(PAGE_SIZE),
        ],
        dict(os.environ),
        r"Uvicorn running on (http://127\.0\.0\.1:[0-9]+)",
    )
    try:
        client = Client(server.url)
        table = (
            f"/{Path(database).stem}/productions.json"
            f"?_size={PAGE_SIZE}&_sort=rank_sortable_title&_shape=objects"
        )
        deep = f"{table}&_next={deep_rank},{deep_id[0]}" if deep_id else table
        # Its first page takes about a second (it counts and suggests facets): few samples.
        return {
            "first": sample(client, [table], max(3, samples // 10)),
            "deep": sample(client, [deep], samples),
        }
    finally:
        server.stop()


def list_only_load(args, env):
    """The catalogue the JSONL-era benchmark loaded (bench/generate.py: list records,
    no nested detail records) at the same size, loaded as a folder: its load time, peak
    memory and file size, against the 205 MB that catalogue took before read models."""
    folder = args.work / f"list-only-{args.productions}"
    if not folder.exists():
        print(f"generating {folder} ...", flush=True)
        generate_folder(folder, args.productions)
    target = args.work / "list-only.sqlite3"
    for old in (target, target.with_name(target.name + ".previous")):
        old.unlink(missing_ok=True)
    print(f"loading {folder} ...", flush=True)
    measured = measured_load(folder, dict(env, DEMOSERV_DATABASE=str(target)))
    measured["database_mb"] = target.stat().st_size / 1e6
    target.unlink()
    return measured


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dump", type=Path, help="the export to load (default: see --productions)")
    parser.add_argument(
        "--productions",
        type=int,
        default=375_000,
        help="without --dump: generate an export of this size (unless one exists in --work), "
        f"or use {DEFAULT_DUMP} at the full size if it exists",
    )
    parser.add_argument("--work", type=Path, default=HERE / "out")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument(
        "--threads", type=int, default=None, help="worker threads (default: demoserv-serve's)"
    )
    parser.add_argument("--seconds", type=float, default=15.0, help="each throughput run")
    parser.add_argument("--clients", type=int, default=32, help="throughput clients")
    parser.add_argument("--attack-seconds", type=float, default=60.0)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--listings", type=int, default=100_000, help="memory flood size")
    parser.add_argument("--per-kind", type=int, default=6, help="fresh values per filter")
    parser.add_argument("--reuse", action="store_true", help="serve the last loaded file")
    parser.add_argument("--quick", action="store_true", help="short phases, for trying")
    parser.add_argument("--no-datasette", action="store_true")
    parser.add_argument(
        "--no-list-only",
        action="store_true",
        help="skip loading the JSONL-era catalogue (list records only) of the same size",
    )
    args = parser.parse_args()
    if args.quick:
        args.samples, args.seconds, args.attack_seconds, args.idle_seconds = 10, 3, 6, 3
        args.listings, args.per_kind = 2000, 2

    started = time.perf_counter()
    args.work.mkdir(parents=True, exist_ok=True)
    database = args.work / "bench.sqlite3"
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")
    results = {"started": time.strftime("%Y-%m-%d %H:%M:%S"), "load_average": [os.getloadavg()]}
    results["commit"] = subprocess.run(
        ["git", "-C", str(HERE), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    if args.reuse and database.exists():
        results["import"] = None
    else:
        dump = args.dump
        if dump is None and args.productions == 375_000 and DEFAULT_DUMP.exists():
            dump = DEFAULT_DUMP
        if dump is None:
            dump = args.work / f"export-{args.productions}.sql.gz"
            if not dump.exists():
                print(f"generating {dump} ...", flush=True)
                subprocess.run(
                    [
                        sys.executable,
                        str(HERE / "generate_dump.py"),
                        str(dump),
                        "--productions",
                        str(args.productions),
                    ],
                    check=True,
                )
        for old in (database, database.with_name(database.name + ".previous")):
            old.unlink(missing_ok=True)  # every run measures a first load
        print(f"loading {dump} ...", flush=True)
        results["import"] = measured_load(dump, env)
        results["import"]["dump"] = str(dump)
        save(args.work, results)
    results["database_mb"] = database.stat().st_size / 1e6
    results["list_only"] = None if args.no_list_only else list_only_load(args, env)
    save(args.work, results)
    facts = database_facts(database)
    results["table_mb"] = facts["table_mb"]
    results["measured_records"] = {
        key: facts[key]
        for key in ("rich_productions", "big_parties", "credited_releasers", "affiliated_releasers")
    }

    server = start_demoserv(env, args.threads)
    base = server.url
    try:
        client = Client(base)
        floor = Floor(client)
        rng = random.Random(1)
        info = catalogue_info(base)
        info.update(titles=facts["titles"], urls=facts["urls"], authors=facts["authors"])
        info["tags"] = facts["tags"] or info["tags"]
        counts = info["counts"]
        results["counts"] = counts
        never_seen = NeverSeen(info, seed=2)
        pages = {"productions": max(1, -(-counts["productions"] // PAGE_SIZE))}
        print("measuring pages ...", flush=True)
        results["orderings"] = measure_orderings(floor, rng, args.samples, pages)
        save(args.work, results)
        print("measuring records ...", flush=True)
        results["records"] = measure_records(floor, facts, args.samples)
        results["platforms"] = summary(floor.samples)
        save(args.work, results)
        print("measuring never-seen listings ...", flush=True)
        results["equivalents"] = measure_equivalents(client, facts["titles"][0])
        results["never_seen"] = measure_never_seen(client, never_seen, rng, args.per_kind)
        save(args.work, results)
        print("walking every page of productions ...", flush=True)
        results["walk"] = walk(client, "/api/v1/productions/")
        save(args.work, results)
        print(f"measuring throughput ({args.clients} clients) ...", flush=True)
        results["throughput"] = measure_throughput(base, facts, counts, args.clients, args.seconds)
        save(args.work, results)
        print("measuring the attack of never-seen listings ...", flush=True)
        info["production_ids"], info["party_ids"] = facts["production_ids"], facts["party_ids"]
        results["attack"] = attack(
            base,
            info,
            seconds=args.attack_seconds,
            idle_seconds=args.idle_seconds,
            never_seen=never_seen,
        )
        save(args.work, results)
        print("measuring the attack of never-seen searches and tags ...", flush=True)
        results["search_attack"] = attack(
            base,
            info,
            seconds=args.attack_seconds,
            idle_seconds=args.idle_seconds,
            never_seen=never_seen,
            kinds=SEARCH_ATTACK,
        )
        save(args.work, results)
        print(f"asking for {args.listings:,} never-seen listings ...", flush=True)
        results["memory"] = measure_memory(base, server.pid, never_seen, rng, args.listings)
        results["peak_rss_mb"] = peak_rss_mb(server.pid)
    finally:
        server.stop()

    results["datasette"] = None
    if not args.no_datasette and importlib.util.find_spec("datasette"):
        print("measuring datasette ...", flush=True)
        results["datasette"] = measure_datasette(database, args.samples)

    results["load_average"].append(os.getloadavg())
    results["seconds"] = time.perf_counter() - started
    results["machine"] = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    results["targets"] = [
        {"target": name, "result": result, "met": met} for name, result, met in targets(results)
    ]
    (args.work / "results.json").write_text(json.dumps(results, indent=2, default=str))
    print(report(results))
    sys.exit(0 if all(met for _, _, met in targets(results) if met is not None) else 1)


def save(work, results):
    """Write what is measured so far (a run that fails keeps it)."""
    (work / "results.json").write_text(json.dumps(results, indent=2, default=str))


def _worst(measurements):
    """(name, measurement) of the highest ratio to the floor."""
    return max(measurements.items(), key=lambda item: item[1]["ratio"])


def never_seen_checks(kinds, what, extra=""):
    """The two targets of never-seen listings of ``kinds`` (name: measurements): the
    worst first page under 100 ms and the worst of any page under 250 ms."""
    checks = []
    for key, page, bound in (
        ("first_max_ms", "first page", 100),
        ("any_page_max_ms", "any page", 250),
    ):
        name, worst = max(kinds.items(), key=lambda item: item[1][key])
        checks.append(
            (
                f"{page} of a never-seen {what} under {bound} ms{extra}",
                f"max {worst[key]:.0f} ms ({name})",
                worst[key] < bound,
            )
        )
    return checks


def targets(results):
    """(target, result, met) for every target; met is None when not measured."""
    checks = []
    imported = results["import"]
    if imported:
        checks.append(
            ("import under 180 s", f"{imported['seconds']:.1f} s", imported["seconds"] < 180)
        )
        checks.append(
            (
                "import peak RSS under 500 MB",
                f"{imported['peak_rss_mb']:.0f} MB",
                imported["peak_rss_mb"] < 500,
            )
        )
    same = results.get("list_only")
    if same:
        size = same["database_mb"]
        checks.append(
            (
                f"the JSONL-era catalogue's file under 2x its {JSONL_DATABASE_MB} MB then",
                f"{size:.0f} MB ({size / JSONL_DATABASE_MB:.2f}x)",
                size < 2 * JSONL_DATABASE_MB,
            )
        )
        checks.append(
            (
                "the JSONL-era catalogue loads in under 180 s",
                f"{same['seconds']:.1f} s, peak {same['peak_rss_mb']:.0f} MB",
                same["seconds"] < 180,
            )
        )
    pages = {
        f"{name} {depth}": m
        for name, ordering in results["orderings"].items()
        for depth, m in ordering.items()
    }
    name, worst = _worst(pages)
    checks.append(
        (
            "a productions page within 1.5x of platforms, any ordering and depth",
            f"worst {worst['ratio']:.2f}x ({name})",
            worst["ratio"] <= 1.5,
        )
    )
    records = results["records"]
    for record, limit in (
        ("production detail, every kind of nested record", 1.2),
        ("party detail, most competition results", 2.0),
    ):
        ratio = records[record]["ratio"]
        checks.append((f"{record} within {limit}x of platforms", f"{ratio:.2f}x", ratio <= limit))
    walked = results["walk"]
    checks.append(
        (
            "every productions page walked in under 15 s",
            f"{walked['pages']:,} pages in {walked['seconds']:.1f} s",
            walked["seconds"] < 15,
        )
    )
    checks.extend(never_seen_checks(results["never_seen"], "listing"))
    equivalents = results["equivalents"]
    split = [name for name, e in equivalents.items() if not e["one_listing"]]
    checks.append(
        (
            "equivalent parameter values are one listing",
            "each one listing" if not split else "not one listing: " + ", ".join(split),
            not split,
        )
    )
    attack = results["attack"]
    checks.append(
        (
            "readers' p99 under attack within 3x of idle",
            f"{attack['attack']['p99_ms']:.0f} / {attack['idle']['p99_ms']:.0f} ms = "
            f"{attack['p99_ratio']:.2f}x",
            attack["p99_ratio"] <= 3,
        )
    )
    searching = results.get("search_attack")
    if searching:
        checks.append(
            (
                "readers' p99 beside 8 clients sending only new searches within 3x of idle",
                f"{searching['attack']['p99_ms']:.0f} / {searching['idle']['p99_ms']:.0f} ms = "
                f"{searching['p99_ratio']:.2f}x",
                searching["p99_ratio"] <= 3,
            )
        )
        search_kinds = {
            name: n
            for name, n in results["never_seen"].items()
            if name.startswith(("search", "tag"))
        }
        checks.extend(never_seen_checks(search_kinds, "search or tag listing", ", every length"))
    memory = results["memory"]
    checks.append(
        (
            f"server RSS under 300 MB through {memory['listings']:,} never-seen listings",
            f"max {memory['rss_max_mb']:.0f} MB (from {memory['rss_before_mb']:.0f} MB)",
            memory["rss_max_mb"] < 300,
        )
    )
    checks.append(
        (
            "a new listing's first request as cheap after them as before (within 1.25x)",
            f"worst {memory['after_over_before']:.2f}x",
            memory["after_over_before"] <= 1.25,
        )
    )
    checks.append(
        (
            "server peak RSS under 300 MB",
            f"{results['peak_rss_mb']:.0f} MB",
            results["peak_rss_mb"] < 300,
        )
    )
    throughput = results["throughput"]
    checks.append(
        (
            f"{throughput['clients']} clients: mixed load at least 60% of platforms-only",
            f"{throughput['mix']['requests_per_second']:.0f} / "
            f"{throughput['platforms']['requests_per_second']:.0f} requests/s = "
            f"{throughput['ratio']:.0%}",
            throughput["ratio"] >= 0.6,
        )
    )
    checks.append(
        (
            "no unexpected statuses or connection errors under load",
            f"{throughput['mix']['unexpected']} unexpected, "
            f"{throughput['mix']['connection_errors']} connection errors",
            throughput["mix"]["unexpected"] == 0 and throughput["mix"]["connection_errors"] == 0,
        )
    )
    datasette = results.get("datasette")
    if datasette:
        ours = results["orderings"]["productions sortable_title"]
        first_ratio = ours["first"]["median_ms"] / datasette["first"]["median_ms"]
        deep_ratio = ours["last"]["median_ms"] / datasette["deep"]["median_ms"]
        checks.append(
            (
                "Datasette not faster on the first page",
                f"ours / Datasette = {first_ratio:.2f}",
                first_ratio <= 1,
            )
        )
        checks.append(
            (
                "Datasette not faster on a deep page",
                f"ours / Datasette = {deep_ratio:.2f}",
                deep_ratio <= 1,
            )
        )
    return checks


def _cell(s):
    return f"{s['median_ms']:.2f} / {s['p99_ms']:.2f}"


def report(results):
    counts = results["counts"]
    lines = [
        f"Catalogue: {counts['productions']:,} productions, {counts['parties']:,} parties, "
        f"{counts['releasers']:,} releasers. Machine: {results['machine']}. "
        f"Commit {results['commit']}, {results['started']}, {results['seconds'] / 60:.0f} "
        "minutes; load average (1 min) "
        + " → ".join(f"{a[0]:.1f}" for a in results["load_average"])
        + ".",
        "",
    ]
    imported = results["import"]
    if imported:
        lines.append(
            f"Import of {Path(imported['dump']).name}: {imported['seconds']:.1f} s "
            f"({imported['cpu_seconds']:.1f} s of CPU), peak RSS "
            f"{imported['peak_rss_mb']:.0f} MB."
        )
    lines += [
        f"Database file: {results['database_mb']:.0f} MB; largest tables and indexes (MB): "
        + ", ".join(f"{name} {size:.0f}" for name, size in results["table_mb"].items())
        + ".",
        "",
        "Latency, median / p99 in ms over one keep-alive client; × = median over the median "
        "of the platforms requests interleaved with it:",
        "",
        "| productions | first page | middle page | last page | random pages |",
        "|---|---|---|---|---|",
    ]
    for name, o in results["orderings"].items():
        cells = [f"{_cell(m)} ({m['ratio']:.2f}×)" for m in o.values()]
        lines.append(f"| {name.removeprefix('productions ')} | " + " | ".join(cells) + " |")
    lines += ["", "| record | median / p99 (ms) | × platforms |", "|---|---|---|"]
    for name, m in results["records"].items():
        lines.append(f"| {name} | {_cell(m)} | {m['ratio']:.2f}× |")
    lines.append(f"| platforms (the floor, every sample) | {_cell(results['platforms'])} | 1 |")
    datasette = results.get("datasette")
    if datasette:
        lines.append(
            f"| Datasette, productions as flat rows: first page, deep page (keyset) | "
            f"{_cell(datasette['first'])}, {_cell(datasette['deep'])} | |"
        )
    measured = results["measured_records"]
    party = measured["big_parties"][0]
    lines += [
        "",
        f"Measured records: {len(measured['rich_productions'])} productions with "
        f"{min(p['kinds'] for p in measured['rich_productions'])} to "
        f"{max(p['kinds'] for p in measured['rich_productions'])} of the 11 kinds of nested "
        f"record; the {len(measured['big_parties'])} parties with the most results (the "
        f"largest: {party['competitions']} competitions, {party['results']} results); the "
        f"10 releasers credited on the most productions (up to "
        f"{measured['credited_releasers'][0]['productions']}) or affiliations (up to "
        f"{measured['affiliated_releasers'][0]['productions']}).",
        "",
        "Never-seen listings (each request a listing nobody asked for before), ms:",
        "",
        "| filter | first page median / max | last or random page median / max | records |",
        "|---|---|---|---|",
    ]
    for name, n in results["never_seen"].items():
        lines.append(
            f"| {name} | {n['first_median_ms']:.0f} / {n['first_max_ms']:.0f} | "
            f"{n['any_page_median_ms']:.0f} / {n['any_page_max_ms']:.0f} | "
            f"{n['counts'][0]:,}–{n['counts'][1]:,} |"
        )
    lines += [
        "",
        "Equivalent values (page 2, a pair ordering), ms: first spelling, its repeat, the others:",
        "",
        "| values | first | repeat | others | one listing |",
        "|---|---|---|---|---|",
    ]
    for name, e in results["equivalents"].items():
        lines.append(
            f"| {' / '.join(s.replace('&', ' & ') for s in e['spellings'])} | "
            f"{e['first_ms']:.1f} | {e['repeat_ms']:.1f} | "
            f"{', '.join(f'{v:.1f}' for v in e['others_ms'])} | "
            f"{'yes' if e['one_listing'] else 'NO'} |"
        )

    throughput = results["throughput"]
    memory = results["memory"]
    lines += ["", attack_table(results["attack"]), ""]
    if results.get("search_attack"):
        lines += [attack_table(results["search_attack"]), ""]
    lines += [
        f"Throughput, {throughput['clients']} keep-alive clients, one after the other:",
        "",
        "| requests | requests/s | median (ms) | p99 (ms) | unexpected | connection errors |",
        "|---|---|---|---|---|---|",
    ]
    for name in ("mix", "platforms"):
        t = throughput[name]
        lines.append(
            f"| {'bench/clients.py mix' if name == 'mix' else 'platforms page only'} | "
            f"{t['requests_per_second']:.0f} | {t['median_ms']:.1f} | {t['p99_ms']:.1f} | "
            f"{t['unexpected']} | {t['connection_errors']} |"
        )
    before, after = memory["first_request_before_ms"], memory["first_request_after_ms"]
    lines += [
        "",
        f"Memory: {memory['listings']:,} never-seen listings in {memory['seconds']:.0f} s "
        f"({memory['requests_per_second']:.0f}/s, {memory.get('turned_away', 0):,} of them "
        f"answered 503 to retry); server RSS {memory['rss_before_mb']:.0f} MB "
        f"before, at most {memory['rss_max_mb']:.0f} MB, {memory['rss_after_mb']:.0f} MB "
        f"after; first request of a new listing before → after (median ms): "
        + ", ".join(f"{kind} {before[kind]:.1f} → {after[kind]:.1f}" for kind in before)
        + f". Server peak RSS over the run: {results['peak_rss_mb']:.0f} MB.",
        "",
        f"Walk of every productions page: {results['walk']['pages']:,} pages in "
        f"{results['walk']['seconds']:.1f} s.",
        "",
        "| target | result | met |",
        "|---|---|---|",
    ]
    lines += [
        f"| {name} | {result} | {'yes' if met else 'NO'} |"
        for name, result, met in targets(results)
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
