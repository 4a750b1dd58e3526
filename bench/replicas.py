"""Requests per second of one demoserv-serve process against two behind nginx.

    python bench/replicas.py [--clients 16] [--seconds 20] [--productions 20000] [--threads 4]

Serves one generated catalogue three ways, one after the other, and runs the same
client mix as bench/clients.py against each (keep-alive clients on loopback, listings in
every order, deep and last pages, filters, records and bad requests):

- one ``demoserv-serve`` process, clients connected to it directly;
- two replicas behind nginx with its cache off (``proxy_cache off``): what load
  balancing alone gives;
- two replicas behind nginx with its cache on: the mix repeats its paths, so most
  answers come from nginx's cache.

The replicas and nginx are started from deploy/'s files as tests/test_deploy.py starts
them (tests/deployment.py says how they are adapted): each replica with the command
line of deploy/systemd/demoserv@.service for its port, nginx with the site
deploy/nginx/demoserv.conf without its limit per client (the clients, all of one
address, would pass it at once). Every server has ``--threads`` worker threads (4 by
default) and the environment of its unit; all serve one catalogue file, the units'
/var/lib/demoserv/demoserv.sqlite3 moved to WORK/var-lib-demoserv/.

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

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(1, str(ROOT))  # tests.deployment: deploy/'s files as this machine runs them
from clients import _latency, request_mix, run_clients  # noqa: E402
from generate import generate  # noqa: E402
from servers import flask_load, start_demoserv  # noqa: E402

from demoserv.server import launcher  # noqa: E402
from tests import deployment  # noqa: E402


def free_ports(count):
    probes = [socket.socket() for _ in range(count)]
    for probe in probes:
        probe.bind(("127.0.0.1", 0))
    ports = [probe.getsockname()[1] for probe in probes]
    for probe in probes:
        probe.close()
    return ports


class Replicas:
    """Two replicas (demoserv@PORT) and nginx in front, each a started
    ``launcher.Server``; ``url`` is nginx's, ``stop()`` stops them all by process id."""

    def __init__(self, state, work, threads, cache=True):
        front, *ports = free_ports(3)
        self.servers = []
        try:
            for port in ports:
                command, env, cwd = deployment.replica(port, state)
                self.servers.append(
                    launcher.Server(
                        [*command, f"--threads={threads}"],
                        launcher.answering(f"http://127.0.0.1:{port}/api/v1/"),
                        env=env,
                        cwd=cwd,
                        name=f"demoserv@{port}",
                    ).start()
                )
            command = deployment.write_nginx(
                work, listen=f"127.0.0.1:{front}", ports=ports, cache=cache, limit=False
            )
            self.url = f"http://127.0.0.1:{front}"
            answering = launcher.answering(f"{self.url}/api/v1/")
            self.servers.append(launcher.Server(command, answering, name="nginx").start())
        except BaseException:
            self.stop()
            raise

    def stop(self):
        for server in reversed(self.servers):
            server.stop()


def measure(starter, mix, clients, seconds):
    server = starter()
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
    parser.add_argument("--threads", type=int, default=4, help="worker threads per server")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args()
    args.work = args.work.resolve()

    folder = args.work / f"load-{args.productions}-1"
    if not (folder / "productions.jsonl").exists():
        print(f"generating {folder} ...", flush=True)
        generate(folder, args.productions, 1)
    parties = sum(1 for _ in (folder / "parties.jsonl").open())
    state = args.work / "var-lib-demoserv"  # the units' /var/lib/demoserv
    state.mkdir(parents=True, exist_ok=True)
    # The one server as demoserv.service runs it, with the replicas' settings.
    env = deployment.environment("demoserv.service", state)
    flask_load(folder, env)
    mix = request_mix(args.productions, parties)
    nginx = args.work / "replicas-nginx"

    setups = {
        "one demoserv-serve process": lambda: start_demoserv(env, threads=args.threads),
        "two replicas behind nginx, no cache": lambda: Replicas(
            state, nginx, args.threads, cache=False
        ),
        "two replicas behind nginx, cache on": lambda: Replicas(state, nginx, args.threads),
    }
    results = {}
    print(f"{args.clients} clients, {args.seconds:.0f} s each, {os.cpu_count()} cores")
    for name, starter in setups.items():
        shutil.rmtree(nginx / "cache", ignore_errors=True)  # no answers of an earlier run
        results[name] = measure(starter, mix, args.clients, args.seconds)
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
