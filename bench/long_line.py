"""The memory of loading an export that holds one line far longer than any real one.

    python bench/long_line.py [--length 400000000] [--work DIR]

From the upstream's sample export (``tests/data/upstream/``) it writes, into --work, the
export with one line of --length bytes (one repeated byte: gzip makes it almost nothing
on disk, written a megabyte at a time) in each of three places: first in the file,
before any statement; as a row of a table the API does not read (``auth_group``); and as
a row of a table it reads (``productions_production``). Then a production's notes (a
column the API does not read) making its row just under the reader's line limit
(``pgdump.LINE_LIMIT``), a legal row as long as a row may be. Each, and the sample as it
is, is loaded by ``demoserv load`` into a new database,
a process of its own, measured by its wall time, its exit status, the last line it
printed and its peak RSS (the child's ``ru_maxrss``, from ``os.wait4``; this process
stays small, as a child's peak starts from its parent's RSS). The target: every peak
under 500 MB. Prints a Markdown table.
"""

import argparse
import gzip
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPOSITORY))
from demoserv.loader.pgdump import LINE_LIMIT  # noqa: E402

SAMPLE = REPOSITORY / "tests" / "data" / "upstream" / "demozoo-export-sample.sql.gz"
TARGET_MB = 500
CHUNK = b"x" * (1 << 20)


def write_export(path, text, start, end, prefix, length, suffix):
    """The export ``text`` gzipped into ``path`` with its bytes from ``start`` to ``end``
    replaced by ``prefix``, ``length`` bytes of x and ``suffix``."""
    with gzip.open(path, "wb", compresslevel=1) as out:
        out.write(text[:start] + prefix)
        for _ in range(length // len(CHUNK)):
            out.write(CHUNK)
        out.write(CHUNK[: length % len(CHUNK)] + suffix + text[end:])
    return path


def first_row(text, table):
    """The offsets of the first row of ``table``'s COPY block in ``text``."""
    header = text.index(b"COPY public.%s " % table.encode())
    start = text.index(b"\n", header) + 1
    return start, text.index(b"\n", start) + 1


def exports(text, work, length):
    """(what, path) of each export to load."""
    yield "the sample export as it is", SAMPLE
    yield (
        f"a first line of {length:,} bytes",
        write_export(work / "first.sql.gz", text, 0, 0, b"", length, b"\n"),
    )
    for table, reads in (("auth_group", "does not read"), ("productions_production", "reads")):
        start, _ = first_row(text, table)
        yield (
            f"a row of {length:,} bytes in a table the API {reads} ({table})",
            write_export(work / f"{table}.sql.gz", text, start, start, b"", length, b"\n"),
        )
    start, end = first_row(text, "productions_production")
    fields = text[start:end].split(b"\t")  # id, title, supertype, notes, ...
    before, after = b"\t".join(fields[:3]) + b"\t", b"\t" + b"\t".join(fields[4:])
    notes = LINE_LIMIT - len(before) - len(after)
    yield (
        f"a production's notes of {notes:,} bytes, its row at the line limit",
        write_export(work / "notes.sql.gz", text, start, end, before, notes, after),
    )


def measured_load(export, database):
    """``demoserv load export`` into ``database``: seconds, exit status, last line, peak MB."""
    command = [sys.executable, "-m", "demoserv", "load", "--database", str(database), str(export)]
    started = time.perf_counter()
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, cwd=REPOSITORY
    )
    output = process.stdout.read().decode(errors="replace").strip()
    _, status, usage = os.wait4(process.pid, 0)
    return {
        "seconds": time.perf_counter() - started,
        "status": os.waitstatus_to_exitcode(status),
        "said": output.splitlines()[-1] if output else "",
        "peak_mb": usage.ru_maxrss / 1024,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=400_000_000, help="bytes of the line")
    parser.add_argument("--work", type=Path, help="the exports' folder (default: a new one)")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="long-line-"))
    work.mkdir(parents=True, exist_ok=True)
    text = gzip.decompress(SAMPLE.read_bytes())
    print("| export loaded | size on disk | seconds | exit | peak RSS | what the load said |")
    print("|---|---|---|---|---|---|")
    worst = 0
    for number, (what, export) in enumerate(exports(text, work, args.length)):
        run = measured_load(export, work / f"catalogue-{number}.sqlite3")
        worst = max(worst, run["peak_mb"])
        said = run["said"].replace(str(work) + "/", "")
        print(
            f"| {what} | {export.stat().st_size:,} bytes | {run['seconds']:.1f} s | "
            f"{run['status']} | {run['peak_mb']:.0f} MB | {said} |",
            flush=True,
        )
    verdict = "met" if worst < TARGET_MB else "missed"
    print(f"\nWorst peak RSS {worst:.0f} MB: target under {TARGET_MB} MB {verdict}.")


if __name__ == "__main__":
    main()
