"""Load test: many concurrent keep-alive clients against waitress on loopback, with a
catalogue reload in the middle of the run.

    python bench/load.py [--clients 32] [--seconds 60] [--productions 50000]

Two catalogues of the same size but different records are generated; the first is
loaded and served by ``waitress-serve``, and halfway through the run ``flask load``
replaces it with the second. Clients cycle through a mix of listings in every order,
deep and last pages, filtered pages, records and bad requests, each with the status it
must get. The run reports throughput, median and p99 latency, statuses that were not
the expected ones, and connection errors; the target is zero of both (exit status 1
otherwise). Every request is bounded: a client stops at the deadline.
"""

import argparse
import http.client
import json
import os
import random
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from benchmark import flask_load, start_waitress, stop  # noqa: E402
from generate import generate  # noqa: E402


def request_mix(productions, parties, seed=1):
    """(method, path, headers, expected status) for a mix like real clients'."""
    rng = random.Random(seed)
    last_production_page = -(-productions // 100)
    last_party_page = -(-parties // 100)
    mix = []
    for key in (
        "sortable_title",
        "-sortable_title",
        "release_date_date",
        "-release_date_date",
        "supertype",
        "-id",
    ):
        for _ in range(4):
            mix.append(
                (
                    "GET",
                    f"/api/v1/productions/?ordering={key}"
                    f"&page={rng.randint(1, last_production_page)}",
                    {},
                    200,
                )
            )
        mix.append(("GET", f"/api/v1/productions/?ordering={key}&page=last", {}, 200))
    for key in ("name", "-start_date_date", "end_date_date", "-country_code"):
        mix.append(
            (
                "GET",
                f"/api/v1/parties/?ordering={key}&page={rng.randint(1, last_party_page)}",
                {},
                200,
            )
        )
    for _ in range(10):
        mix.append(("GET", f"/api/v1/productions/{rng.randint(1, productions)}/", {}, 200))
        mix.append(("GET", f"/api/v1/parties/{rng.randint(1, parties)}/", {}, 200))
    mix += [
        ("GET", "/api/v1/platforms/", {}, 200),
        ("GET", "/api/v1/", {}, 200),
        ("GET", "/api/v1/productions/?supertype=music&ordering=-release_date_date&page=2", {}, 200),
        ("GET", "/api/v1/productions/?released_since=1995&released_before=1996", {}, 200),
        ("GET", "/api/v1/productions/?ordering=supertype,-release_date_date&page=7", {}, 200),
        ("GET", "/api/v1/productions/", {"Accept-Encoding": "gzip"}, 200),
        ("GET", "/api/v1/productions/?page=0", {}, 404),
        ("GET", f"/api/v1/productions/?page={last_production_page + 1}", {}, 404),
        ("GET", "/api/v1/productions/?ordering=nope", {}, 400),
        ("GET", "/api/v1/productions/?released_before=1993-02-30", {}, 400),
        ("GET", f"/api/v1/productions/{productions + 1000}/", {}, 404),
        ("POST", "/api/v1/productions/", {}, 405),
        ("GET", "/api/v1/platforms/", {"Accept": "text/html"}, 406),
        ("GET", "/api/v1/productions/?title=" + "x" * 9000, {}, 414),
    ]
    return mix


def run_clients(base, mix, clients, seconds):
    host, port = base.removeprefix("http://").split(":")
    deadline = time.monotonic() + seconds
    latencies, unexpected, connection_errors = [], Counter(), Counter()
    lock = threading.Lock()

    def client(index):
        rng = random.Random(index)
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        mine = []
        while time.monotonic() < deadline:
            method, path, headers, expected = rng.choice(mix)
            started = time.perf_counter()
            try:
                connection.request(method, path, headers=headers)
                response = connection.getresponse()
                response.read()
            except (OSError, http.client.HTTPException) as error:
                with lock:
                    connection_errors[type(error).__name__] += 1
                connection.close()
                connection = http.client.HTTPConnection(host, int(port), timeout=30)
                continue
            mine.append(time.perf_counter() - started)
            if response.status != expected:
                with lock:
                    unexpected[(method, path[:80], expected, response.status)] += 1
        connection.close()
        with lock:
            latencies.extend(mine)

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    return threads, latencies, unexpected, connection_errors


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--productions", type=int, default=50_000)
    parser.add_argument("--threads", type=int, default=4, help="waitress worker threads")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args()

    folders = []
    for seed in (1, 2):
        folder = args.work / f"load-{args.productions}-{seed}"
        if not (folder / "productions.jsonl").exists():
            print(f"generating {folder} ...", flush=True)
            generate(folder, args.productions, seed)
        folders.append(folder)
    parties = sum(1 for _ in (folders[0] / "parties.jsonl").open())
    database = args.work / "load.sqlite3"
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")

    flask_load(folders[0], env)
    process, base = start_waitress(env, args.threads)
    try:
        mix = request_mix(args.productions, parties)
        print(f"{args.clients} clients for {args.seconds:.0f} s ...", flush=True)
        started = time.monotonic()
        threads, latencies, unexpected, connection_errors = run_clients(
            base, mix, args.clients, args.seconds
        )
        time.sleep(args.seconds / 2)  # the reload happens halfway through the run
        reload_seconds = flask_load(folders[1], env)
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    finally:
        stop(process)

    latencies.sort()
    results = {
        "clients": args.clients,
        "seconds": round(elapsed, 1),
        "requests": len(latencies),
        "requests_per_second": round(len(latencies) / elapsed, 1),
        "p50_ms": round(statistics.median(latencies) * 1000, 2) if latencies else None,
        "p99_ms": round(latencies[int(len(latencies) * 0.99)] * 1000, 2) if latencies else None,
        "unexpected_statuses": sum(unexpected.values()),
        "connection_errors": sum(connection_errors.values()),
        "reload_seconds": round(reload_seconds, 1),
        "productions": args.productions,
    }
    (args.work / "load-results.json").write_text(json.dumps(results, indent=2))
    print(json.dumps(results, indent=2))
    for (method, path, expected, got), count in unexpected.most_common(10):
        print(f"unexpected: {method} {path} wanted {expected}, got {got} ({count} times)")
    for name, count in connection_errors.items():
        print(f"connection error: {name} ({count} times)")
    sys.exit(0 if not unexpected and not connection_errors else 1)


if __name__ == "__main__":
    main()
