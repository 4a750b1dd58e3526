"""Loading a catalogue folder: validate every record, build a new database file beside
the served one, and rename it over the served one only when all of it is good.

A failed load raises CatalogueError(``file:line: field: what is wrong``) and leaves
the served file untouched; a reader sees the old catalogue or the new one, never a mix.
Relations that the API shows from both sides may be given on either side or both; both
sides must agree, and a side not given is derived from the other (the upstream's order
where it has one, else the order in which the files gave the relation).
"""

import itertools
import json
import os
import re
import sqlite3
import stat
from pathlib import Path

import orjson
from marshmallow import ValidationError

from .. import tables
from ..resources import BY_NAME, LOAD_ORDER
from ..shared import date_key, name_key, sortable_title
from . import install, provenance
from .build import Builder
from .pgdump import DumpError
from .upstream import import_dump

PROGRESS_EVERY = 1000  # lines between progress reports
# The position of a competition that no party lists, only a placing: after any listed.
KNOWN_FROM_PLACINGS = 2**62
# Records that nested summaries may refer to, and may create when their file lacks them.
SUMMARISED = ("platforms", "production_types", "releasers")


class CatalogueError(Exception):
    """A catalogue that cannot be loaded, and where and why."""


class Progress:
    """Receives the progress of a load; this one ignores it."""

    def file_started(self, name, size):
        pass

    def advanced(self, size, records):
        pass

    def file_finished(self, name, records):
        pass

    def stage(self, description):
        pass

    def reading(self, table, rows):
        """While importing a dump: the table being read and its rows so far."""


def load_catalogue(source, database, progress=None, *, wait=False, allow_empty=False, origin=None):
    """Load the catalogue folder ``source``, or the upstream's database export (a
    ``.sql`` or ``.sql.gz`` file), into the database file ``database``.

    Returns (the number of records of each resource, the same of the catalogue it
    replaced). See ``install`` for the lock, the checks and the previous file.
    """
    if not Path(source).is_file():
        catalogue_files(Path(source))  # a source that cannot be read: said before the lock
    target = Path(database)
    with install.building(target, wait=wait) as building:
        counts = build_catalogue(
            source, building, target, progress, allow_empty=allow_empty, origin=origin
        )
        before = install.install(building, target, counts, allow_empty=allow_empty)
    return counts, before


def build_catalogue(source, building, target, progress=None, *, allow_empty=False, origin=None):
    """Build the catalogue of ``source`` (a folder or an export file) into the new file
    ``building`` that is to replace ``target``, and record ``origin`` (provenance facts;
    by default those of ``source``) in it. Returns the number of records of each resource."""
    progress = progress or Progress()
    if Path(source).is_file():
        fill = lambda builder: _import(source, builder, progress)  # noqa: E731
    else:
        paths = catalogue_files(Path(source))
        fill = lambda builder: _Loader(builder, paths, progress).run()  # noqa: E731
    builder = Builder(building)
    try:
        counts, features = fill(builder)
        # Known once the files are read: stop before the long work of finishing.
        install.refuse_to_empty(target, counts, allow_empty=allow_empty)
        builder.finish(counts, features, progress)
    finally:
        builder.close()
    provenance.record(building, origin if origin is not None else provenance.of_path(source))
    return counts


def _import(source, builder, progress):
    try:
        return import_dump(source, builder, progress)
    except DumpError as error:
        raise CatalogueError(str(error)) from None


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
        if name in expected or name.startswith("."):
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


def _fsync(path):
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def read_records(path, schema, progress):
    """Yield (line number, validated record) for each record line of ``path``.

    A line holds at most LINE_LIMIT bytes and a string field at most FIELD_LIMIT
    characters; a key given twice in one object is an error.
    """
    lines = _open_regular(path)
    with lines:
        progress.file_started(path.name, os.fstat(lines.fileno()).st_size)
        pending_size = pending_lines = 0
        number = 0
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
                progress.advanced(pending_size, pending_lines)
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
                yield number, schema.load(data)
            except ValidationError as error:
                field, message = first_error(error.messages)
                raise CatalogueError(f"{where}: {field}: {message}") from None
        progress.advanced(pending_size, pending_lines)


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


def _json(value):
    return orjson.dumps(value).decode()


class _Pairs:
    """One relation shown from two sides (``left`` owns the pair in an export): what
    each side gave, in order, kept in the scratch file (``_Scratch.give``) and checked
    there for agreement once every file is read."""

    def __init__(self, scratch, left, right):
        self.scratch = scratch
        self.names = (left, right)
        self.relation = scratch.new_relation()

    def give(self, side, owner, where, items):
        """``owner`` (a record on ``side``, 0 or 1, read at ``where``) gives the pairs
        ``items``: [(other id, values)], in its order."""
        self.scratch.give(self.relation, side, owner, where, items)

    def resolve(self, field_names, derive_order):
        """Each pair as (left id, right id, values, left position, right position),
        raising CatalogueError where the sides disagree. ``derive_order(side, owner,
        pairs)`` orders the ``pairs`` ((left id, right id, values)) of a side not given."""
        scratch, relation = self.scratch, self.relation
        scratch.pairs_indexed()
        # The first time each pair was given (left side first, then in the files' order).
        scratch.query(
            "INSERT INTO scratch.load_pair_keys SELECT relation, left_id, right_id, side, "
            "seq, value FROM (SELECT *, row_number() OVER (PARTITION BY left_id, right_id "
            "ORDER BY side, seq) AS n FROM scratch.load_pairs WHERE relation = ?) WHERE n = 1",
            (relation,),
        )
        owner = "CASE {0}.side WHEN 0 THEN {0}.left_id ELSE {0}.right_id END"
        place = (
            "(SELECT place FROM scratch.load_pair_owners AS o WHERE o.relation = {0}.relation "
            f"AND o.side = {{0}}.side AND o.owner = {owner})"
        )
        contradiction = scratch.query(
            f"SELECT later.side, later.left_id, later.right_id, later.value, first.value, "
            f"{place.format('later')}, {place.format('first')} "
            "FROM scratch.load_pairs AS later JOIN scratch.load_pair_keys AS first "
            "ON first.relation = later.relation AND first.left_id = later.left_id "
            "AND first.right_id = later.right_id "
            "WHERE later.relation = ? AND later.value != first.value "
            "ORDER BY later.side, later.seq LIMIT 1",
            (relation,),
        ).fetchone()
        if contradiction is not None:
            side, left, right, value, first_value, where, first_where = contradiction
            raise CatalogueError(
                f"{where}: {field_names[side]}: {value} for {(left, right)} contradicts "
                f"{first_where}, which has {first_value}"
            )
        # A pair that one side gives and the other, given, does not list.
        unlisted = " UNION ALL ".join(
            f"SELECT k.side AS first_side, k.seq AS first_seq, {side} AS side, k.left_id, "
            f"k.right_id, {place.format('k')} AS first_place, o.place "
            "FROM scratch.load_pair_keys AS k JOIN scratch.load_pair_owners AS o "
            f"ON o.relation = k.relation AND o.side = {side} AND o.owner = k.{column} "
            "WHERE k.relation = :relation AND NOT EXISTS (SELECT 1 FROM scratch.load_pairs "
            "AS p WHERE p.relation = k.relation AND p.left_id = k.left_id "
            f"AND p.right_id = k.right_id AND p.side = {side})"
            for side, column in ((0, "left_id"), (1, "right_id"))
        )
        missing = scratch.query(
            f"SELECT side, left_id, right_id, first_place, place FROM ({unlisted}) "
            "ORDER BY first_side, first_seq, side LIMIT 1",
            {"relation": relation},
        ).fetchone()
        if missing is not None:
            side, left, right, where, other_where = missing
            key = (left, right)
            raise CatalogueError(
                f"{where}: {field_names[1 - side]}: gives {self.names[side]} {key[side]} "
                f"and {self.names[1 - side]} {key[1 - side]}, but {other_where} does not "
                f"list it in {field_names[side]}"
            )
        # Each side's position: where it was given (its last mention), else derived.
        scratch.query(
            "INSERT INTO scratch.load_pair_positions SELECT relation, left_id, right_id, side, "
            "position FROM (SELECT *, row_number() OVER (PARTITION BY left_id, right_id, side "
            "ORDER BY seq DESC) AS n FROM scratch.load_pairs WHERE relation = ?) WHERE n = 1",
            (relation,),
        )
        for side, column in ((0, "left_id"), (1, "right_id")):
            rows = scratch.query(
                "SELECT k.left_id, k.right_id, k.value FROM scratch.load_pair_keys AS k "
                "WHERE k.relation = ? AND NOT EXISTS (SELECT 1 FROM scratch.load_pair_positions "
                "AS p WHERE p.relation = k.relation AND p.left_id = k.left_id "
                f"AND p.right_id = k.right_id AND p.side = {side}) ORDER BY k.{column}",
                (relation,),
            )
            derived = []
            for owner_id, keys in itertools.groupby(rows, key=lambda row: row[side]):
                keys = [(left, right, orjson.loads(value)) for left, right, value in keys]
                ordered = derive_order(side, owner_id, keys)
                derived += [
                    (relation, key[0], key[1], side, index) for index, key in enumerate(ordered)
                ]
                if len(derived) >= scratch.BATCH:
                    scratch.derived(derived)
            scratch.derived(derived)
        position = (
            "coalesce((SELECT position FROM scratch.load_pair_positions AS p WHERE "
            "p.relation = k.relation AND p.left_id = k.left_id AND p.right_id = k.right_id "
            "AND p.side = {0}), (SELECT position FROM scratch.load_pair_derived AS d WHERE "
            "d.relation = k.relation AND d.left_id = k.left_id AND d.right_id = k.right_id "
            "AND d.side = {0}))"
        )
        rows = scratch.query(
            f"SELECT k.left_id, k.right_id, k.value, {position.format(0)}, {position.format(1)} "
            "FROM scratch.load_pair_keys AS k WHERE k.relation = ?",
            (relation,),
        )
        for left, right, value, left_position, right_position in rows:
            yield left, right, orjson.loads(value), left_position, right_position


# Resources by number, as the scratch tables store them.
_RESOURCE = {name: number for number, name in enumerate(LOAD_ORDER)}
# The columns of a summarised record that a nested summary may give.
_SUMMARY_FIELDS = ("name", "is_group", "supertype")


class _Scratch:
    """What the loader must remember of every record until the end of the load, kept in
    tables of the builder's scratch file, not in memory: the id and place (``file:line``)
    of each record read, and of each created from a nested summary with what that gave,
    and the references and nicks to check once every file is read. Memory holds at most
    a batch of rows to write and a bounded cache of records looked up."""

    BATCH = 5000  # rows of references or nicks per INSERT
    CACHED = 20_000  # records kept for lookups; past this, the kept ones are dropped

    def __init__(self, builder):
        self.raw = builder.connection.connection.driver_connection
        for statement in (
            """CREATE TABLE scratch.load_records (
                resource INTEGER NOT NULL, id INTEGER NOT NULL, place TEXT NOT NULL,
                name TEXT, is_group INTEGER, supertype TEXT,
                from_summary INTEGER NOT NULL, given_nicks INTEGER NOT NULL,
                PRIMARY KEY (resource, id)) WITHOUT ROWID""",
            """CREATE TABLE scratch.load_references (
                seq INTEGER PRIMARY KEY, resource INTEGER NOT NULL, id INTEGER NOT NULL,
                place TEXT NOT NULL, field TEXT NOT NULL)""",
            """CREATE TABLE scratch.load_nicks (
                seq INTEGER PRIMARY KEY, releaser_id INTEGER NOT NULL, name TEXT NOT NULL,
                abbreviation TEXT NOT NULL, place TEXT NOT NULL, field TEXT NOT NULL)""",
            # Relations given from both sides (_Pairs): who gave a side, and each pair
            # given, in the files' order (value: its values as JSON, keys sorted).
            """CREATE TABLE scratch.load_pair_owners (
                relation INTEGER NOT NULL, side INTEGER NOT NULL, owner INTEGER NOT NULL,
                place TEXT NOT NULL, PRIMARY KEY (relation, side, owner)) WITHOUT ROWID""",
            """CREATE TABLE scratch.load_pairs (
                seq INTEGER PRIMARY KEY, relation INTEGER NOT NULL, side INTEGER NOT NULL,
                left_id INTEGER NOT NULL, right_id INTEGER NOT NULL,
                position INTEGER NOT NULL, value TEXT NOT NULL)""",
            """CREATE TABLE scratch.load_pair_keys (
                relation INTEGER NOT NULL, left_id INTEGER NOT NULL, right_id INTEGER NOT NULL,
                side INTEGER NOT NULL, seq INTEGER NOT NULL, value TEXT NOT NULL,
                PRIMARY KEY (relation, left_id, right_id)) WITHOUT ROWID""",
            """CREATE TABLE scratch.load_pair_positions (
                relation INTEGER NOT NULL, left_id INTEGER NOT NULL, right_id INTEGER NOT NULL,
                side INTEGER NOT NULL, position INTEGER NOT NULL,
                PRIMARY KEY (relation, left_id, right_id, side)) WITHOUT ROWID""",
            # Party series: the parties each series lists, and the series each party gives.
            """CREATE TABLE scratch.load_series_lists (
                series_id INTEGER PRIMARY KEY, place TEXT NOT NULL)""",
            """CREATE TABLE scratch.load_series_parties (
                seq INTEGER PRIMARY KEY, series_id INTEGER NOT NULL, position INTEGER NOT NULL,
                party_id INTEGER NOT NULL, place TEXT NOT NULL)""",
            "CREATE INDEX scratch.load_series_parties_by_party "
            "ON load_series_parties (party_id, seq)",
            """CREATE TABLE scratch.load_party_series (
                seq INTEGER PRIMARY KEY, party_id INTEGER NOT NULL UNIQUE,
                series_id INTEGER NOT NULL, place TEXT NOT NULL)""",
            """CREATE TABLE scratch.load_competitions (
                id INTEGER PRIMARY KEY, party_id INTEGER NOT NULL, name TEXT NOT NULL,
                place TEXT NOT NULL)""",
            """CREATE TABLE scratch.load_pair_derived (
                relation INTEGER NOT NULL, left_id INTEGER NOT NULL, right_id INTEGER NOT NULL,
                side INTEGER NOT NULL, position INTEGER NOT NULL,
                PRIMARY KEY (relation, left_id, right_id, side)) WITHOUT ROWID""",
        ):
            self.raw.execute(statement)
        self.pending = {
            "INSERT INTO scratch.load_references (resource, id, place, field) "
            "VALUES (?, ?, ?, ?)": [],
            "INSERT INTO scratch.load_nicks (releaser_id, name, abbreviation, place, field) "
            "VALUES (?, ?, ?, ?, ?)": [],
            "INSERT INTO scratch.load_pair_owners VALUES (?, ?, ?, ?)": [],
            "INSERT INTO scratch.load_pairs (relation, side, left_id, right_id, position, "
            "value) VALUES (?, ?, ?, ?, ?, ?)": [],
        }
        self.references, self.nicks, self.pair_owners, self.pairs = self.pending.values()
        self.cache = {}  # (resource, id) -> (place, {summary field: value})
        self.relations = 0
        self._pairs_indexed = False

    def add(
        self, resource, record_id, place, record=None, *, from_summary=False, given_nicks=False
    ):
        """Remember a record (``record``: its summary fields, if summarised). Returns
        None, or where a record of the same id was first seen."""
        fields = {}
        if record is not None:
            fields = {name: record[name] for name in _SUMMARY_FIELDS if name in record}
        is_group = fields.get("is_group")
        try:
            self.raw.execute(
                "INSERT INTO scratch.load_records VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    _RESOURCE[resource],
                    record_id,
                    place,
                    fields.get("name"),
                    None if is_group is None else int(is_group),
                    fields.get("supertype"),
                    int(from_summary),
                    int(given_nicks),
                ),
            )
        except sqlite3.IntegrityError:
            return self.find(resource, record_id)[0]
        self._keep((resource, record_id), (place, fields))
        return None

    def find(self, resource, record_id):
        """(where it was first seen, its summary fields) of a record, or None."""
        key = (resource, record_id)
        found = self.cache.get(key)
        if found is None:
            row = self.raw.execute(
                "SELECT place, name, is_group, supertype FROM scratch.load_records "
                "WHERE resource = ? AND id = ?",
                (_RESOURCE[resource], record_id),
            ).fetchone()
            if row is None:
                return None
            fields = {
                name: value if name != "is_group" else bool(value)
                for name, value in zip(_SUMMARY_FIELDS, row[1:])
                if value is not None
            }
            found = (row[0], fields)
            self._keep(key, found)
        return found

    def _keep(self, key, found):
        if len(self.cache) >= self.CACHED:
            self.cache.clear()
        self.cache[key] = found

    def refer(self, resource, record_id, place, field):
        """Remember a reference to check once every file is read."""
        self.references.append((_RESOURCE[resource], record_id, place, field))
        if len(self.references) >= self.BATCH:
            self.flush()

    def nick(self, releaser_id, name, abbreviation, place, field):
        """Remember a nick that a production gives a releaser."""
        self.nicks.append((releaser_id, name, abbreviation, place, field))
        if len(self.nicks) >= self.BATCH:
            self.flush()

    def competition(self, competition_id, party_id, name, place):
        """Remember a competition; None, or (party id, name, place) as first given."""
        known = self.raw.execute(
            "SELECT party_id, name, place FROM scratch.load_competitions WHERE id = ?",
            (competition_id,),
        ).fetchone()
        if known is None:
            self.raw.execute(
                "INSERT INTO scratch.load_competitions VALUES (?, ?, ?, ?)",
                (competition_id, party_id, name, place),
            )
        return known

    def series_lists(self, series_id, place, party_ids):
        """Remember the parties a series lists, in its order."""
        self.raw.execute("INSERT INTO scratch.load_series_lists VALUES (?, ?)", (series_id, place))
        self.raw.executemany(
            "INSERT INTO scratch.load_series_parties (series_id, position, party_id, place) "
            "VALUES (?, ?, ?, ?)",
            [(series_id, position, party_id, place) for position, party_id in enumerate(party_ids)],
        )

    def party_series(self, party_id, series_id, place):
        """Remember the series a party gives."""
        self.raw.execute(
            "INSERT INTO scratch.load_party_series (party_id, series_id, place) VALUES (?, ?, ?)",
            (party_id, series_id, place),
        )

    def new_relation(self):
        """A number for a new relation in the pair tables."""
        self.relations += 1
        return self.relations

    def give(self, relation, side, owner, place, items):
        """Remember that ``owner`` gave its side of ``relation`` as ``items``."""
        self.pair_owners.append((relation, side, owner, place))
        for position, (other, values) in enumerate(items):
            left, right = (owner, other) if side == 0 else (other, owner)
            value = orjson.dumps(values, option=orjson.OPT_SORT_KEYS).decode()
            self.pairs.append((relation, side, left, right, position, value))
        if len(self.pairs) >= self.BATCH or len(self.pair_owners) >= self.BATCH:
            self.flush()

    def pairs_indexed(self):
        """Index the pairs given, once all are."""
        if not self._pairs_indexed:
            self.query(
                "CREATE INDEX scratch.load_pairs_by_key "
                "ON load_pairs (relation, left_id, right_id, side, seq)"
            )
            self._pairs_indexed = True

    def derived(self, rows):
        """Store derived positions (relation, left, right, side, position), emptying
        ``rows``."""
        if rows:
            self.raw.executemany(
                "INSERT INTO scratch.load_pair_derived VALUES (?, ?, ?, ?, ?)", rows
            )
            rows.clear()

    def flush(self):
        for statement, rows in self.pending.items():
            if rows:
                self.raw.executemany(statement, rows)
                rows.clear()

    def query(self, sql, parameters=()):
        """A cursor over ``sql``'s rows, once every row is written."""
        self.flush()
        return self.raw.execute(sql, parameters)

    def count(self, resource):
        return self.query(
            "SELECT count(*) FROM scratch.load_records WHERE resource = ?",
            (_RESOURCE[resource],),
        ).fetchone()[0]

    def from_summaries(self, resource):
        """Each record of ``resource`` created from a summary, by id, as a dict."""
        last = -(2**63)
        while True:
            rows = self.query(
                "SELECT id, name, is_group, supertype FROM scratch.load_records "
                "WHERE resource = ? AND from_summary AND id > ? ORDER BY id LIMIT ?",
                (_RESOURCE[resource], last, self.BATCH),
            ).fetchall()
            if not rows:
                return
            for record_id, name, is_group, supertype in rows:
                yield {
                    "id": record_id,
                    "name": name,
                    "is_group": None if is_group is None else bool(is_group),
                    "supertype": supertype,
                }
            last = rows[-1][0]


class _Loader:
    """Reads the files in load order, checks what refers to what, and hands rows to the
    builder."""

    def __init__(self, builder, paths, progress):
        self.builder = builder
        self.paths = paths
        self.progress = progress
        # Every record's id and place, the references and the nicks: checked at the end.
        self.scratch = _Scratch(builder)
        self.features = set()
        self.memberships = _Pairs(self.scratch, "member", "group")
        self.releases = _Pairs(self.scratch, "party", "production")
        self.invitations = _Pairs(self.scratch, "party", "production")
        # Competition results, from the parties' side and from the productions'.
        self.results = _Pairs(self.scratch, "competition", "production")

    def run(self):
        counts = {}
        for name in LOAD_ORDER:
            path = self.paths.get(name)
            if path is None:
                continue
            count = 0
            for number, record in read_records(path, BY_NAME[name].record_schema, self.progress):
                where = f"{path.name}:{number}"
                first = self.scratch.add(
                    name,
                    record["id"],
                    where,
                    record if name in SUMMARISED else None,
                    given_nicks=name == "releasers" and record["nicks"] is not None,
                )
                if first is not None:
                    raise CatalogueError(
                        f"{where}: id: duplicate id {record['id']} "
                        f"(first on line {first.rpartition(':')[2]})"
                    )
                self._acceptor(name)(record, where)
                count += 1
            self.progress.file_finished(path.name, count)
            counts[name] = count
        for name in SUMMARISED:
            for record in self.scratch.from_summaries(name):
                self._write_summarised(name, record)
            counts[name] = self.scratch.count(name)
        self._resolve()
        return counts, self.features

    # Records of each file.

    def _acceptor(self, name):
        """How a record of ``name`` is taken: by the resource's own method here, or,
        for a resource that refers to no other, as its table's columns."""
        return getattr(self, f"_accept_{name}", None) or (
            lambda record, where: self._accept_plain(BY_NAME[name], record)
        )

    def _accept_plain(self, resource, record):
        table = resource.table
        row = {name: value for name, value in record.items() if name in table.c}
        if "name_key" in table.c:
            row["name_key"] = name_key(record["name"])
        self.builder.queue(table, row)

    def _accept_platforms(self, record, where):
        self._write_summarised("platforms", record)

    def _accept_production_types(self, record, where):
        self._write_summarised("production_types", record)

    def _accept_releasers(self, record, where):
        self._write_summarised("releasers", record)
        releaser_id = record["id"]
        for column in ("country_code", "created_at", "updated_at"):
            if record[column] is not None:
                self.features.add(f"releasers_{column}")
        if record["nicks"] is not None:
            for position, nick in enumerate(record["nicks"]):
                self.builder.queue(
                    tables.releaser_nicks,
                    {"releaser_id": releaser_id, "position": position, **nick},
                )
        if record["member_of"] is not None:
            self.memberships.give(
                0,
                releaser_id,
                where,
                self._refer_all("releasers", record["member_of"], "group", where, "member_of"),
            )
        if record["members"] is not None or record["subgroups"] is not None:
            items = []
            for field, key in (("members", "member"), ("subgroups", "subgroup")):
                items += self._refer_all("releasers", record[field] or [], key, where, field)
            self.memberships.give(1, releaser_id, where, items)
        self._links(tables.releaser_links, "releaser_id", releaser_id, record["external_links"])

    def _refer_all(self, resource, items, key, where, field):
        result = []
        for index, item in enumerate(items):
            other = item[key]["id"]
            self.scratch.refer(resource, other, where, f"{field}.{index}.{key}")
            result.append((other, {name: value for name, value in item.items() if name != key}))
        return result

    def _links(self, table, owner, owner_id, items, **more):
        for position, link in enumerate(items):
            self.builder.queue(table, {owner: owner_id, "position": position, **more, **link})

    def _accept_party_series(self, record, where):
        self.builder.queue(
            tables.party_series,
            {
                "id": record["id"],
                "name": record["name"],
                "website": record["website"],
                "name_key": name_key(record["name"]),
            },
        )
        if record["parties"] is not None:
            self.scratch.series_lists(record["id"], where, [p["id"] for p in record["parties"]])

    def _accept_parties(self, record, where):
        party_id = record["id"]
        series = record["party_series"]
        if series is not None:
            if self.scratch.find("party_series", series["id"]) is None:
                raise CatalogueError(
                    f"{where}: party_series: no party series with id {series['id']}"
                )
            self.scratch.party_series(party_id, series["id"], where)
        row = {
            name: record[name]
            for name in (
                "id",
                "name",
                "tagline",
                "start_date",
                "end_date",
                "location",
                "is_online",
                "country_code",
                "latitude",
                "longitude",
                "website",
            )
        }
        row.update(
            name_key=name_key(record["name"]),
            start_date_key=date_key(record["start_date"]),
            end_date_key=date_key(record["end_date"]),
        )
        self.builder.queue(tables.parties, row)
        for field, pairs in (("releases", self.releases), ("invitations", self.invitations)):
            if record[field] is not None:
                pairs.give(
                    0,
                    party_id,
                    where,
                    self._refer_all_ids("productions", record[field], where, field),
                )
        if record["competitions"] is not None:
            for position, competition in enumerate(record["competitions"]):
                field = f"competitions.{position}"
                self._competition(competition["id"], party_id, competition["name"], where, field)
                for name in ("platform", "production_type"):
                    if competition[name] is not None:
                        summarised = "platforms" if name == "platform" else "production_types"
                        self._refer(summarised, competition[name], where, f"{field}.{name}")
                self.builder.queue(
                    tables.competitions,
                    {
                        "id": competition["id"],
                        "party_id": party_id,
                        "position": position,
                        "name": competition["name"],
                        "shown_date": competition["shown_date"],
                        "platform_id": (competition["platform"] or {}).get("id"),
                        "production_type_id": (competition["production_type"] or {}).get("id"),
                    },
                )
                results = []
                for index, result in enumerate(competition["results"]):
                    production = result["production"]["id"]
                    self.scratch.refer(
                        "productions", production, where, f"{field}.results.{index}.production"
                    )
                    values = {name: result[name] for name in ("position", "ranking", "score")}
                    results.append((production, values))
                self.results.give(0, competition["id"], where, results)
        self._links(tables.party_links, "party_id", party_id, record["external_links"])

    def _refer_all_ids(self, resource, items, where, field):
        result = []
        for index, item in enumerate(items):
            self.scratch.refer(resource, item["id"], where, f"{field}.{index}")
            result.append((item["id"], None))
        return result

    def _competition(self, competition_id, party_id, name, where, field):
        """Remember a competition; whether it was known (and agrees)."""
        known = self.scratch.competition(competition_id, party_id, name, where)
        if known is None:
            return False
        if (known[0], known[1]) != (party_id, name):
            raise CatalogueError(
                f"{where}: {field}: competition {competition_id} of party {party_id} named "
                f"{_json(name)} contradicts {known[2]}, which gives party {known[0]} and name "
                f"{_json(known[1])}"
            )
        return True

    def _accept_bbses(self, record, where):
        bbs_id = record["id"]
        self.builder.queue(
            tables.bbses,
            {
                **{
                    name: record[name]
                    for name in (
                        "id",
                        "name",
                        "location",
                        "country_code",
                        "latitude",
                        "longitude",
                        "tags",
                    )
                },
                "name_key": name_key(record["name"]),
            },
        )
        for position, (production, _) in enumerate(
            self._refer_all_ids("productions", record["bbstros"], where, "bbstros")
        ):
            self.builder.queue(
                tables.bbstros,
                {"bbs_id": bbs_id, "position": position, "production_id": production},
            )
        for position, (releaser, values) in enumerate(
            self._refer_all("releasers", record["staff"], "releaser", where, "staff")
        ):
            self.builder.queue(
                tables.bbs_staff,
                {"bbs_id": bbs_id, "position": position, "releaser_id": releaser, **values},
            )
        for position, (group, values) in enumerate(
            self._refer_all("releasers", record["affiliations"], "group", where, "affiliations")
        ):
            self.builder.queue(
                tables.bbs_affiliations,
                {"bbs_id": bbs_id, "position": position, "group_id": group, **values},
            )

    def _accept_productions(self, record, where):
        production_id = record["id"]
        for column in ("created_at", "updated_at"):
            if record[column] is not None:
                self.features.add(f"productions_{column}")
        title_key = sortable_title(record["title"])
        self.builder.queue(
            tables.productions,
            {
                "id": production_id,
                "title": record["title"],
                "release_date": record["release_date"],
                "supertype": record["supertype"],
                "tags": record["tags"],
                "created_at": _timestamp(record["created_at"]),
                "updated_at": _timestamp(record["updated_at"]),
                "sortable_title": title_key,
                "title_key": record["title"].lower(),
                "release_date_key": date_key(record["release_date"]),
                # A screenshot counts once it has a thumbnail, as upstream.
                "has_screenshot": any(shot["thumbnail_url"] for shot in record["screenshots"]),
            },
        )
        for role, field in (
            ("author", "author_nicks"),
            ("affiliation", "author_affiliation_nicks"),
        ):
            for position, nick in enumerate(record[field]):
                self._nick(nick, where, f"{field}.{position}")
                self.builder.queue(
                    tables.production_nicks,
                    {
                        "production_id": production_id,
                        "role": role,
                        "position": position,
                        "name": nick["name"],
                        "abbreviation": nick["abbreviation"],
                        "releaser_id": nick["releaser"]["id"],
                    },
                )
        for field, summarised, table, column in (
            ("platforms", "platforms", tables.production_platforms, "platform_id"),
            ("types", "production_types", tables.production_type_links, "production_type_id"),
        ):
            for position, summary in enumerate(record[field]):
                self._refer(summarised, summary, where, f"{field}.{position}")
                self.builder.queue(
                    table,
                    {"production_id": production_id, "position": position, column: summary["id"]},
                )
        for position, credit in enumerate(record["credits"]):
            nick = credit["nick"]
            self._nick(nick, where, f"credits.{position}.nick")
            self.builder.queue(
                tables.credits,
                {
                    "production_id": production_id,
                    "position": position,
                    "name": nick["name"],
                    "abbreviation": nick["abbreviation"],
                    "releaser_id": nick["releaser"]["id"],
                    "category": credit["category"],
                    "role": credit["role"],
                },
            )
        position = 0
        for field, is_download in (("download_links", True), ("external_links", False)):
            for link in record[field]:
                self.builder.queue(
                    tables.production_links,
                    {
                        "production_id": production_id,
                        "position": position,
                        "is_download": is_download,
                        **link,
                    },
                )
                position += 1
        for position, screenshot in enumerate(record["screenshots"]):
            self.builder.queue(
                tables.screenshots,
                {"production_id": production_id, "position": position, **screenshot},
            )
        for field, pairs in (
            ("release_parties", self.releases),
            ("invitation_parties", self.invitations),
        ):
            if record[field] is not None:
                pairs.give(
                    1,
                    production_id,
                    where,
                    self._refer_all_ids("parties", record[field], where, field),
                )
        if record["competition_placings"] is not None:
            placings = []
            for index, placing in enumerate(record["competition_placings"]):
                field = f"competition_placings.{index}.competition"
                competition = placing["competition"]
                party = competition["party"]["id"]
                if self.scratch.find("parties", party) is None:
                    raise CatalogueError(f"{where}: {field}.party: no party with id {party}")
                if not self._competition(
                    competition["id"], party, competition["name"], where, field
                ):
                    self.builder.queue(  # known only from this placing
                        tables.competitions,
                        {
                            "id": competition["id"],
                            "party_id": party,
                            # After the competitions its party lists, by id.
                            "position": KNOWN_FROM_PLACINGS,
                            "name": competition["name"],
                            "shown_date": None,
                            "platform_id": None,
                            "production_type_id": None,
                        },
                    )
                values = {name: placing[name] for name in ("position", "ranking", "score")}
                placings.append((competition["id"], values))
            self.results.give(1, production_id, where, placings)

    def _nick(self, nick, where, field):
        self._refer("releasers", nick["releaser"], where, f"{field}.releaser")
        self.scratch.nick(nick["releaser"]["id"], nick["name"], nick["abbreviation"], where, field)

    def _refer(self, resource, summary, where, field):
        """Check a nested summary against its record, or create the record from it."""
        if len(summary) == 1:  # a bare id: the record must exist somewhere
            self.scratch.refer(resource, summary["id"], where, field)
            return
        known = self.scratch.find(resource, summary["id"])
        if known is None:
            self.scratch.add(resource, summary["id"], where, summary, from_summary=True)
            return
        origin, record = known
        for name, value in summary.items():
            if record.get(name, value) != value:
                raise CatalogueError(
                    f"{where}: {field}.{name}: {_json(value)} contradicts {origin}, "
                    f"which has {_json(record[name])} for {resource} id {summary['id']}"
                )

    def _write_summarised(self, name, record):
        if name == "releasers":
            row = {
                "id": record["id"],
                "name": record["name"],
                "is_group": record["is_group"],
                "country_code": record.get("country_code"),
                "created_at": _timestamp(record.get("created_at")),
                "updated_at": _timestamp(record.get("updated_at")),
            }
        elif name == "platforms":
            row = {"id": record["id"], "name": record["name"]}
        else:
            row = {"id": record["id"], "name": record["name"], "supertype": record["supertype"]}
        row["name_key"] = name_key(record["name"])
        self.builder.queue(tables.RECORD_TABLES[name], row)

    # What can only be checked once every file is read.

    def _resolve(self):
        singular = {
            "releasers": "releaser",
            "productions": "production",
            "parties": "party",
            "platforms": "platform",
            "production_types": "production type",
        }
        self.builder.flush()
        missing = self.scratch.query(
            "SELECT resource, id, place, field FROM scratch.load_references AS reference "
            "WHERE NOT EXISTS (SELECT 1 FROM scratch.load_records AS record "
            "WHERE record.resource = reference.resource AND record.id = reference.id) "
            "ORDER BY seq LIMIT 1"
        ).fetchone()
        if missing is not None:
            resource, record_id, where, field = missing
            raise CatalogueError(
                f"{where}: {field}: no {singular[LOAD_ORDER[resource]]} with id {record_id}"
            )
        self._resolve_nicks()
        self._resolve_memberships()
        for pairs, table in (
            (self.releases, tables.party_releases),
            (self.invitations, tables.party_invitations),
        ):
            for party, production, _, party_position, production_position in pairs.resolve(
                (
                    "releases" if pairs is self.releases else "invitations",
                    "release_parties" if pairs is self.releases else "invitation_parties",
                ),
                self._release_order,
            ):
                self.builder.queue(
                    table,
                    {
                        "party_id": party,
                        "production_id": production,
                        "party_position": party_position,
                        "production_position": production_position,
                    },
                )
        self._resolve_placings()
        self._resolve_series()

    def _release_order(self, side, owner, keys):
        if side == 0:  # a party's releases: by production title, as the upstream orders them
            titles = self._column(tables.productions.c.sortable_title, [key[1] for key in keys])
            return sorted(keys, key=lambda key: (titles[key[1]], key[1]))
        names = self._column(tables.parties.c.name, [key[0] for key in keys])
        return sorted(keys, key=lambda key: (names[key[0]], key[0]))

    def _column(self, column, ids):
        """{id: value of ``column``} of the rows ``ids`` of its table, as written."""
        return dict(
            self.scratch.query(
                f"SELECT id, {column.name} FROM main.{column.table.name} "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (orjson.dumps(ids),),
            )
        )

    def _resolve_nicks(self):
        """Check the nicks that productions give against their releasers' (or against
        each other, for releasers whose record gives none), and derive the latter's."""
        self.builder.flush()
        scratch = self.scratch
        scratch.query(
            "CREATE INDEX scratch.load_nicks_by_name ON load_nicks (releaser_id, name, seq)"
        )
        # The first use of each nick of a releaser whose record gives no nicks.
        first_uses = (
            "SELECT use.* FROM scratch.load_nicks AS use "
            "JOIN scratch.load_records AS releaser ON releaser.resource = ? "
            "AND releaser.id = use.releaser_id AND NOT releaser.given_nicks "
            "WHERE NOT EXISTS (SELECT 1 FROM scratch.load_nicks AS earlier "
            "WHERE earlier.releaser_id = use.releaser_id AND earlier.name = use.name "
            "AND earlier.seq < use.seq)"
        )
        releasers = _RESOURCE["releasers"]
        contradiction = scratch.query(
            "SELECT use.place, use.field, use.abbreviation, first.place, first.field, "
            f"first.abbreviation, use.releaser_id, use.name FROM ({first_uses}) AS first "
            "JOIN scratch.load_nicks AS use ON use.releaser_id = first.releaser_id "
            "AND use.name = first.name AND use.abbreviation != first.abbreviation "
            "ORDER BY use.seq LIMIT 1",
            (releasers,),
        ).fetchone()
        if contradiction is not None:
            where, field, abbreviation, first_where, first_field = contradiction[:5]
            first_abbreviation, releaser_id, name = contradiction[5:]
            raise CatalogueError(
                f"{where}: {field}.abbreviation: {_json(abbreviation)} contradicts "
                f"{first_where} ({first_field}), which gives nick {_json(name)} of releaser "
                f"{releaser_id} the abbreviation {_json(first_abbreviation)}"
            )
        unknown = scratch.query(
            "SELECT use.place, use.field, use.name, use.abbreviation, use.releaser_id "
            "FROM scratch.load_nicks AS use "
            "JOIN scratch.load_records AS releaser ON releaser.resource = ? "
            "AND releaser.id = use.releaser_id AND releaser.given_nicks "
            "WHERE NOT EXISTS (SELECT 1 FROM main.releaser_nicks AS nick "
            "WHERE nick.releaser_id = use.releaser_id AND nick.name = use.name "
            "AND nick.abbreviation = use.abbreviation) "
            "ORDER BY use.seq LIMIT 1",
            (releasers,),
        ).fetchone()
        if unknown is not None:
            where, field, name, abbreviation, releaser_id = unknown
            raise CatalogueError(
                f"{where}: {field}: nick {_json(name)} ({_json(abbreviation)}) is not "
                f"a nick of releaser {releaser_id}"
            )
        # The others' nicks: those used, and the releaser's name (unabbreviated) if no
        # production uses it, by name.
        scratch.query(
            "INSERT INTO main.releaser_nicks "
            "(releaser_id, position, name, abbreviation, variants) "
            "SELECT releaser_id, "
            "row_number() OVER (PARTITION BY releaser_id ORDER BY name) - 1, "
            "name, abbreviation, '[]' FROM ("
            f"SELECT releaser_id, name, abbreviation FROM ({first_uses}) "
            "UNION ALL SELECT id, name, '' FROM scratch.load_records AS releaser "
            "WHERE resource = ? AND NOT given_nicks AND NOT EXISTS ("
            "SELECT 1 FROM scratch.load_nicks AS use "
            "WHERE use.releaser_id = releaser.id AND use.name = releaser.name))",
            (releasers, releasers),
        )

    def _resolve_memberships(self):
        for member, group, values, member_position, group_position in self.memberships.resolve(
            ("member_of", "members"),
            # Not given: by the other releaser's id (the upstream fixes no order).
            lambda side, owner, keys: sorted(keys, key=lambda key: key[1 - side]),
        ):
            self.builder.queue(
                tables.memberships,
                {
                    "member_id": member,
                    "group_id": group,
                    "is_current": values["is_current"],
                    "member_position": member_position,
                    "group_position": group_position,
                },
            )

    def _resolve_placings(self):
        def derive_order(side, owner, pairs):
            if side == 0:  # a competition only its productions list: by position
                return sorted(
                    pairs,
                    key=lambda pair: (
                        pair[2]["position"] is None,
                        pair[2]["position"] or 0,
                        pair[1],
                    ),
                )
            return sorted(pairs)  # by competition id (the upstream fixes no order)

        for (
            competition,
            production,
            values,
            result_position,
            production_position,
        ) in self.results.resolve(("competitions.results", "competition_placings"), derive_order):
            self.builder.queue(
                tables.placings,
                {
                    "competition_id": competition,
                    "production_id": production,
                    "result_position": result_position,
                    "production_position": production_position,
                    **values,
                },
            )

    def _resolve_series(self):
        """Check the parties that series list against the series that parties give, and
        put each party in its series, in the series' order, else by name."""
        parties = _RESOURCE["parties"]
        wrong = self.scratch.query(
            "SELECT listed.place, listed.position, listed.party_id, party.place, given.series_id, "
            "(SELECT place || ' (parties.' || position || ')' "
            "FROM scratch.load_series_parties AS first "
            "WHERE first.party_id = listed.party_id AND first.seq < listed.seq ORDER BY seq) "
            "FROM scratch.load_series_parties AS listed "
            "LEFT JOIN scratch.load_records AS party ON party.resource = ? "
            "AND party.id = listed.party_id "
            "LEFT JOIN scratch.load_party_series AS given ON given.party_id = listed.party_id "
            "WHERE party.id IS NULL OR given.series_id != listed.series_id OR EXISTS (SELECT 1 "
            "FROM scratch.load_series_parties AS first WHERE first.party_id = listed.party_id "
            "AND first.seq < listed.seq) ORDER BY listed.seq LIMIT 1",
            (parties,),
        ).fetchone()
        if wrong is not None:
            where, index, party, party_where, given, first = wrong
            if party_where is None:
                raise CatalogueError(f"{where}: parties.{index}: no party with id {party}")
            if first is not None:
                raise CatalogueError(
                    f"{where}: parties.{index}: party {party} is listed already, by {first}"
                )
            raise CatalogueError(
                f"{where}: parties.{index}: party {party} belongs to party series {given} "
                f"({party_where})"
            )
        unlisted = self.scratch.query(
            "SELECT given.place, given.series_id, series.place, given.party_id "
            "FROM scratch.load_party_series AS given "
            "JOIN scratch.load_series_lists AS series ON series.series_id = given.series_id "
            "WHERE NOT EXISTS (SELECT 1 FROM scratch.load_series_parties AS listed "
            "WHERE listed.party_id = given.party_id) ORDER BY given.seq LIMIT 1"
        ).fetchone()
        if unlisted is not None:
            where, series, series_where, party = unlisted
            raise CatalogueError(
                f"{where}: party_series: party series {series} ({series_where}) does not "
                f"list party {party}"
            )
        self.builder.flush()
        self.scratch.query(
            "UPDATE main.parties SET party_series_id = listed.series_id, "
            "series_position = listed.position FROM scratch.load_series_parties AS listed "
            "WHERE listed.party_id = parties.id"
        )
        # A series whose record lists no parties: its parties by name, as the upstream
        # orders them.
        self.scratch.query(
            "UPDATE main.parties SET party_series_id = ranked.series_id, "
            "series_position = ranked.position FROM (SELECT given.party_id, given.series_id, "
            "row_number() OVER (PARTITION BY given.series_id ORDER BY party.name, party.id) - 1 "
            "AS position FROM scratch.load_party_series AS given "
            "JOIN main.parties AS party ON party.id = given.party_id) AS ranked "
            "WHERE ranked.party_id = parties.id AND NOT EXISTS (SELECT 1 FROM "
            "scratch.load_series_lists AS series WHERE series.series_id = ranked.series_id)"
        )


def _timestamp(value):
    from ..shared import timestamp_key

    return None if value is None else timestamp_key(value)
