"""The browsable HTML page against the JSON answer of the same address, side by side in
one run on one ``demoserv-serve`` (started by ``bench/servers.py``), one keep-alive
client:

    python bench/browsable.py --database FILE [--samples 300] [--only productions]

For each of ``repeated.py``'s pages (platforms; productions: first, deep and ordered
pages; parties, releasers, bbses, party series; a production detail) it asks for the
JSON (``Accept: application/json``) and for the HTML page (a browser's ``Accept``),
alternately request by request, both with a browser's ``Accept-Encoding`` (the answer
in brotli) and both without one:

- first: the page under an address nobody asked for before (an unknown parameter with
  a new value, which the API ignores): the view runs, and the answer is built and kept;
- repeated: the same address again and again: its kept answer.

Prints the medians and p99s (ms), the bytes sent and the ratio of the medians, HTML over
JSON, as a Markdown table; writes ``<work>/browsable.json``. The target: the page of a
listing within 2x of its JSON answer, first and repeated; exits 1 if one is missed.
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
WARM_UP = 5


def measure_page(client, path, phase, encoding, samples, counter):
    """{kind: (latencies, bytes of the last answer)} of one page, JSON and HTML
    alternately (each first in turn)."""
    found = {kind: [] for kind in KINDS}
    size = {}
    separator = "&" if "?" in path else "?"
    for index in range(WARM_UP + samples):
        order = list(KINDS) if index % 2 else list(KINDS)[::-1]
        for kind in order:
            address = path if phase == "repeated" else f"{path}{separator}bench={next(counter)}"
            headers = {"Accept": KINDS[kind]}
            if ENCODINGS[encoding]:
                headers["Accept-Encoding"] = ENCODINGS[encoding]
            elapsed, body = client.timed(address, headers=headers)
            if index >= WARM_UP:
                found[kind].append(elapsed)
            size[kind] = len(body)
    return {kind: (found[kind], size[kind]) for kind in KINDS}


def measure(base, samples, only=""):
    client = Client(base)
    counter = itertools.count()
    rows = []
    for name, path in pages(base):
        if only not in name:
            continue
        for encoding in ENCODINGS:
            for phase in ("first", "repeated"):
                measured = measure_page(client, path, phase, encoding, samples, counter)
                row = {"page": name, "path": path, "encoding": encoding, "phase": phase}
                for kind, (latencies, size) in measured.items():
                    row[kind] = {**summary(latencies), "bytes": size}
                json_median = statistics.median(measured["json"][0])
                row["ratio"] = statistics.median(measured["html"][0]) / json_median
                row["listing"] = "detail" not in name
                rows.append(row)
                print(
                    f"{name}, {encoding}, {phase}: {row['ratio']:.2f}x "
                    f"({row['html']['median_ms']:.2f} / {row['json']['median_ms']:.2f} ms)",
                    flush=True,
                )
    return rows


def report(rows):
    lines = [
        "| page | encoding | phase | JSON median / p99 ms | HTML median / p99 ms "
        "| ratio | bytes JSON / HTML |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        json_row, html_row = row["json"], row["html"]
        lines.append(
            f"| {row['page']} | {row['encoding']} | {row['phase']} "
            f"| {json_row['median_ms']:.2f} / {json_row['p99_ms']:.2f} "
            f"| {html_row['median_ms']:.2f} / {html_row['p99_ms']:.2f} "
            f"| {row['ratio']:.2f} | {json_row['bytes']} / {html_row['bytes']} |"
        )
    listings = [row for row in rows if row["listing"]]
    for phase in ("first", "repeated"):
        worst = max(row["ratio"] for row in listings if row["phase"] == phase)
        met = "met" if worst <= TARGET else "MISSED"
        lines.append(f"\nListings, {phase}: at most {worst:.2f}x (target {TARGET}x): {met}")
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
        rows = measure(server.url, args.samples, args.only)
    finally:
        server.stop()
    (args.work / "browsable.json").write_text(json.dumps(rows, indent=2))
    print(report(rows))
    worst = max(row["ratio"] for row in rows if row["listing"])
    sys.exit(0 if worst <= TARGET else 1)


if __name__ == "__main__":
    main()
