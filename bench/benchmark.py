"""Benchmark demoserv at a given catalogue size, over HTTP through waitress on loopback,
and Datasette serving the same SQLite file, in the same run.

    python bench/benchmark.py [--productions 375000] [--work bench/out] [--samples 100]

It generates the catalogue (bench/generate.py) unless it exists, times ``flask load``,
starts ``waitress-serve`` and measures:

- median and p99 latency of the first, last and random pages of every ordering (each
  key, both directions) of productions and parties, and of ``/api/v1/platforms/``;
- requests per second with 8 concurrent keep-alive clients over a mix of pages;
- the time to walk every page of productions by following ``next``;
- the server's peak resident memory (VmHWM);
- Datasette (if installed) on the first and a deep page of the same file, sorted by
  the same rank column and paged by its keyset ``_next`` token.

It prints a Markdown table with each target met or missed, and writes the numbers to
``<work>/results.json``. Exit status 1 when a target is missed.
"""

import argparse
import http.client
import json
import os
import platform
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import generate  # noqa: E402

ORDERINGS = {
    "productions": ["sortable_title", "release_date_date", "supertype", "id"],
    "parties": ["name", "start_date_date", "end_date_date", "country_code", "id"],
}
PAGE_SIZE = 100


class Client:
    """One keep-alive HTTP connection; ``get`` returns (status, body bytes)."""

    def __init__(self, base):
        parts = urlsplit(base)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)

    def get(self, path):
        self.connection.request("GET", path)
        response = self.connection.getresponse()
        return response.status, response.read()

    def timed(self, path):
        started = time.perf_counter()
        status, body = self.get(path)
        elapsed = time.perf_counter() - started
        if status != 200:
            raise RuntimeError(f"{path}: {status} {body[:200]!r}")
        return elapsed, body


def start(command, env, pattern):
    """Start a server process and return (process, base URL) once it listens."""
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    for line in process.stderr:
        match = re.search(pattern, line)
        if match:
            threading.Thread(target=lambda: process.stderr.read(), daemon=True).start()
            return process, match.group(1)
    raise RuntimeError(f"{command[0]} did not start (exit {process.wait()})")


def start_waitress(env, threads):
    """``waitress-serve`` on a free loopback port: (process, base URL)."""
    command = [sys.executable, "-m", "waitress", "--listen=127.0.0.1:0", f"--threads={threads}"]
    return start(
        [*command, "--call", "demoserv:create_app"],
        env,
        r"Serving on (http://127\.0\.0\.1:[0-9]+)",
    )


def flask_load(folder, env):
    """Run ``flask load folder`` for the database named in ``env``; its seconds."""
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "flask", "--app", "demoserv", "load", str(folder)],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def stop(process):
    process.terminate()
    process.wait(timeout=60)


def peak_rss_mb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return None


def summary(samples):
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
    }


def sample(client, paths, count):
    """Latency summary of ``count`` requests cycling through ``paths`` (after a warm-up)."""
    for path in paths[:3]:
        client.timed(path)
    return summary([client.timed(paths[i % len(paths)])[0] for i in range(count)])


def last_pages(client):
    """The number of pages of each measured resource."""
    pages = {}
    for resource in ORDERINGS:
        _, body = client.timed(f"/api/v1/{resource}/")
        pages[resource] = max(1, -(-json.loads(body)["count"] // PAGE_SIZE))
    return pages


def measure_orderings(client, rng, samples, pages):
    results = {}
    for resource, keys in ORDERINGS.items():
        last = pages[resource]
        for key in keys:
            for sign in ("", "-"):
                base = f"/api/v1/{resource}/?ordering={sign}{key}"
                randoms = [f"{base}&page={rng.randint(1, last)}" for _ in range(samples)]
                results[f"{resource} {sign}{key}"] = {
                    "first": sample(client, [base], samples),
                    "last": sample(client, [f"{base}&page={last}"], samples),
                    "random": sample(client, randoms, samples),
                }
    return results


def throughput(base, paths, clients=8, seconds=10.0):
    """Requests per second of ``clients`` keep-alive clients cycling through ``paths``."""
    done, errors = [0] * clients, [0] * clients
    deadline = time.monotonic() + seconds

    def run(index):
        client = Client(base)
        local = random.Random(index)
        while time.monotonic() < deadline:
            status, _ = client.get(local.choice(paths))
            done[index] += 1
            errors[index] += status != 200

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return {"requests_per_second": sum(done) / (time.monotonic() - started), "errors": sum(errors)}


def walk(client, path):
    started, pages = time.perf_counter(), 0
    while path:
        _, body = client.timed(path)
        pages += 1
        following = json.loads(body)["next"]
        path = urlsplit(following)._replace(scheme="", netloc="").geturl() if following else None
    return {"pages": pages, "seconds": time.perf_counter() - started}


def measure_datasette(database, samples):
    """Datasette on the same file: the first and a deep page of productions, flat rows,
    sorted by the same rank column, the deep page reached by its keyset token."""
    import sqlite3

    connection = sqlite3.connect(f"file:{database}?mode=ro", uri=True)
    count = connection.execute(
        "SELECT count FROM record_counts WHERE resource = 'productions'"
    ).fetchone()[0]
    deep_rank = max(0, count - PAGE_SIZE)
    deep_id = connection.execute(
        "SELECT id FROM productions WHERE rank_sortable_title = ?", (deep_rank,)
    ).fetchone()
    connection.close()
    process, base = start(
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
        client = Client(base)
        table = (
            f"/{Path(database).stem}/productions.json"
            f"?_size={PAGE_SIZE}&_sort=rank_sortable_title&_shape=objects"
        )
        deep = f"{table}&_next={deep_rank},{deep_id[0]}" if deep_id else table
        return {"first": sample(client, [table], samples), "deep": sample(client, [deep], samples)}
    finally:
        stop(process)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--productions", type=int, default=375_000)
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--threads", type=int, default=4, help="waitress worker threads")
    parser.add_argument("--seconds", type=float, default=10.0, help="throughput run length")
    args = parser.parse_args()

    args.work.mkdir(parents=True, exist_ok=True)
    catalogue = args.work / f"catalogue-{args.productions}"
    if not (catalogue / "productions.jsonl").exists():
        print(f"generating {catalogue} ...", flush=True)
        generate(catalogue, args.productions)
    database = args.work / "bench.sqlite3"
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")

    print("loading ...", flush=True)
    results = {"load_seconds": flask_load(catalogue, env), "productions": args.productions}

    process, base = start_waitress(env, args.threads)
    try:
        client = Client(base)
        rng = random.Random(1)
        print("measuring pages ...", flush=True)
        results["platforms"] = sample(client, ["/api/v1/platforms/"], args.samples)
        pages = last_pages(client)
        results["orderings"] = measure_orderings(client, rng, args.samples, pages)
        mix = [
            f"/api/v1/{resource}/?ordering={sign}{key}&page={rng.randint(1, pages[resource])}"
            for resource, keys in ORDERINGS.items()
            for key in keys
            for sign in ("", "-")
            for _ in range(5)
        ] + ["/api/v1/platforms/", "/api/v1/productions/?page=last"]
        print("measuring throughput ...", flush=True)
        results["throughput"] = throughput(base, mix, seconds=args.seconds)
        print("walking every page of productions ...", flush=True)
        results["walk"] = walk(client, "/api/v1/productions/")
        results["peak_rss_mb"] = peak_rss_mb(process.pid)
    finally:
        stop(process)

    try:
        import datasette  # noqa: F401
    except ImportError:
        results["datasette"] = None
    else:
        print("measuring datasette ...", flush=True)
        results["datasette"] = measure_datasette(database, args.samples)

    results["machine"] = (
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    (args.work / "results.json").write_text(json.dumps(results, indent=2))
    print(report(results))
    sys.exit(0 if all(met for _, met in targets(results)) else 1)


def targets(results):
    orderings = results["orderings"]
    worst_last = max(o["last"]["median_ms"] / o["first"]["median_ms"] for o in orderings.values())
    productions_first = orderings["productions sortable_title"]["first"]["median_ms"]
    checks = [
        (
            f"last page within 1.5x of first, every ordering (worst {worst_last:.2f}x)",
            worst_last <= 1.5,
        ),
        (
            "productions page within 4x of platforms "
            f"({productions_first / results['platforms']['median_ms']:.2f}x)",
            productions_first <= 4 * results["platforms"]["median_ms"],
        ),
        (
            "every productions page walked in under 2 minutes "
            f"({results['walk']['seconds']:.1f} s)",
            results["walk"]["seconds"] < 120,
        ),
        (
            f"catalogue loaded in under 3 minutes ({results['load_seconds']:.1f} s)",
            results["load_seconds"] < 180,
        ),
        (
            f"server peak RSS under 300 MB ({results['peak_rss_mb']:.0f} MB)",
            results["peak_rss_mb"] < 300,
        ),
        (
            f"no errors under 8 concurrent clients ({results['throughput']['errors']})",
            results["throughput"]["errors"] == 0,
        ),
    ]
    datasette = results.get("datasette")
    if datasette:
        ours_last = orderings["productions sortable_title"]["last"]["median_ms"]
        first_ratio = productions_first / datasette["first"]["median_ms"]
        deep_ratio = ours_last / datasette["deep"]["median_ms"]
        checks.append(
            (
                f"Datasette not faster on the first page (ours/Datasette {first_ratio:.2f})",
                first_ratio <= 1,
            )
        )
        checks.append(
            (
                f"Datasette not faster on a deep page (ours/Datasette {deep_ratio:.2f})",
                deep_ratio <= 1,
            )
        )
    return checks


def report(results):
    lines = [
        f"Catalogue: {results['productions']:,} productions. Machine: {results['machine']}.",
        "",
        "| listing | first median / p99 (ms) | last median / p99 (ms) | random median / p99 (ms) |",
        "|---|---|---|---|",
    ]
    cell = lambda s: f"{s['median_ms']:.2f} / {s['p99_ms']:.2f}"  # noqa: E731
    for name, o in results["orderings"].items():
        lines.append(f"| {name} | {cell(o['first'])} | {cell(o['last'])} | {cell(o['random'])} |")
    lines.append(f"| platforms (floor) | {cell(results['platforms'])} | | |")
    datasette = results.get("datasette")
    if datasette:
        lines.append(
            f"| Datasette productions, flat rows | {cell(datasette['first'])} | "
            f"{cell(datasette['deep'])} (keyset) | |"
        )
    lines += [
        "",
        f"- load: {results['load_seconds']:.1f} s",
        f"- walk of every productions page: {results['walk']['pages']} pages "
        f"in {results['walk']['seconds']:.1f} s",
        f"- 8 concurrent clients: {results['throughput']['requests_per_second']:.0f} requests/s, "
        f"{results['throughput']['errors']} errors",
        f"- server peak RSS: {results['peak_rss_mb']:.0f} MB",
        "",
        "| target | met |",
        "|---|---|",
    ]
    lines += [f"| {name} | {'yes' if met else 'NO'} |" for name, met in targets(results)]
    return "\n".join(lines)


if __name__ == "__main__":
    main()
