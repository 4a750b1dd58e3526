"""The browsable HTML page against the JSON answer of the same address, side by side in
one run on one ``demoserv-serve`` (started by ``bench/servers.py``), one keep-alive
client:

    python bench/browsable.py --database FILE [--samples 300] [--only productions]

For each of ``repeated.py``'s pages (platforms; productions: first, deep and ordered
pages; parties, releasers, bbses, party series; a production detail) it asks for the
JSON (``Accept: application/json``) and for the HTML page (a browser's ``Accept``) in
alternate blocks of ``BLOCK`` requests, both with a browser's ``Accept-Encoding`` (the
answer in brotli) and both without one:

- first: the page under an address nobody asked for before (an unknown parameter with
  a new value, which the API ignores): the view runs, and the answer is built and kept;
- repeated: the same address again and again: its kept answer.

It measures each request's time at the client (median and p99, ms) and the server's
CPU time per request over each block (every thread's, from ``/proc/PID/task/*/
schedstat``): a machine shared with other work stretches the wall time of the longer
request more than its CPU time. Prints a Markdown table with the ratios, HTML over
JSON, of both; writes ``<work>/browsable.json``. The target: the page of a listing
costs at most 2x the server's CPU of its JSON answer, first and repeated; exits 1 if
one is missed.
"""

import argparse
import itertools
import json
import os
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from benchmark import Client, summary  # noqa: E402
from repeated import pages  # noqa: E402
from servers import start_demoserv  # noqa: E402

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
KINDS = {"json": "application/json", "html": BROWSER}
ENCODINGS = {"br": "gzip, deflate, br, zstd", "none": None}  # Chromium's, and none
TARGET = 2.0
BLOCK = 20  # requests of one kind between two readings of the server's CPU time


def cpu_seconds(pid):
    """The CPU time of every thread of process ``pid`` so far (nanoseconds, exact)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that ended meanwhile
    return total / 1e9


def measure_page(client, pid, path, phase, encoding, samples, counter):
    """{kind: (latencies, server CPU seconds per request, bytes of the last answer)} of
    one page: a block of each kind in turn, each first in turn, after a warm-up."""
    latencies = {kind: [] for kind in KINDS}
    cpu = dict.fromkeys(KINDS, 0.0)
    size = {}
    separator = "&" if "?" in path else "?"
    blocks = max(1, samples // BLOCK)
    for block in range(-1, blocks):  # block -1 warms up
        for kind in list(KINDS)[:: 1 if block % 2 else -1]:
            headers = {"Accept": KINDS[kind]}
            if ENCODINGS[encoding]:
                headers["Accept-Encoding"] = ENCODINGS[encoding]
            started = cpu_seconds(pid)
            for _ in range(BLOCK):
                address = path if phase == "repeated" else f"{path}{separator}b={next(counter)}"
                elapsed, body = client.timed(address, headers=headers)
                if block >= 0:
                    latencies[kind].append(elapsed)
                size[kind] = len(body)
            if block >= 0:
                cpu[kind] += cpu_seconds(pid) - started
    return {kind: (latencies[kind], cpu[kind] / (blocks * BLOCK), size[kind]) for kind in KINDS}


def measure(server, samples, only=""):
    client = Client(server.url)
    counter = itertools.count()
    rows = []
    for name, path in pages(server.url):
        if only not in name:
            continue
        for encoding in ENCODINGS:
            for phase in ("first", "repeated"):
                measured = measure_page(client, server.pid, path, phase, encoding, samples, counter)
                row = {"page": name, "path": path, "encoding": encoding, "phase": phase}
                for kind, (found, cpu, size) in measured.items():
                    row[kind] = {**summary(found), "cpu_ms": cpu * 1000, "bytes": size}
                row["wall_ratio"] = statistics.median(measured["html"][0]) / statistics.median(
                    measured["json"][0]
                )
                row["cpu_ratio"] = measured["html"][1] / measured["json"][1]
                row["listing"] = "detail" not in name
                rows.append(row)
                print(
                    f"{name}, {encoding}, {phase}: CPU {row['cpu_ratio']:.2f}x "
                    f"({row['html']['cpu_ms']:.2f} / {row['json']['cpu_ms']:.2f} ms), "
                    f"wall {row['wall_ratio']:.2f}x",
                    flush=True,
                )
    return rows


def report(rows):
    lines = [
        "| page | encoding | phase | JSON: CPU ms, median / p99 ms | HTML: CPU ms, median / "
        "p99 ms | CPU ratio | wall ratio | bytes JSON / HTML |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        json_row, html_row = row["json"], row["html"]
        lines.append(
            f"| {row['page']} | {row['encoding']} | {row['phase']} "
            f"| {json_row['cpu_ms']:.2f}, {json_row['median_ms']:.2f} / {json_row['p99_ms']:.2f} "
            f"| {html_row['cpu_ms']:.2f}, {html_row['median_ms']:.2f} / {html_row['p99_ms']:.2f} "
            f"| {row['cpu_ratio']:.2f} | {row['wall_ratio']:.2f} "
            f"| {json_row['bytes']} / {html_row['bytes']} |"
        )
    for phase in ("first", "repeated"):
        listed = [row for row in rows if row["listing"] and row["phase"] == phase]
        worst = max(row["cpu_ratio"] for row in listed)
        wall = max(row["wall_ratio"] for row in listed)
        met = "met" if worst <= TARGET else "MISSED"
        lines.append(
            f"\nListings, {phase}: CPU at most {worst:.2f}x (target {TARGET}x): {met}; "
            f"wall time at most {wall:.2f}x"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", type=Path, required=True, help="a loaded catalogue file")
    parser.add_argument("--work", type=Path, default=HERE / "out" / "browsable")
    parser.add_argument("--samples", type=int, default=300, help="requests of each kind")
    parser.add_argument("--only", default="", help="only the pages whose name holds this")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, DEMOSERV_DATABASE=str(args.database.resolve()), DEMOSERV_SEED_DIR="")
    server = start_demoserv(env)
    try:
        rows = measure(server, args.samples, args.only)
    finally:
        server.stop()
    (args.work / "browsable.json").write_text(json.dumps(rows, indent=2))
    print(report(rows))
    worst = max(row["cpu_ratio"] for row in rows if row["listing"])
    sys.exit(0 if worst <= TARGET else 1)


if __name__ == "__main__":
    main()
