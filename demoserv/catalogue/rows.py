"""Row writing: the records of a catalogue folder's files, read in load order, written
as rows of the new catalogue file, with what they refer to handed to the scratch file
(``scratch``) to be checked once every file is read."""

import orjson

from .. import tables
from ..resources import BY_NAME, LOAD_ORDER, storage
from .files import read_records
from .reporting import CatalogueError
from .scratch import Pairs, Scratch, json_text

# The position of a competition that no party lists, only a placing: after any listed.
KNOWN_FROM_PLACINGS = 2**62
# Records that nested summaries may refer to, and may create when their file lacks them.
SUMMARISED = ("platforms", "production_types", "releasers")


class Loader:
    """Reads the files in load order, checks what refers to what, and hands rows to the
    builder."""

    def __init__(self, builder, paths, progress):
        self.builder = builder
        self.paths = paths
        self.progress = progress
        # Every record's id and place, the references and the nicks: checked at the end.
        self.scratch = Scratch(builder)
        self.memberships = Pairs(self.scratch, "member", "group")
        self.releases = Pairs(self.scratch, "party", "production")
        self.invitations = Pairs(self.scratch, "party", "production")
        # Competition results, from the parties' side and from the productions'.
        self.results = Pairs(self.scratch, "competition", "production")

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
        then hand the relations it gives from one side to the method for its resource."""
        self.builder.queue(resource.table, storage.row(resource, record))
        for owned in resource.owns:
            self._write_owned(owned, record["id"], record[owned.field], where)
        relations = getattr(self, f"_relations_{resource.name}", None)
        if relations is not None:
            relations(record, where)

    def _write_owned(self, owned, owner_id, items, where):
        for position, item in enumerate(items or ()):
            field = f"{owned.field}.{position}"
            if owned.reference is not None:
                column, resource = owned.reference
                self._refer(resource, item, where, field)
                row = {column: item["id"]}
            else:
                row = dict(item)
                for key, resource in owned.references.items():
                    self._refer(resource, item[key], where, f"{field}.{key}")
                    row[f"{key}_id"] = row.pop(key)["id"]
            self.builder.queue(owned.table, {owned.owner: owner_id, "position": position, **row})

    def _relations_releasers(self, record, where):
        releaser_id = record["id"]
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

    def _refer_all(self, resource, items, key, where, field):
        result = []
        for index, item in enumerate(items):
            other = item[key]["id"]
            self.scratch.refer(resource, other, where, f"{field}.{index}.{key}")
            result.append((other, {name: value for name, value in item.items() if name != key}))
        return result

    def _relations_party_series(self, record, where):
        if record["parties"] is not None:
            self.scratch.series_lists(record["id"], where, [p["id"] for p in record["parties"]])

    def _relations_parties(self, record, where):
        party_id = record["id"]
        series = record["party_series"]
        if series is not None:
            if self.scratch.find("party_series", series["id"]) is None:
                raise CatalogueError(
                    f"{where}: party_series: no party series with id {series['id']}"
                )
            self.scratch.party_series(party_id, series["id"], where)
        self._give_ids(
            0, record, where, "productions",
            (("releases", self.releases), ("invitations", self.invitations)),
        )  # fmt: skip
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

    def _give_ids(self, side, record, where, resource, relations):
        """Give ``record``'s side of each of ``relations`` ((field, Pairs)) whose field
        it gives: a list of references to ``resource``."""
        for field, pairs in relations:
            if record[field] is not None:
                items = self._refer_all_ids(resource, record[field], where, field)
                pairs.give(side, record["id"], where, items)

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
                f"{json_text(name)} contradicts {known[2]}, which gives party {known[0]} and name "
                f"{json_text(known[1])}"
            )
        return True

    def _relations_productions(self, record, where):
        production_id = record["id"]
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
        self._give_ids(
            1, record, where, "parties",
            (("release_parties", self.releases), ("invitation_parties", self.invitations)),
        )  # fmt: skip
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
        self.scratch.resolve_series()

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
