"""Row writing: the records of a catalogue folder's files, read in load order, written
as rows of the new catalogue file, with what they refer to handed to the scratch file
(``scratch``) to be checked once every file is read. What is written, and which
relations each record gives, is derived from the resources' declarations
(``resources/storage.py``)."""

import orjson

from ..resources import BY_NAME, LOAD_ORDER, RELATIONS, storage
from .files import read_records
from .reporting import CatalogueError
from .scratch import Pairs, Scratch, json_text

# Records that nested summaries may refer to, and may create when their file lacks them.
SUMMARISED = [name for name in LOAD_ORDER if BY_NAME[name].summarised]


class Loader:
    """Reads the files in load order, checks what refers to what, and hands rows to the
    builder. A relation's ``give`` hook (``storage.Side``) calls ``queue``, ``refer``,
    ``refer_id``, ``find``, ``scratch`` and raises ``error``."""

    error = CatalogueError
    json_text = staticmethod(json_text)

    def __init__(self, builder, paths, progress):
        self.builder = builder
        self.paths = paths
        self.progress = progress
        # Every record's id and place, the references and the nicks: checked at the end.
        self.scratch = Scratch(builder)
        # Each relation's pairs, and what each resource's records give of them.
        self.pairs = []
        self.gives = {name: [] for name in LOAD_ORDER}
        for relation in RELATIONS:
            if isinstance(relation, storage.Grouped):
                number = self.scratch.new_relation()
                self.pairs.append((relation, number))
                self.gives[relation.resource].append(self._group_giver(relation, number))
                self.gives[relation.group].append(self._list_giver(relation, number))
                continue
            pairs = Pairs(self.scratch, *relation.names)
            self.pairs.append((relation, pairs))
            for number, side in enumerate(relation.sides):
                give = _side_of(pairs, number)
                other = relation.sides[1 - number].resource
                self.gives[side.resource].append(
                    _hook(self, side.give, give)
                    if side.give is not None
                    else self._side_giver(side, other, give)
                )

    def queue(self, table, row):
        self.builder.queue(table, row)

    def find(self, resource, record_id):
        return self.scratch.find(resource, record_id)

    def refer_id(self, resource, record_id, where, field):
        """A bare reference, to check once every file is read."""
        self.scratch.refer(resource, record_id, where, field)

    def run(self):
        counts = {}
        for name in LOAD_ORDER:
            path = self.paths.get(name)
            if path is None:
                continue
            count = 0
            summarised = BY_NAME[name].summarised
            for number, record in read_records(path, BY_NAME[name].record_schema, self.progress):
                where = f"{path.name}:{number}"
                first = self.scratch.add(
                    name,
                    record["id"],
                    where,
                    record if summarised else None,
                    given_nicks=name == "releasers" and record["nicks"] is not None,
                )
                if first is not None:
                    raise CatalogueError(
                        f"{where}: id: duplicate id {record['id']} "
                        f"(first on line {first.rpartition(':')[2]})"
                    )
                self._accept(BY_NAME[name], record, where)
                count += 1
            self.progress.file_finished(path.name, count)
            counts[name] = count
        for name in SUMMARISED:
            resource = BY_NAME[name]
            for record in self.scratch.from_summaries(name):
                self.builder.queue(resource.table, storage.row(resource, record))
            counts[name] = self.scratch.count(name)
        self._resolve()
        return counts

    # Records of each file.

    def _accept(self, resource, record, where):
        """Write ``record``'s row and the lists it owns, as its resource declares them,
        then give its sides of the relations that the declarations say it gives."""
        self.builder.queue(resource.table, storage.row(resource, record))
        for owned in resource.owns:
            self._write_owned(owned, record, where)
        for give in self.gives[resource.name]:
            give(record, where)

    def _write_owned(self, owned, record, where):
        position = len(record[owned.after] or ()) if owned.after is not None else 0
        for index, item in enumerate(record[owned.field] or ()):
            field = f"{owned.field}.{index}"
            if owned.reference is not None:
                column, resource = owned.reference
                self.refer(resource, item, where, field)
                row = {column: item["id"]}
            elif owned.nick is not None:
                nick = item[owned.nick] if owned.nick else item
                self._nick(nick, where, f"{field}.{owned.nick}" if owned.nick else field)
                row = {
                    name: value
                    for name, value in item.items()
                    if name not in (owned.nick, "releaser")
                }
                row.update(
                    name=nick["name"],
                    abbreviation=nick["abbreviation"],
                    releaser_id=nick["releaser"]["id"],
                )
            else:
                row = dict(item)
                for key, resource in owned.references.items():
                    self.refer(resource, item[key], where, f"{field}.{key}")
                    row[f"{key}_id"] = row.pop(key)["id"]
            self.builder.queue(
                owned.table,
                {owned.owner: record["id"], "position": position, **row, **owned.constant},
            )
            position += 1

    def _side_giver(self, side, other, give):
        """What gives ``side`` of a relation from the lists of a record (references to
        records of ``other``)."""
        fields = side.fields

        def give_side(record, where):
            if all(record[field] is None for field, _ in fields):
                return
            items = []
            for field, key in fields:
                for index, item in enumerate(record[field] or ()):
                    if key is None:
                        self.scratch.refer(other, item["id"], where, f"{field}.{index}")
                        items.append((item["id"], None))
                        continue
                    other_id = item[key]["id"]
                    self.scratch.refer(other, other_id, where, f"{field}.{index}.{key}")
                    items.append(
                        (other_id, {name: value for name, value in item.items() if name != key})
                    )
            give(record["id"], where, items)

        return give_side

    def _group_giver(self, grouped, number):
        """What remembers the group a record names (which must be read already)."""
        title = BY_NAME[grouped.group].title.lower()

        def give_group(record, where):
            group = record[grouped.field]
            if group is not None:
                if self.scratch.find(grouped.group, group["id"]) is None:
                    raise CatalogueError(
                        f"{where}: {grouped.field}: no {title} with id {group['id']}"
                    )
                self.scratch.group_member(number, record["id"], group["id"], where)

        return give_group

    def _list_giver(self, grouped, number):
        """What remembers the records a group lists."""

        def give_list(record, where):
            if record[grouped.listed] is not None:
                self.scratch.group_lists(
                    number, record["id"], where, [item["id"] for item in record[grouped.listed]]
                )

        return give_list

    def _nick(self, nick, where, field):
        self.refer("releasers", nick["releaser"], where, f"{field}.releaser")
        self.scratch.nick(nick["releaser"]["id"], nick["name"], nick["abbreviation"], where, field)

    def refer(self, resource, summary, where, field):
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
                    f"{where}: {field}.{name}: {json_text(value)} contradicts {origin}, "
                    f"which has {json_text(record[name])} for {resource} id {summary['id']}"
                )

    # What can only be checked once every file is read.

    def _resolve(self):
        self.builder.flush()
        missing = self.scratch.query(
            "SELECT resource, id, place, field FROM scratch.load_references AS reference "
            "WHERE NOT EXISTS (SELECT 1 FROM scratch.load_records AS record "
            "WHERE record.resource = reference.resource AND record.id = reference.id) "
            "ORDER BY seq LIMIT 1"
        ).fetchone()
        if missing is not None:
            resource, record_id, where, field = missing
            title = BY_NAME[LOAD_ORDER[resource]].title.lower()
            raise CatalogueError(f"{where}: {field}: no {title} with id {record_id}")
        self.scratch.resolve_nicks()
        for relation, pairs in self.pairs:
            if isinstance(relation, storage.Both):
                self._resolve_pairs(relation, pairs)
        # Groups last: their records' rows are updated in place.
        for relation, number in self.pairs:
            if isinstance(relation, storage.Grouped):
                self.scratch.resolve_group(number, relation)

    def _resolve_pairs(self, relation, pairs):
        """Write each pair of ``relation``, both sides checked, positions derived where
        a side was not given."""
        left, right = relation.sides
        orders = [self._derive_order(number, side) for number, side in enumerate(relation.sides)]
        for left_id, right_id, values, left_position, right_position in pairs.resolve(
            (left.label, right.label), lambda side, owner, keys: orders[side](keys)
        ):
            row = {
                left.column: left_id,
                right.column: right_id,
                left.position: left_position,
                right.position: right_position,
            }
            if values is not None:
                row.update(values)
            self.builder.queue(relation.table, row)

    def _derive_order(self, number, side):
        """How the pairs ((left id, right id, values)) of ``side`` not given are ordered."""
        other = 1 - number
        if side.order_column is not None:
            column = side.order_column

            def by_column(keys):
                values = self._column(column, [key[other] for key in keys])
                return sorted(keys, key=lambda key: (values[key[other]], key[other]))

            return by_column
        order_key = side.order_key or (lambda key: key[other])
        return lambda keys: sorted(keys, key=order_key)

    def _column(self, column, ids):
        """{id: value of ``column``} of the rows ``ids`` of its table, as written."""
        return dict(
            self.scratch.query(
                f"SELECT id, {column.name} FROM main.{column.table.name} "
                "WHERE id IN (SELECT value FROM json_each(?))",
                (orjson.dumps(ids),),
            )
        )


def _side_of(pairs, number):
    """What gives side ``number`` of ``pairs``: give(owner, where, items)."""
    return lambda owner, where, items: pairs.give(number, owner, where, items)


def _hook(loader, hook, give):
    """A declared ``give`` hook of a side, bound to the loader and the side."""
    return lambda record, where: hook(loader, record, where, give)
