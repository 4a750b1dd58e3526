"""bench/generate_dump.py writes a well-formed export in the sample's exact form."""

import gzip
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "bench" / "generate_dump.py"
_spec = importlib.util.spec_from_file_location("generate_dump", SCRIPT)
generate_dump = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(generate_dump)

SAMPLE = Path(generate_dump.DEFAULT_SAMPLE)


def _blocks(lines):
    """(text outside COPY blocks, {table: (columns, rows)}); fails on an unended block."""
    text, blocks = [], {}
    lines = iter(lines)
    for line in lines:
        text.append(line)
        if not line.startswith("COPY "):
            continue
        table = line.split()[1]
        columns = generate_dump._copy_columns(line)
        rows = []
        for row in lines:
            if row == "\\.\n":
                text.append(row)
                break
            rows.append(row.rstrip("\n").split("\t"))
        else:
            pytest.fail(f"COPY block of {table} does not end with \\.")
        blocks[table] = (columns, rows)
    return text, blocks


@pytest.fixture(scope="module")
def dump(tmp_path_factory):
    out = tmp_path_factory.mktemp("dump") / "export.sql.gz"
    counts = generate_dump.generate(out, productions=2000, seed=3)
    with gzip.open(out, "rt", encoding="utf-8", newline="\n") as stream:
        return out, counts, _blocks(stream)


def test_every_copy_row_has_as_many_fields_as_its_header_has_columns(dump):
    _, _, (_, blocks) = dump
    for table, (columns, rows) in blocks.items():
        for row in rows:
            assert len(row) == len(columns), (table, row)


def test_the_sample_text_and_tables_are_kept_and_the_needed_tables_filled(dump):
    _, counts, (text, blocks) = dump
    with gzip.open(SAMPLE, "rt", encoding="utf-8", newline="\n") as stream:
        sample_text, sample_blocks = _blocks(stream)
    assert list(blocks) == list(sample_blocks)
    changed = [line for line, old in zip(text, sample_text, strict=True) if line != old]
    assert changed and all(line.startswith("SELECT pg_catalog.setval(") for line in changed)
    for table in generate_dump.KEPT:
        assert blocks[f"public.{table}"] == sample_blocks[f"public.{table}"]
    for table, (_, rows) in blocks.items():
        name = table.removeprefix("public.")
        if name in generate_dump.GENERATORS:
            assert len(rows) == counts[name] > 0, name
        elif name not in generate_dump.KEPT:
            assert rows == [], name


def test_same_seed_same_bytes_and_plain_is_the_uncompressed_file(dump, tmp_path):
    out, _, _ = dump
    plain = tmp_path / "export.sql"
    subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            str(plain),
            "--productions",
            "2000",
            "--seed",
            "3",
            "--plain",
        ],
        check=True,
        capture_output=True,
    )
    assert plain.read_bytes() == gzip.decompress(out.read_bytes())
