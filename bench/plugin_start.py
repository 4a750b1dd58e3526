"""How long a client project's tests wait for the pytest plugin's server on the seed.

    python bench/plugin_start.py [--runs 5]

Two numbers, each the median of ``--runs`` runs (and the slowest):

- start: the plugin's ``DemoservServer.start()`` on a fresh database, as each test
  session does: ``demoserv-serve`` starts, builds the database from the seed catalogue,
  listens and writes its ready file; it ends when the fixture has read the file. Also
  the processor time the server process used, start to stop, which other work on a
  shared machine does not stretch.
- session cost: a ``pytest`` run of one test that uses ``demoserv_url``, less the same
  run of one test that does not (what a client project's test session pays for it,
  the stop included).

Prints a table and writes bench/out/plugin_start.json.
"""

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from demoserv.pytest_plugin import DemoservServer

OUT = Path(__file__).resolve().parent / "out"

CLIENT_TEST = """
import urllib.request

def test_it({fixture}):
    {body}
"""


def children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def time_start(work):
    """(seconds until ready, processor seconds of the server process)"""
    cpu = children_cpu()
    started = time.perf_counter()
    server = DemoservServer(work).start()
    elapsed = time.perf_counter() - started
    server.stop()  # waits for the process, so that its usage is counted
    return elapsed, children_cpu() - cpu


def time_session(work, uses_server):
    test = work / "test_client.py"
    fixture, body = (
        ("demoserv_url", "urllib.request.urlopen(demoserv_url + '/api/v1/', timeout=30).close()")
        if uses_server
        else ("", "pass")
    )
    test.write_text(CLIENT_TEST.format(fixture=fixture, body=body))
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)],
        cwd=work,
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    starts, cpus, costs = [], [], []
    for run in range(runs):
        with tempfile.TemporaryDirectory() as work:
            elapsed, cpu = time_start(Path(work))
            starts.append(elapsed)
            cpus.append(cpu)
        with tempfile.TemporaryDirectory() as work:
            without = time_session(Path(work), uses_server=False)
            with_server = time_session(Path(work), uses_server=True)
            costs.append(with_server - without)
    result = {
        "runs": runs,
        "start_median_s": round(statistics.median(starts), 3),
        "start_max_s": round(max(starts), 3),
        "server_cpu_median_s": round(statistics.median(cpus), 3),
        "server_cpu_max_s": round(max(cpus), 3),
        "session_cost_median_s": round(statistics.median(costs), 3),
        "session_cost_max_s": round(max(costs), 3),
    }
    print(f"{'':14} {'median':>8} {'slowest':>8}")
    print(f"{'start':14} {result['start_median_s']:>7.2f}s {result['start_max_s']:>7.2f}s")
    print(
        f"{'server cpu':14} {result['server_cpu_median_s']:>7.2f}s "
        f"{result['server_cpu_max_s']:>7.2f}s"
    )
    print(
        f"{'session cost':14} {result['session_cost_median_s']:>7.2f}s "
        f"{result['session_cost_max_s']:>7.2f}s"
    )
    OUT.mkdir(exist_ok=True)
    (OUT / "plugin_start.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
