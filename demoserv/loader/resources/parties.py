"""How parties are loaded: their catalogue record, the relations they store (releases,
invitations, competitions and their results, the series they belong to), their part
of the upstream import, and their detail records' assembly."""

from marshmallow import fields

from ...resources.parties import resource
from ...store import tables
from .. import records
from . import storage
from .loading import Loading, owned_rows, side_rows


class PartyRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    tagline = records.text()
    start_date = records.partial_date()
    end_date = records.partial_date()
    location = records.text()
    is_online = records.StrictBoolean(required=True)
    country_code = records.country_code(required=True)
    latitude = records.coordinate(90)
    longitude = records.coordinate(180)
    website = records.text()
    party_series = records.Reference(allow_none=True, load_default=None)
    invitations = records.relation(records.Reference())
    releases = records.relation(records.Reference())
    competitions = records.relation(fields.Nested(records.CompetitionRecord))
    external_links = records.optional_list(fields.Nested(records.LinkRecord))


# The position of a competition that no party lists, only a placing: after any listed.
KNOWN_FROM_PLACINGS = 2**62


RESULT_VALUES = ("position", "ranking", "score")


def _link(link, parties_field, productions_field):
    """A party's releases or invitations: a party's list of productions, by title where
    it is derived, and a production's list of parties, by name."""
    return storage.Relation(
        link,
        storage.RelationSide(
            "parties",
            ((parties_field, None),),
            "party_id",
            "party_position",
            order_column=tables.productions.c.sortable_title,
        ),
        storage.RelationSide(
            "productions",
            ((productions_field, None),),
            "production_id",
            "production_position",
            order_column=tables.parties.c.name,
        ),
        names=("party", "production"),
    )


def _known_competition(loader, competition_id, party_id, name, where, field):
    """Remember a competition; whether it was known (and agrees)."""
    known = loader.scratch.competition(competition_id, party_id, name, where)
    if known is None:
        return False
    if (known[0], known[1]) != (party_id, name):
        raise loader.error(
            f"{where}: {field}: competition {competition_id} of party {party_id} named "
            f"{loader.json_text(name)} contradicts {known[2]}, which gives party {known[0]} "
            f"and name {loader.json_text(known[1])}"
        )
    return True


def _competition_row(
    competition_id, party_id, position, name, shown_date=None, platform=None, production_type=None
):
    return {
        "id": competition_id,
        "party_id": party_id,
        "position": position,
        "name": name,
        "shown_date": shown_date,
        "platform_id": (platform or {}).get("id"),
        "production_type_id": (production_type or {}).get("id"),
    }


def _collect_results(loader, record, where, add_pairs):
    """A party's competitions, each stored, and the results each gives."""
    party_id = record["id"]
    for position, competition in enumerate(record["competitions"] or ()):
        field = f"competitions.{position}"
        _known_competition(loader, competition["id"], party_id, competition["name"], where, field)
        for name, of_resource in (
            ("platform", "platforms"),
            ("production_type", "production_types"),
        ):
            if competition[name] is not None:
                loader.refer(of_resource, competition[name], where, f"{field}.{name}")
        loader.queue(
            tables.competitions,
            _competition_row(
                competition["id"],
                party_id,
                position,
                competition["name"],
                competition["shown_date"],
                competition["platform"],
                competition["production_type"],
            ),
        )
        results = []
        for index, result in enumerate(competition["results"]):
            production = result["production"]["id"]
            loader.refer_id("productions", production, where, f"{field}.results.{index}.production")
            results.append((production, {name: result[name] for name in RESULT_VALUES}))
        add_pairs(competition["id"], where, results)


def _collect_placings(loader, record, where, add_pairs):
    """A production's placings; a competition no party has listed yet is stored."""
    if record["competition_placings"] is None:
        return
    placings = []
    for index, placing in enumerate(record["competition_placings"]):
        field = f"competition_placings.{index}.competition"
        competition = placing["competition"]
        party = competition["party"]["id"]
        if loader.find("parties", party) is None:
            raise loader.error(f"{where}: {field}.party: no party with id {party}")
        if not _known_competition(
            loader, competition["id"], party, competition["name"], where, field
        ):
            # Known only from this placing: after the competitions its party lists, by id.
            loader.queue(
                tables.competitions,
                _competition_row(
                    competition["id"], party, KNOWN_FROM_PLACINGS, competition["name"]
                ),
            )
        placings.append((competition["id"], {name: placing[name] for name in RESULT_VALUES}))
    add_pairs(record["id"], where, placings)


def _dated(column):
    return f"partial_date({column}_date, {column}_precision)"


RELEASED = _link(tables.party_releases, "releases", "release_parties")
INVITED = _link(tables.party_invitations, "invitations", "invitation_parties")


def _in_title_and_name_order(relation, source):
    """A party's releases or invitations from the export, in the orders the relation's
    sides derive (a party's by the productions' sortable titles, a production's by the
    parties' names), ties in the dump's order."""
    parties, productions = relation.sides
    return storage.Fill(
        relation.table,
        {
            "party_id": "l.party_id",
            "production_id": "l.production_id",
            "party_position": "row_number() OVER (PARTITION BY l.party_id "
            f"ORDER BY p.{parties.order_column.name}, l.line)",
            "production_position": "row_number() OVER (PARTITION BY l.production_id "
            f"ORDER BY y.{productions.order_column.name}, l.line)",
        },
        f"FROM stage.{source} l "
        "JOIN stage.productions_production p ON p.id = l.production_id "
        "JOIN stage.parties_party y ON y.id = l.party_id WHERE true ON CONFLICT DO NOTHING",
    )


UPSTREAM = storage.Upstream(
    tables={
        "parties_party": {
            "id": "int",
            "name": "text",
            "tagline": "text",
            "start_date_date": "date",
            "start_date_precision": "text",
            "end_date_date": "date",
            "end_date_precision": "text",
            "is_online": "bool",
            "location": "text",
            "country_code": "text",
            "latitude": "float",
            "longitude": "float",
            "website": "text",
            "party_series_id": "int",
        },
        "parties_party_releases": {"party_id": "int", "production_id": "int"},
        "parties_party_invitations": {"party_id": "int", "production_id": "int"},
        "parties_competition": {
            "id": "int",
            "name": "text",
            "shown_date_date": "date",
            "shown_date_precision": "text",
            "party_id": "int",
            "platform_id": "int",
            "production_type_id": "int",
        },
        "parties_competitionplacing": {
            "ranking": "text",
            "position": "int",
            "score": "text",
            "competition_id": "int",
            "production_id": "int",
        },
        "parties_partyexternallink": {"link_class": "text", "parameter": "text", "party_id": "int"},
    },
    foreign_keys=(
        ("parties_party", "party_series_id", "parties_partyseries"),
        ("parties_party_releases", "party_id", "parties_party"),
        ("parties_party_releases", "production_id", "productions_production"),
        ("parties_party_invitations", "party_id", "parties_party"),
        ("parties_party_invitations", "production_id", "productions_production"),
        ("parties_competition", "party_id", "parties_party"),
        ("parties_competition", "platform_id", "platforms_platform"),
        ("parties_competition", "production_type_id", "productions_productiontype"),
        ("parties_competitionplacing", "competition_id", "parties_competition"),
        ("parties_competitionplacing", "production_id", "productions_production"),
        ("parties_partyexternallink", "party_id", "parties_party"),
    ),
    required={
        "parties_party": ("name", "start_date_date", "end_date_date", "is_online"),
        "parties_competition": ("name", "party_id"),
    },
    fills=(
        storage.Fill(
            tables.parties,
            {
                "id": "id",
                "name": "name",
                "tagline": "coalesce(tagline, '')",
                "start_date": _dated("start_date"),
                "end_date": _dated("end_date"),
                "location": "coalesce(location, '')",
                "is_online": "is_online",
                "country_code": "coalesce(country_code, '')",
                "latitude": "latitude",
                "longitude": "longitude",
                "website": "coalesce(website, '')",
                "party_series_id": "party_series_id",
                # A series' parties by name, as the upstream orders them.
                "series_position": "CASE WHEN party_series_id IS NULL THEN NULL ELSE "
                "row_number() OVER (PARTITION BY party_series_id ORDER BY name, line) END",
                "name_key": "name_key(name)",
                "start_date_key": f"date_key({_dated('start_date')})",
                "end_date_key": f"date_key({_dated('end_date')})",
            },
            "FROM stage.parties_party",
            checks=(
                (
                    "SELECT r.line FROM main.parties p JOIN stage.parties_party r "
                    "ON r.id = p.id WHERE p.start_date IS NULL OR p.end_date IS NULL "
                    "ORDER BY p.id LIMIT 1",
                    "parties_party:{line}: start_date_precision: not y, m or d",
                ),
            ),
        ),
        storage.Links(tables.party_links, "parties_partyexternallink", "party_id"),
        storage.Fill(
            tables.competitions,
            {
                "id": "id",
                "party_id": "party_id",
                "position": "row_number() OVER (PARTITION BY party_id ORDER BY name, id)",
                "name": "name",
                "shown_date": _dated("shown_date"),
                "platform_id": "platform_id",
                "production_type_id": "production_type_id",
            },
            "FROM stage.parties_competition",
        ),
        _in_title_and_name_order(RELEASED, "parties_party_releases"),
        _in_title_and_name_order(INVITED, "parties_party_invitations"),
        storage.Fill(
            tables.placings,
            {
                "competition_id": "competition_id",
                "result_position": "row_number() OVER (PARTITION BY competition_id "
                "ORDER BY position IS NULL, position, line)",
                "production_id": "production_id",
                "production_position": "row_number() OVER (PARTITION BY production_id "
                "ORDER BY line)",
                "position": "position",
                "ranking": "coalesce(ranking, '')",
                "score": "coalesce(score, '')",
            },
            "FROM stage.parties_competitionplacing",
        ),
    ),
)


SERIES = storage.Grouping(
    "parties", "party_series", "party_series", "parties", "party_series_id", "series_position"
)
PLACED = storage.Relation(
    tables.placings,
    # A competition whose results are not given: by position, unplaced last.
    storage.RelationSide(
        "parties",
        (("competitions", None),),
        "competition_id",
        "result_position",
        order_key=lambda pair: (
            pair[2]["position"] is None,
            pair[2]["position"] or 0,
            pair[1],
        ),
        collect=_collect_results,
        label="competitions.results",
    ),
    # A production's placings not given: by competition id (the upstream fixes none,
    # and gives them in its rows' order, which an export therefore writes).
    storage.RelationSide(
        "productions",
        (("competition_placings", "competition"),),
        "production_id",
        "production_position",
        order_key=lambda pair: pair[0],
        collect=_collect_placings,
        exported=True,
    ),
    names=("competition", "production"),
)
RELATIONS = (SERIES, RELEASED, INVITED, PLACED)


def _productions(relation):
    link = relation.table
    return side_rows(link, relation.left, link.c.party_id, link.c.production_id)


INVITATIONS = _productions(INVITED)


RELEASES = _productions(RELEASED)


COMPETITIONS = owned_rows(tables.competitions, "party_id").order_by(
    tables.competitions.c.id  # of those known only from placings
)


RESULTS = side_rows(tables.placings, PLACED.left)


def competition_results(build, competition_ids):
    """{competition id: its results in order} of the competitions ``competition_ids``,
    each result with its production's list record (``ResultSchema``), at load."""
    rows = build.rows(RESULTS, competition_ids)
    productions = build.records("productions", {row["production_id"] for row in rows})
    results = {}
    for row in rows:
        results.setdefault(row["competition_id"], []).append(
            {
                "position": row["position"],
                "ranking": row["ranking"],
                "score": row["score"],
                "production": productions[row["production_id"]],
            }
        )
    return results


class PartiesLoading(Loading):
    resource = resource
    record_schema = PartyRecord()
    derived_columns = {**storage.NAME_KEY, **storage.date_keys("start_date", "end_date")}
    nested_lists = (storage.NestedList("external_links", tables.party_links),)
    relations = RELATIONS
    upstream = UPSTREAM

    def complete_detail(self, build, rows):
        super().complete_detail(build, rows)
        # Relations, not nested lists: the series, productions and competitions (with
        # their results) of a party.
        by_id = {}
        for row in rows:
            row.update(invitations=[], releases=[], competitions=[])
            by_id[row["id"]] = row
        ids = list(by_id)
        series = build.records("party_series", {row["party_series_id"] for row in rows} - {None})
        for row in rows:
            row["party_series"] = series.get(row["party_series_id"])
        competitions = build.rows(COMPETITIONS, ids)
        results = competition_results(build, [row["id"] for row in competitions])
        links = {
            field: build.rows(statement, ids)
            for field, statement in (("invitations", INVITATIONS), ("releases", RELEASES))
        }
        wanted = {row["production_id"] for rows in links.values() for row in rows}
        productions = build.records("productions", wanted)
        platforms = build.records("platforms", {row["platform_id"] for row in competitions})
        types = build.records(
            "production_types", {row["production_type_id"] for row in competitions}
        )
        for field, rows_of_field in links.items():
            for row in rows_of_field:
                by_id[row["party_id"]][field].append(productions[row["production_id"]])
        for row in competitions:
            by_id[row["party_id"]]["competitions"].append(
                {
                    "id": row["id"],
                    "name": row["name"],
                    "shown_date": row["shown_date"],
                    "platform": platforms.get(row["platform_id"]),
                    "production_type": types.get(row["production_type_id"]),
                    "results": results.get(row["id"], []),
                }
            )


loading = PartiesLoading()
