"""Row writing: the records of a catalogue folder's files, read in load order, written
as rows of the new catalogue file, with what they refer to handed to the scratch file
(``scratch``) to be checked once every file is read. What is written, and which
relations each record gives, is derived from the resources' load declarations
(``loader/resources/``, ``storage.py``)."""

import orjson

from .files import read_records
from .reporting import CatalogueError
from .resources import LOAD_ORDER, LOADING, RELATIONS, storage
from .scratch import Pairs, Scratch, json_text

# Records that nested summaries may refer to, and may create when their file lacks them.
CREATED_BY_SUMMARIES = [name for name in LOAD_ORDER if LOADING[name].created_by_summaries]


class Loader:
    """Reads the files in load order, checks what refers to what, and hands rows to the
    builder. A relation side's ``collect`` hook (``storage.RelationSide``) calls
    ``queue``, ``refer``, ``refer_id``, ``find``, ``scratch`` and raises ``error``."""

    error = CatalogueError
    json_text = staticmethod(json_text)

    def __init__(self, builder, paths, report):
        self.builder = builder
        self.paths = paths
        self.report = report
        # Every record's id and place, the references and the nicks: checked at the end.
        self.scratch = Scratch(builder)
        # Each relation's pairs, and what collects them from each resource's records.
        self.pairs = []
        self.collectors = {name: [] for name in LOAD_ORDER}
        for relation in RELATIONS:
            if isinstance(relation, storage.Grouping):
                number = self.scratch.new_relation()
                self.pairs.append((relation, number))
                self.collectors[relation.resource].append(self._group_collector(relation, number))
                self.collectors[relation.group].append(self._list_collector(relation, number))
                continue
            pairs = Pairs(self.scratch, *relation.names)
            self.pairs.append((relation, pairs))
            for number, side in enumerate(relation.sides):
                add_pairs = _side_of(pairs, number)
                other = relation.sides[1 - number].resource
                self.collectors[side.resource].append(
                    _hook(self, side.collect, add_pairs)
                    if side.collect is not None
                    else self._side_collector(side, other, add_pairs)
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
            loading = LOADING[name]
            keep = loading.created_by_summaries
            for number, record in read_records(path, loading.record_schema, self.report):
                where = f"{path.name}:{number}"
                first = self.scratch.add(
                    name,
                    record["id"],
                    where,
                    record if keep else None,
                    given_nicks=name == "releasers" and record["nicks"] is not None,
                )
                if first is not None:
                    raise CatalogueError(
                        f"{where}: id: duplicate id {record['id']} "
                        f"(first on line {first.rpartition(':')[2]})"
                    )
                self._accept(loading, record, where)
                count += 1
            counts[name] = count
        for name in CREATED_BY_SUMMARIES:
            loading = LOADING[name]
            for record in self.scratch.from_summaries(name):
                self.builder.queue(loading.table, storage.row(loading, record))
            counts[name] = self.scratch.count(name)
        self._resolve()
        return counts

    # Records of each file.

    def _accept(self, loading, record, where):
        """Write ``record``'s row and its nested lists, as its resource declares them,
        then collect its sides of the relations that the declarations say it gives."""
        self.builder.queue(loading.table, storage.row(loading, record))
        for nested in loading.nested_lists:
            self._write_nested(nested, record, where)
        for collect in self.collectors[loading.name]:
            collect(record, where)

    def _write_nested(self, nested, record, where):
        position = len(record[nested.after] or ()) if nested.after is not None else 0
        for index, item in enumerate(record[nested.field] or ()):
            field = f"{nested.field}.{index}"
            if nested.reference is not None:
                column, resource = nested.reference
                self.refer(resource, item, where, field)
                row = {column: item["id"]}
            elif nested.nick is not None:
                nick = item[nested.nick] if nested.nick else item
                self._nick(nick, where, f"{field}.{nested.nick}" if nested.nick else field)
                row = {
                    name: value
                    for name, value in item.items()
                    if name not in (nested.nick, "releaser")
                }
                row.update(
                    name=nick["name"],
                    abbreviation=nick["abbreviation"],
                    releaser_id=nick["releaser"]["id"],
                )
            else:
                row = dict(item)
                for key, resource in nested.references.items():
                    self.refer(resource, item[key], where, f"{field}.{key}")
                    row[f"{key}_id"] = row.pop(key)["id"]
            self.builder.queue(
                nested.table,
                {nested.owner: record["id"], "position": position, **row, **nested.constant},
            )
            position += 1

    def _side_collector(self, side, other, add_pairs):
        """What collects ``side`` of a relation from the lists of a record (references
        to records of ``other``)."""
        fields = side.fields

        def collect_side(record, where):
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
            add_pairs(record["id"], where, items)

        return collect_side

    def _group_collector(self, grouped, number):
        """What remembers the group a record names (which must be read already)."""
        title = LOADING[grouped.group].resource.title.lower()

        def collect_group(record, where):
            group = record[grouped.field]
            if group is not None:
                if self.scratch.find(grouped.group, group["id"]) is None:
                    raise CatalogueError(
                        f"{where}: {grouped.field}: no {title} with id {group['id']}"
                    )
                self.scratch.group_member(number, record["id"], group["id"], where)

        return collect_group

    def _list_collector(self, grouped, number):
        """What remembers the records a group lists."""

        def collect_list(record, where):
            if record[grouped.listed] is not None:
                self.scratch.group_lists(
                    number, record["id"], where, [item["id"] for item in record[grouped.listed]]
                )

        return collect_list

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
            title = LOADING[LOAD_ORDER[resource]].resource.title.lower()
            raise CatalogueError(f"{where}: {field}: no {title} with id {record_id}")
        self.scratch.resolve_nicks()
        for relation, pairs in self.pairs:
            if isinstance(relation, storage.Relation):
                self._resolve_pairs(relation, pairs)
        # Groups last: their records' rows are updated in place.
        for relation, number in self.pairs:
            if isinstance(relation, storage.Grouping):
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
    """What adds side ``number`` of ``pairs``: add_pairs(owner, where, items)."""
    return lambda owner, where, items: pairs.add(number, owner, where, items)


def _hook(loader, hook, add_pairs):
    """A declared ``collect`` hook of a side, bound to the loader and the side."""
    return lambda record, where: hook(loader, record, where, add_pairs)
