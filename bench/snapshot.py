"""Every production's detail record, through the snapshot and by detail requests, side by
side in one run at full size: one client downloads the manifest and the productions file
and decompresses it into its lines (each a detail answer's body); the same client then
asks ``/api/v1/productions/<id>/`` for each production over one keep-alive connection
and reads each body (compared with its line); then the snapshot again (``--repeats``
times before and after, its median taken: a shared machine's other work shows in
single runs of a few seconds, not in minutes of requests). Parsing every
record (``json.loads``), which either way is the same work, is timed once apart and
given with both. Served by ``demoserv serve`` on loopback, its snapshot written first
for its address (timed: what a load adds per address), and the files' sizes.

    flock /tmp/demoserv-bench.lock .venv/bin/python bench/snapshot.py \\
        --database bench/out/full.sqlite3 [--sample N]

``--sample N`` asks for N productions by detail requests (a random sample, in id order)
and scales their time to all; without it every production is asked for. The written
snapshot's folder is removed at the end. Prints one JSON object.
"""

import argparse
import contextlib
import gzip
import http.client
import json
import random
import shutil
import statistics
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))

from servers import start_demoserv  # noqa: E402

from demoserv.loader import snapshot as writer  # noqa: E402
from demoserv.settings import DEFAULTS  # noqa: E402
from demoserv.store import facts, snapshot  # noqa: E402


def through_snapshot(api_root):
    """(seconds, [line]) of the manifest, the productions file and its lines."""
    started = time.perf_counter()
    with urllib.request.urlopen(f"{api_root}snapshot/", timeout=60) as answer:
        entry = json.load(answer)["resources"]["productions"]
    with urllib.request.urlopen(entry["url"], timeout=600) as answer:
        data = answer.read()
    lines = gzip.decompress(data).splitlines()
    seconds = time.perf_counter() - started
    assert len(data) == entry["bytes"] and len(lines) == entry["count"]
    return seconds, lines


def by_detail_requests(url, ids, lines):
    """Seconds of one keep-alive client reading the detail body of each of ``ids``."""
    address = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname, address.port, timeout=60)
    started = time.perf_counter()
    for record_id in ids:
        connection.request("GET", f"/api/v1/productions/{record_id}/")
        answer = connection.getresponse()
        body = answer.read()
        assert answer.status == 200, (record_id, answer.status)
        assert body == lines[record_id], record_id  # the snapshot's line, byte for byte
    seconds = time.perf_counter() - started
    connection.close()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True, help="a full-size catalogue file")
    parser.add_argument("--sample", type=int, help="productions asked for by detail requests")
    parser.add_argument(
        "--repeats", type=int, default=3, help="snapshot downloads before and after (each)"
    )
    args = parser.parse_args()
    database = Path(args.database).resolve()
    version = facts.version_and_time(database).version
    env = {"DEMOSERV_DATABASE": str(database), "DEMOSERV_SEED_DIR": ""}
    server = start_demoserv(env)
    written = None
    try:
        api_root = f"{server.url}/api/v1/"
        address = snapshot.Address(api_root, DEFAULTS["SITE_URL"], DEFAULTS["SERVICE_URL_FIELD"])
        started = time.perf_counter()
        writer.write(database, database, [address])
        write_seconds = time.perf_counter() - started
        written = snapshot.files_folder(database, version, address.key)
        manifest = json.loads((written / snapshot.MANIFEST).read_text())
        runs = [through_snapshot(api_root)[0] for _ in range(args.repeats - 1)]
        first, lines = through_snapshot(api_root)
        runs.append(first)
        started = time.perf_counter()
        records = [json.loads(line) for line in lines]
        parse_seconds = time.perf_counter() - started
        lines = {record["id"]: line for record, line in zip(records, lines)}
        count = len(lines)
        del records
        ids = sorted(lines)
        if args.sample:
            ids = sorted(random.Random(1).sample(ids, args.sample))
        asked = by_detail_requests(api_root, ids, lines)
        del lines
        runs += [through_snapshot(api_root)[0] for _ in range(args.repeats)]
    finally:
        server.stop()
        if written is not None:
            shutil.rmtree(written)
            for folder in (written.parent, written.parent.parent):  # if left empty
                with contextlib.suppress(OSError):
                    folder.rmdir()
    per_request = asked / len(ids)
    detail_all = per_request * count
    snapshot_seconds = statistics.median(runs)
    print(
        json.dumps(
            {
                "productions": count,
                "snapshot_written_seconds": round(write_seconds, 1),
                "files": {
                    name: {"records": file["count"], "bytes": file["bytes"]}
                    for name, file in manifest["resources"].items()
                },
                "snapshot_seconds": [round(each, 2) for each in runs],
                "snapshot_median_seconds": round(snapshot_seconds, 2),
                "detail_requests": len(ids),
                "detail_requests_seconds": round(asked, 1),
                "detail_ms_per_request": round(per_request * 1000, 3),
                "detail_seconds_for_all": round(detail_all, 1),
                "ratio": round(detail_all / snapshot_seconds, 1),
                "parse_seconds": round(parse_seconds, 1),
                "ratio_with_parsing": round(
                    (detail_all + parse_seconds) / (snapshot_seconds + parse_seconds), 1
                ),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
