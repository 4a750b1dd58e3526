"""Loading a catalogue folder: validate every record, build a new database file beside
the served one, and rename it over the served one only when all of it is good.

A failed load raises CatalogueError(``file:line: field: what is wrong``) and leaves
the served file untouched; a reader sees the old catalogue or the new one, never a mix.
Relations that the API shows from both sides may be given on either side or both; both
sides must agree, and a side not given is derived from the other (the upstream's order
where it has one, else the order in which the files gave the relation).
"""

import json
import os
import re
import stat
from pathlib import Path

import orjson
from marshmallow import ValidationError

from .. import tables
from ..resources import BY_NAME, LOAD_ORDER
from ..shared import date_key, name_key, sortable_title
from . import install
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


def load_catalogue(source, database, progress=None, *, wait=False, allow_empty=False):
    """Load the catalogue folder ``source``, or the upstream's database export (a
    ``.sql`` or ``.sql.gz`` file), into the database file ``database``.

    Returns (the number of records of each resource, the same of the catalogue it
    replaced). See ``install`` for the lock, the checks and the previous file.
    """
    progress = progress or Progress()
    if Path(source).is_file():
        fill = lambda builder: _import(source, builder, progress)  # noqa: E731
    else:
        paths = catalogue_files(Path(source))
        fill = lambda builder: _Loader(builder, paths, progress).run()  # noqa: E731
    target = Path(database)
    with install.building(target, wait=wait) as building:
        builder = Builder(building)
        try:
            counts, features = fill(builder)
            builder.finish(counts, features, progress)
        finally:
            builder.close()
        before = install.install(building, target, counts, allow_empty=allow_empty)
    return counts, before


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
    each side gave, in order, checked for agreement at the end."""

    def __init__(self, left, right):
        self.names = (left, right)
        self.given = ({}, {})  # per side: owner id -> (where, [(other id, values)])

    def give(self, side, owner, where, items):
        self.given[side][owner] = (where, items)

    def resolve(self, field_names, derive_order):
        """[(left id, right id, values, left position, right position)], raising
        CatalogueError where the sides disagree. ``derive_order(side, owner, others)``
        orders a side that was not given."""
        pairs = {}  # (left, right) -> [values, left position, right position, where]
        for side in (0, 1):
            for owner, (where, items) in self.given[side].items():
                for position, (other, values) in enumerate(items):
                    key = (owner, other) if side == 0 else (other, owner)
                    entry = pairs.get(key)
                    if entry is None:
                        entry = pairs[key] = [values, None, None, where]
                    elif entry[0] != values:
                        raise CatalogueError(
                            f"{where}: {field_names[side]}: {_json(values)} for {key} "
                            f"contradicts {entry[3]}, which has {_json(entry[0])}"
                        )
                    entry[1 + side] = position
        for key, (values, left_position, right_position, where) in pairs.items():
            for side, position in ((0, left_position), (1, right_position)):
                owner = key[side]
                if position is None and owner in self.given[side]:
                    other_where = self.given[side][owner][0]
                    raise CatalogueError(
                        f"{where}: {field_names[1 - side]}: gives {self.names[side]} {owner} "
                        f"and {self.names[1 - side]} {key[1 - side]}, but {other_where} does "
                        f"not list it in {field_names[side]}"
                    )
        for side in (0, 1):
            by_owner = {}
            for key, entry in pairs.items():
                if entry[1 + side] is None:
                    by_owner.setdefault(key[side], []).append(key)
            for owner, keys in by_owner.items():
                for position, key in enumerate(derive_order(side, owner, keys)):
                    pairs[key][1 + side] = position
        return [(key[0], key[1], entry[0], entry[1], entry[2]) for key, entry in pairs.items()]


class _Loader:
    """Reads the files in load order, checks what refers to what, and hands rows to the
    builder."""

    def __init__(self, builder, paths, progress):
        self.builder = builder
        self.paths = paths
        self.progress = progress
        # id -> (record, where it was first seen), for records that summaries refer to
        self.known = {name: {} for name in SUMMARISED}
        self.ids = {name: {} for name in LOAD_ORDER}  # id -> where, of records read
        self.features = set()
        self.memberships = _Pairs("member", "group")
        self.releases = _Pairs("party", "production")
        self.invitations = _Pairs("party", "production")
        self.series_parties = {}  # series id -> (where, [party ids])
        self.party_series = {}  # party id -> series id, as the parties gave it
        self.competitions = {}  # id -> (party id, name, where)
        self.results = {}  # competition id -> (where, [(production id, values)])
        self.placings = {}  # production id -> (where, [(competition id, values)])
        self.references = []  # (resource, id, where, field): checked at the end
        self.given_nicks = set()  # releasers whose nicks their record gives
        self.used_nicks = []  # (releaser id, name, abbreviation, where, field)
        self.party_names = {}
        self.production_keys = {}  # id -> sortable title
        self.releaser_is_group = {}

    def run(self):
        counts = {}
        for name in LOAD_ORDER:
            path = self.paths.get(name)
            if path is None:
                continue
            count = 0
            for number, record in read_records(path, BY_NAME[name].record_schema, self.progress):
                where = f"{path.name}:{number}"
                first = self.ids[name].setdefault(record["id"], where)
                if first != where:
                    raise CatalogueError(
                        f"{where}: id: duplicate id {record['id']} "
                        f"(first on line {first.rpartition(':')[2]})"
                    )
                self._acceptor(name)(record, where)
                count += 1
            self.progress.file_finished(path.name, count)
            counts[name] = count
        for name in SUMMARISED:
            for record, where in self.known[name].values():
                self._write_summarised(name, record)
            counts[name] = len(self.known[name])
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
        self.known["platforms"][record["id"]] = (record, where)

    def _accept_production_types(self, record, where):
        self.known["production_types"][record["id"]] = (record, where)

    def _accept_releasers(self, record, where):
        self.known["releasers"][record["id"]] = (record, where)
        releaser_id = record["id"]
        for column in ("country_code", "created_at", "updated_at"):
            if record[column] is not None:
                self.features.add(f"releasers_{column}")
        if record["nicks"] is not None:
            self.given_nicks.add(releaser_id)
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
            self.references.append((resource, other, where, f"{field}.{index}.{key}"))
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
            self.series_parties[record["id"]] = (
                where,
                [party["id"] for party in record["parties"]],
            )

    def _accept_parties(self, record, where):
        party_id = record["id"]
        series = record["party_series"]
        if series is not None:
            if series["id"] not in self.ids["party_series"]:
                raise CatalogueError(
                    f"{where}: party_series: no party series with id {series['id']}"
                )
            self.party_series[party_id] = series["id"]
        self.party_names[party_id] = record["name"]
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
                    self.references.append(
                        ("productions", production, where, f"{field}.results.{index}.production")
                    )
                    values = {name: result[name] for name in ("position", "ranking", "score")}
                    results.append((production, values))
                self.results[competition["id"]] = (where, results)
        self._links(tables.party_links, "party_id", party_id, record["external_links"])

    def _refer_all_ids(self, resource, items, where, field):
        result = []
        for index, item in enumerate(items):
            self.references.append((resource, item["id"], where, f"{field}.{index}"))
            result.append((item["id"], None))
        return result

    def _competition(self, competition_id, party_id, name, where, field):
        known = self.competitions.get(competition_id)
        if known is None:
            self.competitions[competition_id] = (party_id, name, where)
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
        self.production_keys[production_id] = title_key
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
                if party not in self.ids["parties"]:
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
            self.placings[production_id] = (where, placings)

    def _nick(self, nick, where, field):
        self._refer("releasers", nick["releaser"], where, f"{field}.releaser")
        self.used_nicks.append(
            (nick["releaser"]["id"], nick["name"], nick["abbreviation"], where, field)
        )

    def _refer(self, resource, summary, where, field):
        """Check a nested summary against its record, or create the record from it."""
        known = self.known[resource].get(summary["id"])
        if known is None:
            if len(summary) == 1:  # a bare id: the record must exist somewhere
                self.references.append((resource, summary["id"], where, field))
                return
            self.known[resource][summary["id"]] = (summary, where)
            return
        record, origin = known
        for name, value in summary.items():
            if record.get(name, value) != value:
                raise CatalogueError(
                    f"{where}: {field}.{name}: {_json(value)} contradicts {origin}, "
                    f"which has {_json(record[name])} for {resource} id {summary['id']}"
                )

    def _write_summarised(self, name, record):
        if name == "releasers":
            self.releaser_is_group[record["id"]] = record["is_group"]
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

    def _exists(self, resource, record_id):
        if resource in SUMMARISED:
            return record_id in self.known[resource]
        return record_id in self.ids[resource]

    def _resolve(self):
        singular = {
            "releasers": "releaser",
            "productions": "production",
            "parties": "party",
            "platforms": "platform",
            "production_types": "production type",
        }
        for resource, record_id, where, field in self.references:
            if not self._exists(resource, record_id):
                raise CatalogueError(
                    f"{where}: {field}: no {singular[resource]} with id {record_id}"
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
            return sorted(keys, key=lambda key: (self.production_keys[key[1]], key[1]))
        return sorted(keys, key=lambda key: (self.party_names[key[0]], key[0]))

    def _resolve_nicks(self):
        derived = {}
        given = {}
        for releaser_id, name, abbreviation, where, field in self.used_nicks:
            if releaser_id in self.given_nicks:
                given.setdefault(releaser_id, []).append((name, abbreviation, where, field))
            else:
                first = derived.setdefault(releaser_id, {}).setdefault(
                    name, (abbreviation, where, field)
                )
                if first[0] != abbreviation:
                    raise CatalogueError(
                        f"{where}: {field}.abbreviation: {_json(abbreviation)} contradicts "
                        f"{first[1]} ({first[2]}), which gives nick {_json(name)} of releaser "
                        f"{releaser_id} the abbreviation {_json(first[0])}"
                    )
        self.builder.flush(tables.releaser_nicks)
        if given:
            known = {}
            for releaser_id, name, abbreviation in self.builder.connection.execute(
                tables.releaser_nicks.select().with_only_columns(
                    tables.releaser_nicks.c.releaser_id,
                    tables.releaser_nicks.c.name,
                    tables.releaser_nicks.c.abbreviation,
                )
            ):
                known[(releaser_id, name)] = abbreviation
            for releaser_id, uses in given.items():
                for name, abbreviation, where, field in uses:
                    if known.get((releaser_id, name)) != abbreviation:
                        raise CatalogueError(
                            f"{where}: {field}: nick {_json(name)} ({_json(abbreviation)}) is not "
                            f"a nick of releaser {releaser_id}"
                        )
        for releaser_id, (record, _) in self.known["releasers"].items():
            if releaser_id in self.given_nicks:
                continue
            nicks = {name: used[0] for name, used in derived.get(releaser_id, {}).items()}
            nicks.setdefault(record["name"], "")
            for position, name in enumerate(sorted(nicks)):
                self.builder.queue(
                    tables.releaser_nicks,
                    {
                        "releaser_id": releaser_id,
                        "position": position,
                        "name": name,
                        "abbreviation": nicks[name],
                        "variants": [],
                    },
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
        rows = {}  # (competition, production) -> [values, result position, production position]
        for competition, (where, results) in self.results.items():
            for position, (production, values) in enumerate(results):
                rows[(competition, production)] = [values, position, None, where]
        for production, (where, placings) in self.placings.items():
            for position, (competition, values) in enumerate(placings):
                entry = rows.get((competition, production))
                if entry is None:
                    if competition in self.results:
                        raise CatalogueError(
                            f"{where}: competition_placings.{position}: competition {competition} "
                            f"does not list production {production} in its results "
                            f"({self.results[competition][0]})"
                        )
                    entry = rows[(competition, production)] = [values, None, None, where]
                elif entry[0] != values:
                    raise CatalogueError(
                        f"{where}: competition_placings.{position}: {_json(values)} contradicts "
                        f"{entry[3]}, which has {_json(entry[0])}"
                    )
                entry[2] = position
        for (competition, production), entry in rows.items():
            if entry[2] is None and production in self.placings:
                raise CatalogueError(
                    f"{entry[3]}: competitions: production {production} is placed in competition "
                    f"{competition}, but {self.placings[production][0]} does not list it in "
                    "competition_placings"
                )
        by_competition, by_production = {}, {}
        for key, entry in rows.items():
            by_competition.setdefault(key[0], []).append(key)
            by_production.setdefault(key[1], []).append(key)
        for keys in by_competition.values():
            if rows[keys[0]][1] is None:  # only the productions gave them: by position
                ordered = sorted(
                    keys,
                    key=lambda key: (
                        rows[key][0]["position"] is None,
                        rows[key][0]["position"] or 0,
                        key[1],
                    ),
                )
                for position, key in enumerate(ordered):
                    rows[key][1] = position
        for keys in by_production.values():
            # Not given: by competition id (the upstream fixes no order).
            for position, key in enumerate(sorted(keys)):
                if rows[key][2] is None:
                    rows[key][2] = position
        best = {}
        for (competition, production), (
            values,
            result_position,
            production_position,
            _,
        ) in rows.items():
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
            if values["position"] is not None:
                best[production] = min(best.get(production, values["position"]), values["position"])
        self._pending_best = best

    def _resolve_series(self):
        for series_id, (where, parties) in self.series_parties.items():
            for index, party in enumerate(parties):
                if party not in self.ids["parties"]:
                    raise CatalogueError(f"{where}: parties.{index}: no party with id {party}")
                given = self.party_series.get(party)
                if given is not None and given != series_id:
                    raise CatalogueError(
                        f"{where}: parties.{index}: party {party} belongs to party series {given} "
                        f"({self.ids['parties'][party]})"
                    )
        series_of = dict(self.party_series)
        positions = {}
        for series_id, (_, parties) in self.series_parties.items():
            for position, party in enumerate(parties):
                series_of[party] = series_id
                positions[party] = position
        by_series = {}
        for party, series_id in series_of.items():
            if party not in positions:
                if series_id in self.series_parties:
                    raise CatalogueError(
                        f"{self.ids['parties'][party]}: party_series: party series {series_id} "
                        f"({self.series_parties[series_id][0]}) does not list party {party}"
                    )
                by_series.setdefault(series_id, []).append(party)
        for parties in by_series.values():  # by name, as the upstream orders them
            for position, party in enumerate(
                sorted(parties, key=lambda p: (self.party_names[p], p))
            ):
                positions[party] = position
        self.builder.flush()
        connection = self.builder.connection
        statement = (
            tables.parties.update()
            .where(tables.parties.c.id == _param("party"))
            .values(party_series_id=_param("series"), series_position=_param("position"))
        )
        updates = [
            {"party": party, "series": series_of[party], "position": positions[party]}
            for party in series_of
        ]
        if updates:
            connection.execute(statement, updates)
        best_statement = (
            tables.productions.update()
            .where(tables.productions.c.id == _param("production"))
            .values(best_placing=_param("best"))
        )
        updates = [{"production": key, "best": value} for key, value in self._pending_best.items()]
        if updates:
            connection.execute(best_statement, updates)


def _param(name):
    from sqlalchemy import bindparam

    return bindparam(name)


def _timestamp(value):
    from ..shared import timestamp_key

    return None if value is None else timestamp_key(value)
