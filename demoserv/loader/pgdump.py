"""Reading the wanted tables' rows out of a plain-SQL pg_dump (``.sql`` or ``.sql.gz``).

The dump is read once, line by line, as a stream: no PostgreSQL, no temporary file, never
the whole dump in memory, nor a whole line longer than the line limit (``LINE_LIMIT``, 64
MiB, more than any real row). Everything outside the wanted tables' COPY blocks is
skipped, a line of any length among them too, read past a chunk at a time; each wanted
row is decoded from the COPY text format and converted to Python values, and a wanted
row longer than the limit is refused ("<table>:<line>: a row longer than 64 MiB...")
having read no more of it than the limit.

Bad input raises DumpError("<table>:<line>: <column>: <what>"), line counted in the
uncompressed text; rows yielded before the error have already been yielded, so a caller
that must not act on a bad dump keeps what it reads aside until the reading ends.
"""

import datetime
import functools
import gzip
import io
import math
import os
import re
import zlib
from pathlib import Path

from ..store.values import INTEGER_RANGE, MAX_TEXT, shown
from .reporting import FILE, StageAdvanced, StageFinished, StageStarted, silent

GZIP_MAGIC = b"\x1f\x8b"
CUSTOM_FORMAT_MAGIC = b"PGDMP"  # pg_dump --format=custom, which this reader does not take
END_OF_BLOCK = b"\\.\n"
END_OF_BLOCK_AT_END_OF_FILE = b"\\."
NULL = b"\\N"
PROGRESS_EVERY = 4096  # rows between progress reports; a power of two, tested by bitmask
LINE_LIMIT = 64 << 20  # bytes of a line held at once: more than any real row
SKIP_CHUNK = 1 << 20  # bytes read at a time past the limit of a line that is skipped

_IDENTIFIER = rb'"(?:[^"]|"")+"|[^\s",().]+'
_COPY_HEADER = re.compile(
    rb"COPY (?:(%(i)s)\.)?(%(i)s)(?: \(((?:%(i)s)(?:, (?:%(i)s))*)\))? FROM stdin;\n?"
    % {b"i": _IDENTIFIER}
)
_ESCAPE_OR_TAB = re.compile(rb"\\.|\t", re.DOTALL)
_ESCAPE = re.compile(rb"\\(?:([0-7]{1,3})|x([0-9A-Fa-f]{1,2})|(.))", re.DOTALL)
_SINGLE_CHARACTER_ESCAPES = {
    b"b": b"\b",
    b"f": b"\f",
    b"n": b"\n",
    b"r": b"\r",
    b"t": b"\t",
    b"v": b"\v",
}
_FLOAT = re.compile(r"-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|NaN|-?Infinity")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_TIMESTAMP = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"
    r"[+-][0-9]{2}(?::[0-9]{2}){0,2}"  # offset: +HH, +HH:MM or, for old dates, +HH:MM:SS
)


class DumpError(Exception):
    """A dump that cannot be read; str(error) is the whole message, e.g.
    "productions_credit:1234: nick_id: 'x' is not an integer"."""


def _to_int(text):
    # int() alone would also take " 1", "1_000" and non-ASCII digits.
    digits = text[1:] if text[:1] == "-" else text
    if not (digits.isdigit() and digits.isascii()):
        raise ValueError(f"{shown(text)} is not an integer")
    value = int(text)
    if not INTEGER_RANGE[0] <= value <= INTEGER_RANGE[1]:
        raise ValueError(f"{shown(text)} is out of range (a 64-bit integer)")
    return value


def _to_float(text):
    if not _FLOAT.fullmatch(text):
        raise ValueError(f"{shown(text)} is not a number")
    value = float(text)
    if math.isfinite(value):
        return value
    if text[-1].isdigit():  # too large for a double: it became infinite
        raise ValueError(f"{shown(text)} is out of range (a double)")
    raise ValueError(f"{shown(text)} is not a finite number")


def _to_bool(text):
    if text == "t":
        return True
    if text == "f":
        return False
    raise ValueError(f"{shown(text)} is not a boolean (t or f)")


def _to_text(text):
    if len(text) > MAX_TEXT:
        raise ValueError(f"too long ({len(text):,} characters, more than {MAX_TEXT:,})")
    return text


def _to_date(text):
    try:
        if _DATE.fullmatch(text):
            datetime.date.fromisoformat(text)
            return text
    except ValueError:
        pass
    raise ValueError(f"{shown(text)} is not a date (YYYY-MM-DD)")


def _to_timestamp(text):
    """A timestamp with a UTC offset as ISO 8601 in UTC, so that strings sort in time order."""
    try:
        # The pattern keeps out what fromisoformat would also take ("T", "Z", no offset).
        moment = datetime.datetime.fromisoformat(text) if _TIMESTAMP.fullmatch(text) else None
    except ValueError:
        moment = None
    if moment is None:
        raise ValueError(f"{shown(text)} is not a timestamp with a UTC offset")
    try:
        moment = moment.astimezone(datetime.timezone.utc)
    except OverflowError:
        raise ValueError(
            f"{shown(text)} is out of range (before year 1 or after 9999 in UTC)"
        ) from None
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


CONVERTERS = {
    "int": _to_int,
    "float": _to_float,
    "bool": _to_bool,
    "text": _to_text,
    "date": _to_date,
    "timestamp": _to_timestamp,
}
# How the fast path converts a field of each type: C functions where they exist.
_FAST_EXPRESSIONS = {
    "int": "int({})",
    "float": "_to_float({})",
    "bool": "_BOOLEANS[{}]",
    "text": "{}",
    "date": "_to_date({})",
    "timestamp": "_to_timestamp({})",
}
_FAST_NAMESPACE = {
    "_BACKSLASH": "\\",
    "_NULL": "\\N",
    "_NUL": "\x00",
    "_BOOLEANS": {"t": True, "f": False},
    "_to_float": _to_float,
    "_to_date": _to_date,
    "_to_timestamp": _to_timestamp,
}


def _compile_fast_path(indexes_and_types):
    """Two functions of a row's fields, compiled once per table from fixed expressions and
    field numbers (never from the dump's text) so that a row costs one Python call, not one
    per field:

    - the tuple of wanted values, NULL as None, or None when an integer field is not plain
      digits (int() alone would take " 1", "+1", "1_000") or has 19 or more of them
      (which may be out of range);
    - whether the wanted fields hold no NUL character and no backslash but whole NULLs.
    """
    fields = [f"fields[{index}]" for index, _ in indexes_and_types]
    values = "".join(
        f"None if {field} == _NULL else {_FAST_EXPRESSIONS[type_name].format(field)}, "
        for field, (_, type_name) in zip(fields, indexes_and_types)
    )
    integers = [
        field for field, (_, type_name) in zip(fields, indexes_and_types) if type_name == "int"
    ]
    row = f"({values})"
    if integers:
        digits = f"(digits := ({' + '.join(integers)}).replace(_NULL, ''))"
        short = "".join(f" and len({field}) < 19" for field in integers)  # under 2**63
        row += f" if ({digits}.isdigit() or not digits) and digits.isascii(){short} else None"
    every_field = "".join(f"{field}, " for field in fields)
    are_plain = (
        f"_NUL not in (wanted := ''.join(({every_field}))) "
        f"and wanted.count(_BACKSLASH) == ({every_field}).count(_NULL)"
    )
    return (
        eval(f"lambda fields: {row}", _FAST_NAMESPACE),
        eval(f"lambda fields: {are_plain}", _FAST_NAMESPACE),
    )


def _unescape_one(match):
    octal, hexadecimal, character = match.groups()
    if octal:
        return bytes([int(octal, 8) & 0xFF])  # PostgreSQL keeps the low 8 bits of \777
    if hexadecimal:
        return bytes([int(hexadecimal, 16)])
    return _SINGLE_CHARACTER_ESCAPES.get(character, character)


def _split_fields(line):
    """A row's raw fields: split on the tabs that are not escaped by a backslash."""
    if b"\\\t" not in line:
        return line.split(b"\t")
    tabs = [match.start() for match in _ESCAPE_OR_TAB.finditer(line) if match[0] == b"\t"]
    bounds = [-1, *tabs, len(line)]
    return [line[start + 1 : end] for start, end in zip(bounds, bounds[1:])]


def _unquote(identifier):
    identifier = identifier.decode()
    if identifier.startswith('"'):
        return identifier[1:-1].replace('""', '"')
    return identifier


class _Block:
    """How to turn the rows of one wanted table's COPY block into tuples."""

    def __init__(self, table, header_columns, wanted_columns, line_number):
        self.table = table
        self.width = len(header_columns)
        position = {column: index for index, column in enumerate(header_columns)}
        missing = [column for column in wanted_columns if column not in position]
        if missing:
            raise DumpError(
                f"{table}:{line_number}: {', '.join(missing)}: "
                f"column{'s' if len(missing) > 1 else ''} missing from the COPY header"
            )
        self.plan = [
            (position[column], column, CONVERTERS[type_name])
            for column, type_name in wanted_columns.items()
        ]
        self.fast_row, self.wanted_are_plain = _compile_fast_path(
            [(position[column], type_name) for column, type_name in wanted_columns.items()]
        )

    def convert(self, line, line_number):
        """The row of one line (without its newline) as a tuple of the wanted values."""
        # Fast path: no escape and no NUL among the wanted fields; a backslash elsewhere is
        # fine unless it escapes a tab, which would move the fields' bounds. A line of at
        # most MAX_TEXT bytes holds no text too long: a longer one is not decoded whole.
        if len(line) <= MAX_TEXT:
            try:
                text = line.decode()
                fields = text.split("\t")
                if len(fields) == self.width and (
                    (92 not in line and 0 not in line)
                    or ("\\\t" not in text and self.wanted_are_plain(fields))
                ):
                    row = self.fast_row(fields)
                    if row is not None:
                        return row
            except (ValueError, KeyError):  # the slow path says which column and why
                pass
        return self.convert_slowly(line, line_number)

    def convert_slowly(self, line, line_number):
        fields = _split_fields(line)
        if len(fields) != self.width:
            raise DumpError(
                f"{self.table}:{line_number}: expected {self.width} fields, found {len(fields)}"
            )
        values = []
        for index, column, convert in self.plan:
            raw = fields[index]
            if raw == NULL:
                values.append(None)
                continue
            if b"\\" in raw:
                raw = _ESCAPE.sub(_unescape_one, raw)
            try:
                text = raw.decode()
                if "\x00" in text:
                    raise ValueError("contains a NUL character, which PostgreSQL text cannot hold")
                values.append(convert(text))
            except UnicodeDecodeError as error:
                raise DumpError(
                    f"{self.table}:{line_number}: {column}: invalid UTF-8 "
                    f"({error.reason} at byte {error.start})"
                ) from None
            except ValueError as error:
                raise DumpError(f"{self.table}:{line_number}: {column}: {error}") from None
        return tuple(values)


def read_tables(source, wanted, report=silent, *, line_limit=LINE_LIMIT):
    """Yield (table, line_number, row) for every row of the wanted tables, in dump order.

    source: a path (str or Path) to a .sql or .sql.gz file; gzip is detected by its magic
        bytes, not the name.
    wanted: {table_name: {column_name: type}} with table names without "public." and
        type one of "int", "float", "bool", "text", "date", "timestamp".
    row: a tuple of the converted values in the order of wanted[table]'s columns
        (whatever order the dump's COPY header has them in). NULL (\\N) is None for every type.
    report: the reporter of the reading, a FILE stage (``reporting``): advanced by the
        (compressed) bytes read, with the table and its rows, at every table change and
        every PROGRESS_EVERY rows.
    line_limit: the bytes of a line (without its newline) held at once. A row of a
        wanted table that is longer raises DumpError; any other line that is longer is
        skipped a chunk at a time (SKIP_CHUNK), never held whole.

    Conversions: int, float, bool (t/f) and text as Python values; a date stays its
    "YYYY-MM-DD" text, checked to be a real date; a timestamp becomes UTC text
    "YYYY-MM-DDTHH:MM:SS.ffffffZ". What the catalogue cannot hold is bad input: an
    integer out of SQLite's range (``shared.INTEGER_RANGE``), a float that is not finite
    (NaN, Infinity, or too large for a double), a timestamp before year 1 or after 9999
    in UTC, a text longer than ``shared.MAX_TEXT`` characters (as in catalogue files).
    Raises DumpError for bad input (while iterating) and ValueError at once for a type
    name it does not know.
    """
    for table, columns in wanted.items():
        for column, type_name in columns.items():
            if type_name not in CONVERTERS:
                raise ValueError(
                    f"{table}.{column}: unknown type {type_name!r}, not one of {list(CONVERTERS)}"
                )
    return _read_dump(Path(source), wanted, report, line_limit)


def _read_dump(path, wanted, report, line_limit):
    try:
        file = open(path, "rb")
    except OSError as error:
        raise DumpError(f"{path}: cannot open: {error.strerror}") from None
    with file:
        if file.peek(2)[:2] == GZIP_MAGIC:
            # BufferedReader's C readline: iterating the GzipFile itself is twice as slow.
            stream = io.BufferedReader(gzip.open(file), buffer_size=1 << 16)
        else:
            stream = file
        report(StageStarted(FILE, path.name, os.fstat(file.fileno()).st_size))
        with stream:
            yield from _read_lines(stream, file, path.name, wanted, report, line_limit)
        report(StageFinished(FILE, path.name))


def _size(limit):
    """A line limit as an error message says it: MiB when whole, else bytes."""
    if limit >= 1 << 20 and not limit % (1 << 20):
        return f"{limit >> 20} MiB"
    return f"{limit:,} bytes"


def _skip_rest(stream, line):
    """Read past the rest of ``line`` if it was cut at the limit, a chunk at a time."""
    while line and not line.endswith(b"\n"):
        line = stream.readline(SKIP_CHUNK)


def _read_lines(stream, file, name, wanted, report, line_limit):
    """The wanted rows of the dump text ``stream``; ``file`` is the file it comes from."""
    # At most line_limit bytes and the newline a line: a longer line comes cut, without
    # its newline, and its rest is read past directly from ``stream`` (_skip_rest), so
    # that the line numbers of ``lines`` stay those of the text.
    lines = enumerate(iter(functools.partial(stream.readline, line_limit + 1), b""), 1)
    bytes_read = file.tell if file.seekable() else lambda: 0  # a pipe has no position
    reported = 0

    def advanced(table, rows):
        nonlocal reported
        position = bytes_read()
        report(StageAdvanced(position - reported, table=table, rows=rows))
        reported = position

    where, line_number = name, 0
    tables_seen = set()
    try:
        for line_number, line in lines:
            # A line cut at the limit is no COPY header: skipped, as every other statement.
            if not line.startswith(b"COPY ") or len(line) > line_limit:
                if line_number == 1 and line.startswith(CUSTOM_FORMAT_MAGIC):
                    raise DumpError(
                        f"{name}: a custom-format pg_dump; this reads plain SQL "
                        "(pg_dump --format=plain)"
                    )
                _skip_rest(stream, line)
                continue
            header = _COPY_HEADER.fullmatch(line)
            if header is None:
                continue  # not a data block's header, e.g. inside a function's body
            schema, table, column_list = header.groups()
            table = _unquote(table)
            if schema is not None and _unquote(schema) != "public":
                table = f"{_unquote(schema)}.{table}"
            tables_seen.add(table)
            where = table
            advanced(table, 0)
            if table not in wanted:
                # Skipped without decoding: only the end-of-block line matters.
                for line_number, line in lines:
                    if line == END_OF_BLOCK or line == END_OF_BLOCK_AT_END_OF_FILE:
                        break
                    if len(line) > line_limit:
                        _skip_rest(stream, line)
                else:
                    raise DumpError(f"{table}:{line_number}: the COPY block never ends")
                where = name
                continue
            columns = [_unquote(column) for column in re.findall(_IDENTIFIER, column_list or b"")]
            block = _Block(table, columns, wanted[table], line_number)
            rows = 0
            for line_number, line in lines:
                if line == END_OF_BLOCK or line == END_OF_BLOCK_AT_END_OF_FILE:
                    break
                if len(line) > line_limit and not line.endswith(b"\n"):
                    raise DumpError(
                        f"{table}:{line_number}: a row longer than {_size(line_limit)}, the "
                        "limit of a line (no real row comes near it)"
                    )
                rows += 1
                yield table, line_number, block.convert(line.rstrip(b"\n"), line_number)
                if not rows & (PROGRESS_EVERY - 1):
                    advanced(table, rows)
            else:
                raise DumpError(f"{table}:{line_number}: the COPY block never ends")
            advanced(table, rows)
            where = name
    except (EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise DumpError(
            f"{where}:{line_number}: the dump is truncated or corrupt ({error})"
        ) from None
    if line_number == 0:
        raise DumpError(f"{name}: empty file, not a pg_dump")
    if not tables_seen:
        raise DumpError(
            f"{name}: not a plain-SQL pg_dump (no COPY block in it): "
            "give the upstream's database export"
        )
    missing = [table for table in wanted if table not in tables_seen]
    if missing:
        raise DumpError("; ".join(f"{table}: table missing from the dump" for table in missing))
