"""Catalogue files: which files a catalogue folder holds, and each file read line by
line into validated records, every fault named by ``file:line: field``."""

import json
import os
import re
import stat

import orjson
from marshmallow import ValidationError

from .reporting import FILE, CatalogueError, StageAdvanced, StageFinished, StageStarted
from .resources import LOAD_ORDER

PROGRESS_EVERY = 1000  # lines between progress reports
# What the /api/adhoc/ answers read beyond the records (loader/adhoc_facts.py).
ADHOC_FILE = "adhoc.jsonl"


# Names that look meant as a catalogue file but are not one ("productions.json").
_LOOKALIKE_SUFFIXES = (".json", ".jsonl", ".ndjson", ".jsonl.gz", ".json.gz")


def catalogue_files(source):
    """The catalogue files present in ``source``, by resource, in load order.

    A name that is present must be a readable regular file (or a link to one); a file
    whose name looks meant as a catalogue file but is not one is an error too.
    """
    if not source.is_dir():
        raise CatalogueError(f"{source}: not a folder")
    expected = {f"{name}.jsonl" for name in LOAD_ORDER}
    try:
        names = sorted(entry.name for entry in os.scandir(source))
    except OSError as error:
        raise CatalogueError(f"{source}: cannot be read: {error.strerror}") from None
    for name in names:
        lower = name.lower()
        if name in expected or name == ADHOC_FILE or name.startswith("."):
            continue
        if lower.endswith(_LOOKALIKE_SUFFIXES) or lower.split(".")[0] in LOAD_ORDER:
            raise CatalogueError(
                f"{source / name}: not a catalogue file name "
                f"(expected {', '.join(sorted(expected))})"
            )
    paths = {name: source / f"{name}.jsonl" for name in LOAD_ORDER}
    paths = {name: path for name, path in paths.items() if f"{name}.jsonl" in names}
    if not paths:
        expected = ", ".join(f"{name}.jsonl" for name in LOAD_ORDER)
        raise CatalogueError(f"{source}: no catalogue files (expected any of {expected})")
    for path in paths.values():
        _open_regular(path).close()
    return paths


def adhoc_file(source):
    """The folder's ``adhoc.jsonl``, or None when it has none."""
    path = source / ADHOC_FILE
    return path if os.path.lexists(path) else None


def _open_regular(path):
    """``path`` opened for reading, if it is a regular file (links followed)."""
    try:
        # Non-blocking, so that opening a FIFO does not wait for a writer.
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise CatalogueError(f"{path}: a symbolic link to nothing") from None
    except OSError as error:
        raise CatalogueError(f"{path}: cannot be read: {error.strerror}") from None
    kind = stat.S_IFMT(os.fstat(descriptor).st_mode)
    if kind != stat.S_IFREG:
        os.close(descriptor)
        what = _KINDS.get(kind, "not a regular file")
        raise CatalogueError(f"{path}: not a regular file but {what}")
    os.set_blocking(descriptor, True)
    return open(descriptor, "rb", buffering=1 << 16)


_KINDS = {
    stat.S_IFDIR: "a folder",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFSOCK: "a socket",
}


def read_records(path, schema, report):
    """Yield (line number, validated record) for each record line of ``path``, reporting
    its reading to ``report`` as a FILE stage.

    A line holds at most LINE_LIMIT bytes and a string field at most FIELD_LIMIT
    characters; a key given twice in one object is an error.
    """
    lines = _open_regular(path)
    with lines:
        report(StageStarted(FILE, path.name, os.fstat(lines.fileno()).st_size))
        pending_size = pending_lines = 0
        number = records = 0
        while True:
            try:
                raw = lines.readline(LINE_LIMIT + 1)
            except OSError as error:
                raise CatalogueError(f"{path}: cannot be read: {error.strerror}") from None
            if not raw:
                break
            number += 1
            where = f"{path.name}:{number}"
            if len(raw) > LINE_LIMIT and not raw.endswith(b"\n"):
                raise CatalogueError(f"{where}: {_field_at_end(raw)}: too long {_LIMITS}")
            pending_size += len(raw)
            pending_lines += 1
            if pending_lines == PROGRESS_EVERY:
                report(StageAdvanced(pending_size, pending_lines))
                pending_size = pending_lines = 0
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise CatalogueError(
                    f"{where}: not valid UTF-8 ({error.reason} at byte {error.start})"
                ) from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            if not text.strip():
                continue
            try:
                data = orjson.loads(text)
            except orjson.JSONDecodeError as error:
                raise CatalogueError(
                    f"{where}: invalid JSON: {error.msg} at column {error.pos + 1}"
                ) from None
            if not isinstance(data, dict):
                raise CatalogueError(f"{where}: record: not a JSON object")
            if len(raw) > FIELD_LIMIT:
                _check_lengths(data, where)
            if not _no_duplicate_keys(raw, data):
                _check_duplicate_keys(text, where)
            try:
                record = schema.load(data)
            except ValidationError as error:
                field, message = first_error(error.messages)
                raise CatalogueError(f"{where}: {field}: {message}") from None
            records += 1
            yield number, record
        report(StageAdvanced(pending_size, pending_lines))
        report(StageFinished(FILE, path.name, records))


FIELD_LIMIT = 1 << 20  # characters of one string field
LINE_LIMIT = 8 << 20  # bytes of one record line
_LIMITS = "(a string field holds at most 1 MiB, a record line at most 8 MiB)"
_SPACE_BEFORE_COLON = re.compile(rb'"[ \t\r\n]+:')
_LAST_KEY = re.compile(rb'"((?:[^"\\]|\\.){1,200})"\s*:')


def _no_duplicate_keys(raw, data):
    """True if ``raw``, parsed as ``data``, surely gives no key twice in an object.

    Without ``\\u`` escapes and spaces before colons, ``":`` in the line counts its keys
    plus the quotes followed by a colon inside strings, and ``":`` in orjson's output
    counts the distinct keys plus the same quotes: equal counts mean no key was lost.
    A few microseconds a line; when it cannot tell, the slow exact check decides.
    """
    return (
        b"\\u" not in raw
        and _SPACE_BEFORE_COLON.search(raw) is None
        and raw.count(b'":') == orjson.dumps(data).count(b'":')
    )


def _check_duplicate_keys(text, where):
    """Read ``text`` again, slowly, when the quick count could not rule duplicates out."""

    def unique(pairs):
        seen = set()
        for key, _ in pairs:
            if key in seen:
                raise CatalogueError(f"{where}: {key}: given twice in one object")
            seen.add(key)
        return dict(pairs)

    json.loads(text, object_pairs_hook=unique)


def _check_lengths(value, where, field=()):
    if isinstance(value, str):
        if len(value) > FIELD_LIMIT:
            raise CatalogueError(f"{where}: {'.'.join(field) or 'record'}: too long {_LIMITS}")
    elif isinstance(value, dict):
        for key, item in value.items():
            _check_lengths(item, where, field + (str(key),))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_lengths(item, where, field + (str(index),))


def _field_at_end(raw):
    """The key of the field that a cut line ends in, as far as its text shows."""
    matches = list(_LAST_KEY.finditer(raw, max(0, len(raw) - LINE_LIMIT)))
    if not matches:
        return "record"
    try:
        return json.loads(b'"' + matches[-1].group(1) + b'"')
    except ValueError:
        return "record"


def first_error(messages, path=()):
    """The first (dotted field path, message) of a marshmallow error structure."""
    if isinstance(messages, dict):
        key, value = next(iter(messages.items()))
        return first_error(value, path if key == "_schema" else path + (str(key),))
    if isinstance(messages, list):
        return first_error(messages[0], path)
    return ".".join(path) or "record", messages
