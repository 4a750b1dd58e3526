"""Clients that never read their answers, against waitress: how often a normal reader
is answered within 3 s.

    python bench/never_read.py [--clients 16 100] [--requests 170] [--before PATH]

Each of CLIENTS connections sends REQUESTS pipelined ``GET /api/v1/openapi.json`` (the
largest answer) and never reads; after WARM seconds, a normal client asks for
``/api/v1/platforms/`` ten times, each on a new connection with a 3 s timeout. Servers,
on loopback, serving the same catalogue:

- ``waitress-serve --call demoserv:serving_app`` with waitress's defaults;
- ``demoserv-serve`` with its defaults (see demoserv/server/serving.py);
- with ``--before PATH``: ``demoserv serve`` from the checkout at PATH (an earlier commit
  whose serve takes ``--ready-file``).

Prints a table and writes bench/out/never-read.json.
"""

import argparse
import json
import socket
import statistics
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from servers import small_catalogue, start_demoserv, start_waitress  # noqa: E402

READER_TIMEOUT = 3.0


def attack(base, clients, requests):
    """``clients`` connections, each sending ``requests`` pipelined requests it never reads."""
    host, port = base.removeprefix("http://").split(":")
    request = b"GET /api/v1/openapi.json HTTP/1.1\r\nHost: localhost\r\n\r\n"
    connections = []
    for _ in range(clients):
        connection = socket.create_connection((host, int(port)), timeout=5)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        connection.sendall(request * requests)
        connections.append(connection)
    return connections


def read(base, tries=10):
    """Seconds each of ``tries`` normal requests took (None: no answer within the timeout)."""
    waits = []
    for _ in range(tries):
        started = time.monotonic()
        try:
            with urllib.request.urlopen(base + "/api/v1/platforms/", timeout=READER_TIMEOUT) as r:
                r.read()
            waits.append(time.monotonic() - started)
        except OSError:
            waits.append(None)
    return waits


def scenario(starter, env, clients, requests, warm):
    server = starter(env)
    base = server.url
    try:
        connections = attack(base, clients, requests)
        time.sleep(warm)  # let the server do what it will for them
        waits = read(base)
        for connection in connections:
            connection.close()
        return waits
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[16, 100])
    parser.add_argument("--requests", type=int, default=170)
    parser.add_argument("--warm", type=float, default=6.0)
    parser.add_argument("--before", type=Path, help="a checkout of an earlier commit")
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args()
    env = small_catalogue(args.work, "never-read")

    servers = {"waitress defaults": lambda env: start_waitress(env, 4)}
    if args.before:
        servers["demoserv-serve before"] = lambda env: start_demoserv(env, checkout=args.before)
    servers["demoserv-serve"] = start_demoserv
    results = {}
    for clients in args.clients:
        for server, starter in servers.items():
            waits = scenario(starter, env, clients, args.requests, args.warm)
            on_time = [w for w in waits if w is not None and w < READER_TIMEOUT]
            median = f"{statistics.median(on_time) * 1000:.1f} ms" if on_time else "-"
            print(
                f"{clients:>4} never-reading clients  {server:<24} "
                f"answered within 3 s: {len(on_time)}/10, median {median}",
                flush=True,
            )
            results.setdefault(str(clients), {})[server] = {
                "on_time": len(on_time),
                "waits_ms": [None if w is None else round(w * 1000, 1) for w in waits],
            }
    (args.work / "never-read.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
