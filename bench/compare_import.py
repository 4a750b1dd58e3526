"""The import phase alone, of two trees side by side: ``flask load`` of one export with
each tree's code, alternating (A, B, A, B, ...) so that the machine's drift falls on
both alike; each load's seconds, CPU seconds and peak RSS, and the ratios of the
medians. For a change to the loader: run it under the bench lock, e.g.

    flock /tmp/demoserv-bench.lock .venv/bin/python bench/compare_import.py \\
        --dump /work/bench-data/full-375000.sql.gz --base /tmp/main-tree --rounds 2
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from servers import REPOSITORY, measured_load  # noqa: E402


def load_with(tree, dump, work):
    """``flask load dump`` into a new file with the code of ``tree``; its measures."""
    database = Path(work) / "catalogue.sqlite3"
    env = dict(
        os.environ,
        PYTHONPATH=str(tree),
        DEMOSERV_DATABASE=str(database),
        DEMOSERV_SEED_DIR="",
    )
    try:
        return measured_load(dump, env)
    finally:
        for leftover in Path(work).glob("*catalogue.sqlite3*"):
            if leftover.is_dir():  # the snapshot's folder
                shutil.rmtree(leftover)
            else:
                leftover.unlink()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dump", required=True, help="the export to load")
    parser.add_argument("--base", required=True, help="the tree to compare with (a checkout)")
    parser.add_argument("--rounds", type=int, default=2, help="loads of each tree")
    args = parser.parse_args()
    trees = {"base": Path(args.base).resolve(), "this": REPOSITORY}
    results = {name: [] for name in trees}
    with tempfile.TemporaryDirectory(prefix="compare-import-") as work:
        for round_number in range(args.rounds):
            for name, tree in trees.items():
                measured = load_with(tree, args.dump, work)
                measured.pop("output")
                results[name].append(measured)
                print(round_number + 1, name, json.dumps(measured), flush=True)
    medians = {
        name: {key: statistics.median(run[key] for run in runs) for key in runs[0]}
        for name, runs in results.items()
    }
    ratios = {key: medians["this"][key] / medians["base"][key] for key in medians["base"]}
    print(json.dumps({"medians": medians, "this/base": ratios}, indent=1))


if __name__ == "__main__":
    main()
