"""The records' zstd dictionaries trained with zstd's own search for its cover
parameters against fixed ones (``templates.COVER``), on a built catalogue file:

    python bench/dictionaries.py --database FILE [--records 10000] [--resources productions]

For each resource's list and detail records it takes the first ``DOC_BATCH`` records
(those the build trains on), as built, and trains a dictionary of the build's size both
ways, timing each; then it compresses a random sample of ``--records`` other records
with each dictionary at the build's level. Prints each training's time and the
compression ratio, and the sample's total compressed size for each way.
"""

import argparse
import random
import sqlite3
import time

import zstandard

from demoserv.loader.build import DETAIL_DICTIONARY, DOC_BATCH, LIST_DICTIONARY
from demoserv.resources import RESOURCES
from demoserv.store.templates import COVER, LEVEL, RecordCodec, to_template

WAYS = {"searched": {}, "fixed": COVER}


def tables(resource):
    """(kind, table name, dictionary size) of the resource's stored records."""
    yield "list", resource.table.name, LIST_DICTIONARY
    if resource.details_table is not None:
        yield "detail", resource.details_table.name, DETAIL_DICTIONARY


def measure(connection, resource, kind, table, size, records, rng):
    stored = dict(
        connection.execute(
            "SELECT kind, data FROM dictionaries WHERE resource = ?", (resource.name,)
        ).fetchall()
    )
    codec = RecordCodec(stored[kind])
    first = [
        to_template(codec.marked(doc))
        for (doc,) in connection.execute(
            f"SELECT doc FROM {table} ORDER BY rowid LIMIT ?", (DOC_BATCH,)
        )
    ]
    ids = [row[0] for row in connection.execute(f"SELECT rowid FROM {table}")]
    picked = sorted(rng.sample(ids, min(records, len(ids))))
    sample = [
        codec.expand(doc)
        for (doc,) in connection.execute(
            f"SELECT doc FROM {table} WHERE rowid IN ({','.join(map(str, picked))})"
        )
    ]
    raw = sum(map(len, sample))
    found = {}
    for way, parameters in WAYS.items():
        started = time.perf_counter()
        trained = zstandard.train_dictionary(size, first, **parameters)
        seconds = time.perf_counter() - started
        compressor = zstandard.ZstdCompressor(
            level=LEVEL, dict_data=zstandard.ZstdCompressionDict(trained.as_bytes())
        )
        compressed = sum(len(compressor.compress(doc)) for doc in sample)
        found[way] = (seconds, compressed, raw / compressed, trained.k, trained.d)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", required=True)
    parser.add_argument("--records", type=int, default=10000)
    parser.add_argument("--resources", nargs="*", default=[r.name for r in RESOURCES])
    options = parser.parse_args()
    connection = sqlite3.connect(f"file:{options.database}?mode=ro", uri=True)
    rng = random.Random(1)
    totals = {way: 0 for way in WAYS}
    print("| records | " + " | ".join(f"{way}: training s, ratio (k/d)" for way in WAYS) + " |")
    print("|---|" + "---|" * len(WAYS))
    for resource in RESOURCES:
        if resource.name not in options.resources:
            continue
        for kind, table, size in tables(resource):
            found = measure(connection, resource, kind, table, size, options.records, rng)
            cells = []
            for way, (seconds, size, ratio, k, d) in found.items():
                totals[way] += size
                cells.append(f"{seconds:.2f}, {ratio:.2f} ({k}/{d})")
            print(f"| {resource.name} {kind} | " + " | ".join(cells) + " |")
    print()
    print(
        "Sample compressed: "
        + ", ".join(f"{way} {size / 1e6:.2f} MB" for way, size in totals.items())
        + f" (fixed/searched {totals['fixed'] / totals['searched']:.4f})"
    )


if __name__ == "__main__":
    main()
