"""Reading wanted tables out of a plain-SQL pg_dump, gzipped or not, and every way it fails."""

import gzip
import os
import subprocess
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from demoserv.loader.pgdump import LINE_LIMIT, PROGRESS_EVERY, DumpError, read_tables
from demoserv.loader.reporting import FILE, StageAdvanced, StageFinished, StageStarted

SAMPLE = Path(__file__).resolve().parent / "data" / "upstream" / "demozoo-export-sample.sql.gz"

HEAD = b"""--
-- PostgreSQL database dump
--

\\restrict F8aLuQkpsMgCM3WRA70uWhRRRxpNi1i1cZx2YILzpu9NNJUjAFrfV4gaTdrY1vc

SET statement_timeout = 0;
SET client_encoding = 'UTF8';
SELECT pg_catalog.set_config('search_path', '', false);

CREATE TABLE public.parties_competitionplacing (
    id integer NOT NULL,
    ranking character varying(32) NOT NULL,
    "position" integer NOT NULL
);


"""
TAIL = b"""
SELECT pg_catalog.setval('public.auth_group_id_seq', 1, false);

ALTER TABLE ONLY public.parties_competitionplacing
    ADD CONSTRAINT parties_competitionplacing_pkey PRIMARY KEY (id);

--
-- PostgreSQL database dump complete
--

\\unrestrict F8aLuQkpsMgCM3WRA70uWhRRRxpNi1i1cZx2YILzpu9NNJUjAFrfV4gaTdrY1vc

"""
# Line numbers: HEAD is 17 lines, so the first COPY header below is line 18.
DUMP = (
    HEAD
    + b"COPY public.auth_user (id, password, note) FROM stdin;\n"
    + b"1\t\\N\tbad UTF-8 \xff and a NUL \\000 in a table nobody wants\n"
    + b"COPY public.productions_production (id, title) FROM stdin;\n"  # a row, not a header
    + b"\\.\n"
    + b'COPY public.parties_competitionplacing (id, score, "position", ranking, '
    + b"production_id, competition_id) FROM stdin;\n"
    + b"7\t1000\t2\t2\t11\t5\n"
    + b"8\t\t1\t1\t\\N\t5\n"
    + b"\\.\n"
    + TAIL
)
PLACINGS = {
    "parties_competitionplacing": {
        "competition_id": "int",
        "position": "int",
        "ranking": "text",
        "production_id": "int",
    }
}


@pytest.fixture(params=["plain", "gzip"])
def write_dump(request, tmp_path):
    """Writes dump text to a file, gzipped or not; the names lie, as gzip is told by its magic."""

    def write(text, name="dump"):
        path = tmp_path / (name + (".sql" if request.param == "gzip" else ".sql.gz"))
        path.write_bytes(gzip.compress(text) if request.param == "gzip" else text)
        return path

    write.gzipped = request.param == "gzip"
    return write


def one_table(columns, rows, table="t"):
    """A dump of table ``t`` with the given column names and raw row lines."""
    header = f"COPY public.{table} ({', '.join(columns)}) FROM stdin;\n".encode()
    return HEAD + header + b"".join(row + b"\n" for row in rows) + b"\\.\n" + TAIL


def values_of(write_dump, column_type, *fields):
    """The values read from a one-column text table holding ``fields`` (raw bytes)."""
    path = write_dump(one_table(["v"], fields))
    return [row[0] for _, _, row in read_tables(path, {"t": {"v": column_type}})]


def error_of(path, wanted, **options):
    with pytest.raises(DumpError) as caught:
        for _ in read_tables(path, wanted, **options):
            pass
    return str(caught.value)


# What is read


def test_rows_of_the_wanted_tables_in_the_wanted_column_order(write_dump):
    rows = list(read_tables(write_dump(DUMP), PLACINGS))
    assert rows == [
        ("parties_competitionplacing", 23, (5, 2, "2", 11)),
        ("parties_competitionplacing", 24, (5, 1, "1", None)),
    ]


def test_a_path_may_be_a_string(write_dump):
    assert len(list(read_tables(str(write_dump(DUMP)), PLACINGS))) == 2


def test_nothing_wanted_reads_nothing(write_dump):
    assert list(read_tables(write_dump(DUMP), {})) == []


def test_a_table_may_be_wanted_for_its_row_count_alone(write_dump):
    rows = list(read_tables(write_dump(DUMP), {"parties_competitionplacing": {}}))
    assert [row for _, _, row in rows] == [(), ()]


def test_every_type_and_null(write_dump):
    columns = ["i", "f", "b", "t", "d", "ts"]
    path = write_dump(
        one_table(
            columns,
            [
                b"-42\t-1.5e+06\tt\t\t2024-02-29\t2026-11-22 09:31:12.972248+00",
                b"0\t0.25\tf\tplain\t0001-01-01\t2026-11-22 09:31:12+02",
                b"\\N\t\\N\t\\N\t\\N\t\\N\t\\N",
            ],
        )
    )
    types = dict(zip(columns, ["int", "float", "bool", "text", "date", "timestamp"]))
    assert [row for _, _, row in read_tables(path, {"t": types})] == [
        (-42, -1.5e06, True, "", "2024-02-29", "2026-11-22T09:31:12.972248Z"),
        (0, 0.25, False, "plain", "0001-01-01", "2026-11-22T07:31:12.000000Z"),
        (None, None, None, None, None, None),
    ]


def test_null_beside_escapes_and_other_values(write_dump):
    rows = [b"\\N\tx\\Ny\t1", b"\\\\N\t\\N\t\\N", b"\\N\t\\N\t-3", b"a\t\\N\t2"]
    path = write_dump(one_table(["a", "b", "c"], rows))
    wanted = {"t": {"a": "text", "b": "text", "c": "int"}}
    assert [row for _, _, row in read_tables(path, wanted)] == [
        (None, "xNy", 1),
        ("\\N", None, None),
        (None, None, -3),
        ("a", None, 2),
    ]


@pytest.mark.parametrize(
    "field, value",
    [
        (b"2026-11-22 09:31:12.972248+00", "2026-11-22T09:31:12.972248Z"),
        (b"2026-11-22 09:31:12.5+00", "2026-11-22T09:31:12.500000Z"),
        (b"2026-11-22 09:31:12+00", "2026-11-22T09:31:12.000000Z"),
        (b"2026-11-22 01:00:00+02", "2026-11-21T23:00:00.000000Z"),
        (b"2026-11-22 23:00:00-05:30", "2026-11-23T04:30:00.000000Z"),
        (b"1900-01-01 00:00:00+00:53:28", "1899-12-31T23:06:32.000000Z"),
    ],
)
def test_timestamps_become_utc_iso_8601(write_dump, field, value):
    assert values_of(write_dump, "timestamp", field) == [value]


def test_timestamps_compare_in_time_order(write_dump):
    fields = [
        b"2026-11-22 10:00:00+02",  # 08:00 UTC
        b"2026-11-22 09:00:00.000001+00",
        b"2026-11-22 08:30:00-00:30",  # 09:00 UTC
        b"2026-11-22 09:00:00+00",
    ]
    values = values_of(write_dump, "timestamp", *fields)
    assert sorted(values) == [values[0], values[3], values[2], values[1]]


@pytest.mark.parametrize(
    "field, value",
    [
        (b"back\\\\slash", "back\\slash"),
        (b"\\t\\n\\r\\b\\f\\v", "\t\n\r\b\f\v"),
        (b"\\101\\60\\7", "A0\x07"),
        (b"\\1010", "A0"),  # at most three octal digits
        (b"\\303\\251t\\303\\251", "\u00e9t\u00e9"),  # escaped bytes of one UTF-8 character
        (b"\\xc3\\xA9 \\x41\\xa", "\u00e9 A\n"),
        (b"\\xg \\q \\8 \\N\\.", "xg q 8 N."),  # any other escaped character is itself
        (b"caf\xc3\xa9 \xe2\x9c\x93", "caf\u00e9 \u2713"),
        (b"", ""),
    ],
)
def test_copy_text_escapes(write_dump, field, value):
    assert values_of(write_dump, "text", field) == [value]


COPY_ESCAPES = {
    "\\": b"\\\\",
    "\t": b"\\t",
    "\n": b"\\n",
    "\r": b"\\r",
    "\b": b"\\b",
    "\f": b"\\f",
    "\v": b"\\v",
}


def copy_field(value, style):
    """A value as COPY writes it (style "plain"), or with every byte escaped in octal or hex."""
    if value is None:
        return b"\\N"
    if style == "octal":
        return b"".join(b"\\%o" % byte for byte in value.encode())
    if style == "hex":
        return b"".join(b"\\x%x" % byte for byte in value.encode())
    return b"".join(COPY_ESCAPES.get(character, character.encode()) for character in value)


@settings(max_examples=200, deadline=None, derandomize=True)
@given(
    st.lists(
        st.tuples(
            st.none()
            | st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00")),
            st.sampled_from(["plain", "octal", "hex"]),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_text_comes_back_as_written(tmp_path_factory, fields):
    path = tmp_path_factory.mktemp("escapes") / "dump.sql"
    path.write_bytes(
        one_table(
            [f"c{number}" for number in range(len(fields))],
            [b"\t".join(copy_field(*field) for field in fields)],
        )
    )
    wanted = {"t": {f"c{number}": "text" for number in range(len(fields))}}
    assert [row for _, _, row in read_tables(path, wanted)] == [tuple(value for value, _ in fields)]


def test_an_escaped_tab_does_not_separate_fields(write_dump):
    path = write_dump(one_table(["a", "b"], [b"one\\\ttab\tb", b"slash\\\\\tb"]))
    rows = [row for _, _, row in read_tables(path, {"t": {"a": "text", "b": "text"}})]
    assert rows == [("one\ttab", "b"), ("slash\\", "b")]


def test_bad_fields_of_unwanted_columns_do_not_matter(write_dump):
    path = write_dump(one_table(["a", "b"], [b"\xff\\000\\x00\x00\tok"]))
    assert [row for _, _, row in read_tables(path, {"t": {"b": "text"}})] == [("ok",)]


def test_column_order_comes_from_each_copy_header(write_dump):
    text = one_table(["a", "b"], [b"1\tx"]) + one_table(["b", "extra", "a"], [b"y\t\\N\t2"])
    rows = list(read_tables(write_dump(text), {"t": {"a": "int", "b": "text"}}))
    assert [row for _, _, row in rows] == [(1, "x"), (2, "y")]


def test_quoted_identifiers_are_unquoted(write_dump):
    text = HEAD + b'COPY public."Odd ""name""" ("position", "a,b") FROM stdin;\n3\tx\n\\.\n'
    rows = list(read_tables(write_dump(text), {'Odd "name"': {"a,b": "text", "position": "int"}}))
    assert [row for _, _, row in rows] == [("x", 3)]


def test_a_table_of_another_schema_is_named_with_it(write_dump):
    text = HEAD + b"COPY other.t (a) FROM stdin;\n1\n\\.\n" + one_table(["a"], [b"2"])
    rows = list(read_tables(write_dump(text), {"t": {"a": "int"}, "other.t": {"a": "int"}}))
    assert [(table, row) for table, _, row in rows] == [("other.t", (1,)), ("t", (2,))]


def test_the_last_end_of_block_may_lack_its_newline(write_dump):
    rows = list(
        read_tables(
            write_dump(HEAD + b"COPY public.t (a) FROM stdin;\n1\n\\."), {"t": {"a": "int"}}
        )
    )
    assert [row for _, _, row in rows] == [(1,)]


# How it reads


def test_the_reading_is_a_file_stage_advanced_at_table_changes_and_every_few_thousand_rows(
    write_dump,
):
    rows = [b"%d\tx" % number for number in range(2 * PROGRESS_EVERY + 5)]
    path = write_dump(
        HEAD + b"COPY public.other (a) FROM stdin;\n1\n\\.\n" + one_table(["a", "b"], rows)
    )
    events = []
    count = sum(1 for _ in read_tables(path, {"t": {"a": "int"}}, events.append))
    assert count == len(rows)
    assert events[0] == StageStarted(FILE, path.name, path.stat().st_size)
    assert events[-1] == StageFinished(FILE, path.name)
    advanced = events[1:-1]
    assert all(isinstance(event, StageAdvanced) for event in advanced)
    assert [(event.table, event.rows) for event in advanced] == [
        ("other", 0),
        ("t", 0),
        ("t", PROGRESS_EVERY),
        ("t", 2 * PROGRESS_EVERY),
        ("t", len(rows)),
    ]
    # The (compressed) bytes read, each counted once.
    assert all(event.size >= 0 for event in advanced)
    assert 0 < sum(event.size for event in advanced) <= path.stat().st_size


def test_memory_stays_small_on_a_big_dump(write_dump):
    rows = [
        b"%d\t%s\t%d" % (number, os.urandom(32).hex().encode(), number) for number in range(100_000)
    ]
    path = write_dump(
        one_table(["a", "b", "c"], rows) + one_table(["a"], rows[:1000], table="skipped")
    )
    assert path.stat().st_size > 3_000_000
    tracemalloc.start()
    try:
        count = sum(1 for _ in read_tables(path, {"t": {"a": "int", "b": "text", "c": "int"}}))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert count == len(rows)
    assert peak < 1_000_000


def test_reads_from_a_pipe_once_without_temporary_files_or_programs(
    tmp_path, monkeypatch, write_dump
):
    def forbidden(*args, **kwargs):
        raise AssertionError("no temporary file and no program may be used")

    for name in ("TemporaryFile", "NamedTemporaryFile", "SpooledTemporaryFile", "mkstemp"):
        monkeypatch.setattr(tempfile, name, forbidden)
    monkeypatch.setattr(subprocess, "Popen", forbidden)
    content = write_dump(DUMP).read_bytes()
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)

    def feed():
        with open(pipe, "wb") as out:
            for start in range(0, len(content), 100):
                out.write(content[start : start + 100])
                out.flush()
                time.sleep(0.001)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        rows = list(read_tables(pipe, PLACINGS))
    finally:
        feeder.join()
    assert [row for _, _, row in rows] == [(5, 2, "2", 11), (5, 1, "1", None)]


# How it fails


def test_long_lines_outside_the_wanted_rows_are_read_past_without_holding_them(write_dump):
    """Before the first COPY block, between blocks, in an unwanted block, and as a line
    that starts like a COPY header: each 10 MB line is read past a chunk at a time, past a
    limit of 1,000 bytes, and the line numbers after them stay those of the text."""
    long = b"x" * 10_000_000
    text = (
        long + b"\n" + HEAD
        + b"COPY public.unwanted (a) FROM stdin;\n" + long + b"\n\\.\n"
        + long + b"\n"
        + b"COPY public.t (a) FROM stdin; -- " + long + b"\n"
        + b"COPY public.t (a) FROM stdin;\n1\nx\n\\.\n" + TAIL
    )  # fmt: skip
    path = write_dump(text)
    tracemalloc.start()
    try:
        message = error_of(path, {"t": {"a": "int"}}, line_limit=1_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # 1 long line, HEAD's 17, 3 of the unwanted block, 1 long, the cut header, then t's.
    assert message == "t:26: a: 'x' is not an integer"
    assert peak < 5_000_000  # the reader's chunks of 1 MiB, never a whole line


@pytest.mark.parametrize("newline", [b"\n", b""], ids=["newline", "end of file"])
def test_a_wanted_row_at_the_limit_is_read_and_one_byte_longer_is_refused(write_dump, newline):
    at_limit = b"1\t" + b"y" * 98
    path = write_dump(one_table(["a", "b"], [at_limit]))
    rows = [row for _, _, row in read_tables(path, {"t": {"b": "text"}}, line_limit=100)]
    assert rows == [("y" * 98,)]
    text = HEAD + b"COPY public.t (a, b) FROM stdin;\n1\tz\n" + at_limit + b"y" + newline
    message = error_of(write_dump(text), {"t": {"b": "text"}}, line_limit=100)
    assert message == (
        "t:20: a row longer than 100 bytes, the limit of a line (no real row comes near it)"
    )


def test_a_row_longer_than_the_limit_is_refused_having_read_only_the_limit(write_dump):
    path = write_dump(one_table(["a"], [b"1", b"2" * 20_000_000]))
    tracemalloc.start()
    try:
        message = error_of(path, {"t": {"a": "int"}}, line_limit=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert message == (
        "t:20: a row longer than 1 MiB, the limit of a line (no real row comes near it)"
    )
    assert peak < 4 << 20  # the limit and one copy of it, not the 20 MB row


def test_the_line_limit_is_more_than_any_real_row():
    assert LINE_LIMIT == 64 << 20


def test_error_message_names_table_line_and_column(write_dump):
    path = write_dump(one_table(["id", "nick_id"], [b"1\t2", b"2\tx"], table="productions_credit"))
    message = error_of(path, {"productions_credit": {"nick_id": "int"}})
    assert message == "productions_credit:20: nick_id: 'x' is not an integer"


def test_rows_before_an_error_are_yielded(write_dump):
    path = write_dump(one_table(["a"], [b"1", b"x"]))
    rows = read_tables(path, {"t": {"a": "int"}})
    assert next(rows)[2] == (1,)
    with pytest.raises(DumpError, match=r"^t:20: a: 'x' is not an integer$"):
        next(rows)


GOOD_VALUES = {
    "int": b"1",
    "float": b"1.5",
    "bool": b"t",
    "text": b"ok",
    "date": b"2026-01-01",
    "timestamp": b"2026-01-01 00:00:00+00",
}


GOOD_VALUES = {
    "int": b"1",
    "float": b"1.5",
    "bool": b"t",
    "text": b"ok",
    "date": b"2026-01-01",
    "timestamp": b"2026-01-01 00:00:00+00",
}


@pytest.mark.parametrize(
    "column_type, field, what",
    [
        ("int", b"x", "'x' is not an integer"),
        ("int", b"", "'' is not an integer"),
        ("int", b" 1", "' 1' is not an integer"),
        ("int", b"+1", "'+1' is not an integer"),
        ("int", b"1_000", "'1_000' is not an integer"),
        ("int", b"1.0", "'1.0' is not an integer"),
        ("int", "\u0663".encode(), "'\u0663' is not an integer"),  # an Arabic-Indic digit
        ("float", b"one", "'one' is not a number"),
        ("float", b"1_0.5", "'1_0.5' is not a number"),
        ("bool", b"true", "'true' is not a boolean (t or f)"),
        ("bool", b"", "'' is not a boolean (t or f)"),
        ("date", b"2026-02-30", "'2026-02-30' is not a date (YYYY-MM-DD)"),
        ("date", b"20260201", "'20260201' is not a date (YYYY-MM-DD)"),
        ("date", b"2026-11-22 09:31:12+00", "'2026-11-22 09:31:12+00' is not a date (YYYY-MM-DD)"),
        (
            "timestamp",
            b"2026-11-22 09:31:12",
            "'2026-11-22 09:31:12' is not a timestamp with a UTC offset",
        ),
        (
            "timestamp",
            b"2026-11-22T09:31:12Z",
            "'2026-11-22T09:31:12Z' is not a timestamp with a UTC offset",
        ),
        (
            "timestamp",
            b"2026-11-31 09:31:12+00",
            "'2026-11-31 09:31:12+00' is not a timestamp with a UTC offset",
        ),
        ("timestamp", b"infinity", "'infinity' is not a timestamp with a UTC offset"),
        (
            "timestamp",
            b"9999-12-31 23:00:00-05",  # past the year 9999 in UTC
            "'9999-12-31 23:00:00-05' is out of range (before year 1 or after 9999 in UTC)",
        ),
        (
            "timestamp",
            b"0001-01-01 00:00:00+00:00:01",
            "'0001-01-01 00:00:00+00:00:01' is out of range (before year 1 or after 9999 in UTC)",
        ),
        ("int", b"9223372036854775808", "'9223372036854775808' is out of range (a 64-bit integer)"),
        (
            "int",
            b"-9223372036854775809",
            "'-9223372036854775809' is out of range (a 64-bit integer)",
        ),
        ("int", b"1" + b"0" * 40, f"'{'1' + '0' * 39}'... is out of range (a 64-bit integer)"),
        ("float", b"NaN", "'NaN' is not a finite number"),
        ("float", b"-Infinity", "'-Infinity' is not a finite number"),
        ("float", b"1e309", "'1e309' is out of range (a double)"),
        ("text", b"x" * 1_000_001, "too long (1,000,001 characters, more than 1,000,000)"),
        ("text", b"\\0", "contains a NUL character, which PostgreSQL text cannot hold"),
        ("text", b"a\\x00b", "contains a NUL character, which PostgreSQL text cannot hold"),
        ("text", b"a\\000", "contains a NUL character, which PostgreSQL text cannot hold"),
        ("text", b"a\x00", "contains a NUL character, which PostgreSQL text cannot hold"),
        ("text", b"caf\xe9!", "invalid UTF-8 (invalid continuation byte at byte 3)"),
        ("text", b"\\377", "invalid UTF-8 (invalid start byte at byte 0)"),
        ("text", b"\\303", "invalid UTF-8 (unexpected end of data at byte 0)"),
    ],
)
def test_a_bad_value_names_its_table_line_and_column(write_dump, column_type, field, what):
    path = write_dump(one_table(["id", "v"], [b"1\t" + GOOD_VALUES[column_type], b"2\t" + field]))
    assert error_of(path, {"t": {"id": "int", "v": column_type}}) == f"t:20: v: {what}"


@pytest.mark.parametrize(
    "column_type, fields, values",
    [
        (
            "int",
            [b"9223372036854775807", b"-9223372036854775808", b"999999999999999999", b"0"],
            [2**63 - 1, -(2**63), 10**18 - 1, 0],
        ),
        (
            "float",
            [b"1.7976931348623157e308", b"-1e308", b"5e-324", b"1e-400"],
            [1.7976931348623157e308, -1e308, 5e-324, 0.0],
        ),
        ("date", [b"0001-01-01", b"9999-12-31"], ["0001-01-01", "9999-12-31"]),
        (
            "timestamp",
            [
                b"0001-01-01 00:00:00+00",
                b"0001-01-01 12:00:00+11:59:59",
                b"9999-12-31 23:59:59.999999-00",
            ],
            [
                "0001-01-01T00:00:00.000000Z",
                "0001-01-01T00:00:01.000000Z",
                "9999-12-31T23:59:59.999999Z",
            ],
        ),
        (
            "text",
            [b"x" * 1_000_000, "\u00e9".encode() * 1_000_000],  # 1,000,000 characters each
            ["x" * 1_000_000, "\u00e9" * 1_000_000],
        ),
    ],
    ids=["int", "float", "date", "timestamp", "text"],
)
def test_values_at_the_limits_of_their_type_are_read(write_dump, column_type, fields, values):
    path = write_dump(one_table(["id", "v"], [b"1\t" + field for field in fields]))
    assert [row[0] for _, _, row in read_tables(path, {"t": {"v": column_type}})] == values


def test_a_long_bad_value_is_cut_short_in_the_message(write_dump):
    path = write_dump(one_table(["v"], [b"x" * 1000]))
    assert error_of(path, {"t": {"v": "int"}}) == f"t:19: v: {'x' * 40!r}... is not an integer"


@pytest.mark.parametrize("row, found", [(b"1\t2\t3", 3), (b"1", 1), (b"1\\\t2", 1)])
def test_a_row_with_the_wrong_number_of_fields(write_dump, row, found):
    path = write_dump(one_table(["a", "b"], [row]))
    assert error_of(path, {"t": {"a": "int"}}) == f"t:19: expected 2 fields, found {found}"


def test_a_wanted_column_missing_from_the_copy_header(write_dump):
    path = write_dump(one_table(["id", "title"], [b"1\tx"]))
    wanted = {"t": {"id": "int", "release_date_date": "date"}}
    assert error_of(path, wanted) == "t:18: release_date_date: column missing from the COPY header"


def test_a_wanted_table_missing_from_the_dump_after_its_rows(write_dump):
    rows = read_tables(write_dump(DUMP), PLACINGS | {"bbs_bbs": {"id": "int"}, "taggit_tag": {}})
    assert len([next(rows), next(rows)]) == 2
    with pytest.raises(DumpError) as caught:
        next(rows)
    assert str(caught.value) == (
        "bbs_bbs: table missing from the dump; taggit_tag: table missing from the dump"
    )


@pytest.mark.parametrize("table", ["t", "unwanted"])
def test_a_copy_block_that_never_ends(write_dump, table):
    path = write_dump(HEAD + f"COPY public.{table} (a) FROM stdin;\n1\n2\n".encode())
    assert error_of(path, {"t": {"a": "int"}}) == f"{table}:20: the COPY block never ends"


def test_a_truncated_gzip_stream(tmp_path):
    path = tmp_path / "dump.sql.gz"
    rows = [b"%d\t%s" % (number, os.urandom(16).hex().encode()) for number in range(20_000)]
    compressed = gzip.compress(one_table(["a", "b"], rows))
    path.write_bytes(compressed[: len(compressed) // 2])
    message = error_of(path, {"t": {"a": "int"}})
    assert message.startswith("t:")
    assert "the dump is truncated or corrupt" in message


def test_a_corrupt_gzip_stream(tmp_path):
    path = tmp_path / "dump.sql.gz"
    compressed = bytearray(gzip.compress(DUMP))
    compressed[-6] ^= 0xFF  # the checksum no longer matches
    path.write_bytes(compressed)
    message = error_of(path, PLACINGS)
    assert message.startswith("dump.sql.gz:")
    assert "the dump is truncated or corrupt (CRC check failed" in message


def test_an_empty_file(write_dump):
    path = write_dump(b"", name="empty")
    assert error_of(path, PLACINGS) == f"{path.name}: empty file, not a pg_dump"


@pytest.mark.parametrize("content", [b"id,title\n1,Second Reality\n", bytes(range(256)) * 40])
def test_a_file_that_is_not_a_dump(write_dump, content):
    path = write_dump(content, name="other")
    assert error_of(path, PLACINGS) == (
        f"{path.name}: not a plain-SQL pg_dump (no COPY block in it): "
        "give the upstream's database export"
    )


def test_a_custom_format_dump(tmp_path):
    path = tmp_path / "dump.custom"
    path.write_bytes(b"PGDMP\x01\x0f\x00\x04\x08\x01\x01\x01\x00\x00\x00")
    assert error_of(path, PLACINGS) == (
        "dump.custom: a custom-format pg_dump; this reads plain SQL (pg_dump --format=plain)"
    )


def test_a_missing_file(tmp_path):
    path = tmp_path / "absent.sql.gz"
    assert error_of(path, PLACINGS) == f"{path}: cannot open: No such file or directory"


def test_an_unknown_type_is_refused_at_once(write_dump):
    with pytest.raises(ValueError, match=r"^t\.a: unknown type 'integer'"):
        read_tables(write_dump(DUMP), {"t": {"a": "integer"}})


# The upstream's sample export


def test_the_upstream_sample_export():
    wanted = {
        "productions_production": {
            "id": "int",
            "title": "text",
            "release_date_date": "date",
            "release_date_precision": "text",
        },
        "productions_credit": {"nick_id": "int", "production_id": "int", "role": "text"},
        "taggit_taggeditem": {
            "id": "int",
            "object_id": "int",
            "content_type_id": "int",
            "tag_id": "int",
        },
        "django_content_type": {"id": "int", "app_label": "text", "model": "text"},
        "parties_competitionplacing": PLACINGS["parties_competitionplacing"],
        "demoscene_releaser": {"id": "int", "is_group": "bool", "updated_at": "timestamp"},
        "parties_party": {"id": "int", "latitude": "float", "is_online": "bool"},
    }
    counts = dict.fromkeys(wanted, 0)
    first_rows = {}
    for table, line_number, row in read_tables(SAMPLE, wanted):
        counts[table] += 1
        first_rows.setdefault(table, (line_number, row))
    # As `zcat | awk` counts the lines of each COPY block.
    assert counts == {
        "productions_production": 2350,
        "productions_credit": 2181,
        "taggit_taggeditem": 3155,
        "django_content_type": 99,
        "parties_competitionplacing": 1342,
        "demoscene_releaser": 600,
        "parties_party": 450,
    }
    assert first_rows["productions_production"] == (16517, (871, "AAA", "2007-12-24", "d"))
    assert first_rows["demoscene_releaser"] == (9450, (3, True, "2026-11-22T10:30:02.331859Z"))
