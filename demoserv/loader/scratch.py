"""Relations checked in the builder's scratch file: what every record read gave (ids,
places, references, nicks, the two sides of each relation shown from both sides) is
kept in scratch tables, not in memory, and checked there once every file is read.

Relations that the API shows from both sides may be given on either side or both; both
sides must agree, and a side not given is derived from the other (the upstream's order
where it has one, else the order in which the files gave the relation).
"""

import itertools
import sqlite3

import orjson

from .reporting import CatalogueError
from .resources import LOAD_ORDER, LOADING


def json_text(value):
    return orjson.dumps(value).decode()


class Pairs:
    """One relation shown from two sides (``left`` owns the pair in an export): what
    each side gave, in order, kept in the scratch file (``Scratch.add_pairs``) and checked
    there for agreement once every file is read."""

    def __init__(self, scratch, left, right):
        self.scratch = scratch
        self.names = (left, right)
        self.relation = scratch.new_relation()

    def add(self, side, owner, where, items):
        """``owner`` (a record on ``side``, 0 or 1, read at ``where``) gives the pairs
        ``items``: [(other id, values)], in its order."""
        self.scratch.add_pairs(self.relation, side, owner, where, items)

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
# The columns of a record that nested summaries may create, which a summary may give.
_SUMMARY_FIELDS = ("name", "is_group", "supertype")


class Scratch:
    """What the loader must remember of every record until the end of the load, kept in
    tables of the builder's scratch file, not in memory: the id and place (``file:line``)
    of each record read, and of each created from a nested summary with what that gave,
    and the references and nicks to check once every file is read. Memory holds at most
    a batch of rows to write and a bounded cache of records looked up."""

    BATCH = 5000  # rows of references or nicks per INSERT
    CACHED = 20_000  # records kept for lookups; past this, the kept ones are dropped

    def __init__(self, builder):
        self.builder = builder
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
            # Relations given from both sides (Pairs): who gave a side, and each pair
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
            # Groups (storage.Grouping): the records each group lists, and the group each
            # record gives.
            """CREATE TABLE scratch.load_group_lists (
                relation INTEGER NOT NULL, group_id INTEGER NOT NULL, place TEXT NOT NULL,
                PRIMARY KEY (relation, group_id)) WITHOUT ROWID""",
            """CREATE TABLE scratch.load_group_listed (
                seq INTEGER PRIMARY KEY, relation INTEGER NOT NULL, group_id INTEGER NOT NULL,
                position INTEGER NOT NULL, member_id INTEGER NOT NULL, place TEXT NOT NULL)""",
            "CREATE INDEX scratch.load_group_listed_by_member "
            "ON load_group_listed (relation, member_id, seq)",
            """CREATE TABLE scratch.load_group_given (
                seq INTEGER PRIMARY KEY, relation INTEGER NOT NULL, member_id INTEGER NOT NULL,
                group_id INTEGER NOT NULL, place TEXT NOT NULL, UNIQUE (relation, member_id))""",
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

    def group_lists(self, relation, group_id, place, member_ids):
        """Remember the records a group lists, in its order."""
        self.raw.execute(
            "INSERT INTO scratch.load_group_lists VALUES (?, ?, ?)", (relation, group_id, place)
        )
        self.raw.executemany(
            "INSERT INTO scratch.load_group_listed (relation, group_id, position, member_id, "
            "place) VALUES (?, ?, ?, ?, ?)",
            [
                (relation, group_id, position, member_id, place)
                for position, member_id in enumerate(member_ids)
            ],
        )

    def group_member(self, relation, member_id, group_id, place):
        """Remember the group a record gives."""
        self.raw.execute(
            "INSERT INTO scratch.load_group_given (relation, member_id, group_id, place) "
            "VALUES (?, ?, ?, ?)",
            (relation, member_id, group_id, place),
        )

    def new_relation(self):
        """A number for a new relation in the pair tables."""
        self.relations += 1
        return self.relations

    def add_pairs(self, relation, side, owner, place, items):
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

    def resolve_nicks(self):
        """Check the nicks that productions give against their releasers' (or against
        each other, for releasers whose record gives none), and derive the latter's."""
        self.builder.flush()
        scratch = self
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
                f"{where}: {field}.abbreviation: {json_text(abbreviation)} contradicts "
                f"{first_where} ({first_field}), which gives nick {json_text(name)} of releaser "
                f"{releaser_id} the abbreviation {json_text(first_abbreviation)}"
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
                f"{where}: {field}: nick {json_text(name)} ({json_text(abbreviation)}) is not "
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

    def resolve_group(self, relation, grouped):
        """Check the records that groups list against the groups that records give, and
        put each record in its group, in the group's order, else by name."""
        member, group = (
            LOADING[name].resource.title.lower() for name in (grouped.resource, grouped.group)
        )
        table = LOADING[grouped.resource].table.name
        wrong = self.query(
            "SELECT listed.place, listed.position, listed.member_id, record.place, "
            "given.group_id, (SELECT place || ' (' || :listed || '.' || position || ')' "
            "FROM scratch.load_group_listed AS first WHERE first.relation = :relation "
            "AND first.member_id = listed.member_id AND first.seq < listed.seq ORDER BY seq) "
            "FROM scratch.load_group_listed AS listed "
            "LEFT JOIN scratch.load_records AS record ON record.resource = :resource "
            "AND record.id = listed.member_id "
            "LEFT JOIN scratch.load_group_given AS given ON given.relation = :relation "
            "AND given.member_id = listed.member_id "
            "WHERE listed.relation = :relation AND (record.id IS NULL "
            "OR given.group_id != listed.group_id OR EXISTS (SELECT 1 "
            "FROM scratch.load_group_listed AS first WHERE first.relation = :relation "
            "AND first.member_id = listed.member_id AND first.seq < listed.seq)) "
            "ORDER BY listed.seq LIMIT 1",
            {
                "relation": relation,
                "resource": _RESOURCE[grouped.resource],
                "listed": grouped.listed,
            },
        ).fetchone()
        if wrong is not None:
            where, index, member_id, member_where, given, first = wrong
            field = f"{where}: {grouped.listed}.{index}"
            if member_where is None:
                raise CatalogueError(f"{field}: no {member} with id {member_id}")
            if first is not None:
                raise CatalogueError(f"{field}: {member} {member_id} is listed already, by {first}")
            raise CatalogueError(
                f"{field}: {member} {member_id} belongs to {group} {given} ({member_where})"
            )
        unlisted = self.query(
            "SELECT given.place, given.group_id, lists.place, given.member_id "
            "FROM scratch.load_group_given AS given "
            "JOIN scratch.load_group_lists AS lists ON lists.relation = given.relation "
            "AND lists.group_id = given.group_id "
            "WHERE given.relation = ? AND NOT EXISTS (SELECT 1 FROM scratch.load_group_listed "
            "AS listed WHERE listed.relation = given.relation "
            "AND listed.member_id = given.member_id) ORDER BY given.seq LIMIT 1",
            (relation,),
        ).fetchone()
        if unlisted is not None:
            where, group_id, group_where, member_id = unlisted
            raise CatalogueError(
                f"{where}: {grouped.field}: {group} {group_id} ({group_where}) does not "
                f"list {member} {member_id}"
            )
        self.builder.flush()
        column, position = grouped.column, grouped.position
        self.query(
            f"UPDATE main.{table} SET {column} = listed.group_id, {position} = listed.position "
            "FROM scratch.load_group_listed AS listed "
            f"WHERE listed.relation = ? AND listed.member_id = {table}.id",
            (relation,),
        )
        # A group whose record lists none: its records by name, as the upstream orders them.
        self.query(
            f"UPDATE main.{table} SET {column} = ranked.group_id, {position} = ranked.position "
            "FROM (SELECT given.member_id, given.group_id, row_number() OVER (PARTITION BY "
            "given.group_id ORDER BY record.name, record.id) - 1 AS position "
            f"FROM scratch.load_group_given AS given JOIN main.{table} AS record "
            "ON record.id = given.member_id WHERE given.relation = :relation) AS ranked "
            f"WHERE ranked.member_id = {table}.id AND NOT EXISTS (SELECT 1 FROM "
            "scratch.load_group_lists AS lists WHERE lists.relation = :relation "
            "AND lists.group_id = ranked.group_id)",
            {"relation": relation},
        )
