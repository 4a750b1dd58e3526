"""Requests per second of one demoserv-serve process against two behind nginx.

    python bench/replicas.py [--clients 16] [--seconds 20] [--productions 20000]

Serves one generated catalogue three ways, one after the other, and runs the same
client mix as bench/clients.py against each (keep-alive clients on loopback, listings in
every order, deep and last pages, filters, records and bad requests):

- one ``demoserv-serve`` process (4 threads), clients connected to it directly;
- two replicas behind nginx with its cache off (``deploy/run-replicas --no-cache``):
  what load balancing alone gives;
- two replicas behind nginx with its cache on (``deploy/run-replicas``): the mix
  repeats its paths, so most answers come from nginx's cache.

Prints a table and writes bench/out/replicas.json. The clients, nginx and the
replicas share the machine's cores; the client mix runs in Python threads.
"""

import argparse
import json
import os
import shutil
import socket
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from clients import _latency, request_mix, run_clients  # noqa: E402
from generate import generate  # noqa: E402
from servers import flask_load, start_demoserv  # noqa: E402

from demoserv.server import launcher  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def start_replicas(env, work, extra=()):
    """deploy/run-replicas with two replicas on free ports, ready once it has written
    its ready file: a started ``launcher.Server``."""
    ports = []
    for _ in range(3):
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        ports.append(probe)
    numbers = [probe.getsockname()[1] for probe in ports]
    for probe in ports:
        probe.close()
    command = [
        sys.executable,
        ROOT / "deploy" / "run-replicas",
        "--replicas=2",
        f"--listen=127.0.0.1:{numbers[0]}",
        f"--replica-port={numbers[1]}",
        f"--replica-port={numbers[2]}",
        f"--work={work}",
        "--threads=4",
        *extra,
    ]
    return launcher.ReadyFileServer(command, env=env, name="run-replicas").start()


def start_one(env, work):
    return start_demoserv(env, threads=4)


def measure(starter, env, work, mix, clients, seconds):
    server = starter(env, work)
    try:
        started = time.monotonic()
        threads, latencies, unexpected, errors = run_clients(server.url, mix, clients, seconds)
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - started
    finally:
        server.stop()
    return {
        **_latency(latencies, elapsed),
        "unexpected_statuses": sum(unexpected.values()),
        "connection_errors": sum(errors.values()),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--productions", type=int, default=20_000)
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args()

    folder = args.work / f"load-{args.productions}-1"
    if not (folder / "productions.jsonl").exists():
        print(f"generating {folder} ...", flush=True)
        generate(folder, args.productions, 1)
    parties = sum(1 for _ in (folder / "parties.jsonl").open())
    database = args.work / "replicas.sqlite3"
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")
    flask_load(folder, env)
    mix = request_mix(args.productions, parties)

    setups = {
        "one demoserv-serve process": start_one,
        "two replicas behind nginx, no cache": lambda env, work: start_replicas(
            env, work, ["--no-cache"]
        ),
        "two replicas behind nginx, cache on": start_replicas,
    }
    results = {}
    print(f"{args.clients} clients, {args.seconds:.0f} s each, {os.cpu_count()} cores")
    for name, starter in setups.items():
        work = args.work / "replicas-nginx"
        shutil.rmtree(work / "cache", ignore_errors=True)  # no answers of an earlier run
        results[name] = measure(starter, env, work, mix, args.clients, args.seconds)
        row = results[name]
        print(
            f"{name:<38} {row['requests_per_second']:>8} requests/s  p50 {row['median_ms']} ms  "
            f"p99 {row['p99_ms']} ms  unexpected {row['unexpected_statuses']}  "
            f"errors {row['connection_errors']}",
            flush=True,
        )
    (args.work / "replicas.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
