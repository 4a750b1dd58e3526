"""Slow and idle clients against waitress: how long a normal client waits for a page.

    python bench/slow_clients.py [--slow 200] [--idle 100] [--over 1100] [--cap 150]

Each scenario opens its connections, then times one normal client (connect, GET
/api/v1/platforms/, whole answer), against two servers on loopback serving the same
small catalogue:

- before: ``waitress-serve --call demoserv:serving_app`` with waitress's defaults
  (100 connections, idle connections closed after 120 s, checked every 30 s);
- after: ``demoserv-serve`` with its defaults (see demoserv/server/serving.py).

Scenarios: SLOW connections sending their headers at one byte a second; IDLE
keep-alive connections that made one request and then say nothing; and OVER slow
connections, more than demoserv-serve's connection limit. A wait that reaches CAP
seconds is reported as ">CAP". Prints a table and writes bench/out/slow-clients.json.
"""

import argparse
import json
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from servers import small_catalogue, start_demoserv, start_waitress  # noqa: E402

SLOW_HEAD = b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n"
TRICKLE = b"X-Slow: " + b"a" * 1000  # one byte a second of this, never finished


class Crowd:
    """Connections held open to ``address``: slow ones get a byte a second."""

    def __init__(self, address):
        self.address = address
        self.slow, self.idle = [], []
        self.stopped = threading.Event()
        self.trickler = threading.Thread(target=self._trickle, daemon=True)
        self.trickler.start()

    def _connect(self):
        connection = socket.create_connection(self.address, timeout=5)
        connection.setblocking(False)
        return connection

    def add_slow(self, count):
        for _ in range(count):
            connection = self._connect()
            connection.send(SLOW_HEAD)
            self.slow.append(connection)

    def add_idle(self, count):
        for _ in range(count):
            connection = self._connect()
            connection.send(b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
            self.idle.append(connection)

    def _trickle(self):
        position = 0
        while not self.stopped.wait(1.0):
            byte = TRICKLE[position % len(TRICKLE) : position % len(TRICKLE) + 1]
            position += 1
            for connection in list(self.slow):
                try:
                    connection.send(byte)
                except OSError:
                    pass

    def close(self):
        self.stopped.set()
        self.trickler.join()
        for connection in self.slow + self.idle:
            connection.close()


def wait_for_page(address, cap):
    """Seconds until a normal client has its page, or None past ``cap`` seconds."""
    started = time.monotonic()
    deadline = started + cap
    try:
        connection = socket.create_connection(address, timeout=cap)
        connection.sendall(
            b"GET /api/v1/platforms/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        data = b""
        while time.monotonic() < deadline:
            connection.settimeout(max(deadline - time.monotonic(), 0.01))
            chunk = connection.recv(65536)
            if not chunk:
                break
            data += chunk
        connection.close()
    except OSError:
        return None
    if not data.startswith(b"HTTP/1.1 200 ") or time.monotonic() >= deadline:
        return None
    return time.monotonic() - started


def scenario(starter, env, slow, idle, cap):
    server = starter(env)
    host, port = server.url.removeprefix("http://").split(":")
    address = (host, int(port))
    crowd = Crowd(address)
    try:
        crowd.add_idle(idle)
        crowd.add_slow(slow)
        time.sleep(1.0)  # let the server take in the connections it will take
        return wait_for_page(address, cap)
    finally:
        crowd.close()
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slow", type=int, default=200)
    parser.add_argument("--idle", type=int, default=100)
    parser.add_argument("--over", type=int, default=1100)
    parser.add_argument("--cap", type=float, default=150)
    parser.add_argument("--work", type=Path, default=Path(__file__).resolve().parent / "out")
    args = parser.parse_args()
    env = small_catalogue(args.work, "slow-clients")

    servers = {
        "before (waitress defaults)": lambda env: start_waitress(env, 4),
        "after (demoserv-serve)": start_demoserv,
    }
    scenarios = {
        f"{args.slow} slow-header connections": (args.slow, 0),
        f"{args.idle} idle keep-alive connections": (0, args.idle),
        f"{args.over} slow-header connections": (args.over, 0),
    }
    results = {}
    for what, (slow, idle) in scenarios.items():
        for server, starter in servers.items():
            waited = scenario(starter, env, slow, idle, args.cap)
            shown = f">{args.cap:.0f} s" if waited is None else f"{waited:.2f} s"
            print(f"{what:<40} {server:<28} normal client waited {shown}", flush=True)
            results.setdefault(what, {})[server] = None if waited is None else round(waited, 2)
    (args.work / "slow-clients.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
