"""How productions are loaded: their catalogue record, the nested lists they store
(authors, platforms, types, credits, links, screenshots), their part of the upstream
import, and their list and detail records' assembly."""

from marshmallow import fields, validate

from ...resources.productions import resource
from ...store import tables
from ...store.values import SUPERTYPES, sortable_title
from .. import records
from . import storage
from .loading import Loading, side_rows
from .parties import INVITED, PLACED, RELEASED


class CreditRecord(records.RecordSchema):
    nick = fields.Nested(records.NickRecord, required=True)
    category = records.text()
    role = records.text()


def _size():
    return records.StrictInteger(
        required=True, allow_none=True, validate=validate.Range(0, 2**31 - 1)
    )


class ScreenshotRecord(records.RecordSchema):
    original_url = records.text()
    original_width = _size()
    original_height = _size()
    standard_url = records.text()
    standard_width = _size()
    standard_height = _size()
    thumbnail_url = records.text()
    thumbnail_width = _size()
    thumbnail_height = _size()


class CompetitionSummaryRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    party = records.Reference(required=True)


class PlacingRecord(records.RecordSchema):
    position = records.StrictInteger(required=True, allow_none=True)
    ranking = records.text()
    score = records.text()
    competition = fields.Nested(CompetitionSummaryRecord, required=True)


class ProductionRecord(records.RecordSchema):
    id = records.id_field()
    title = records.text()
    author_nicks = fields.List(fields.Nested(records.NickRecord), required=True)
    author_affiliation_nicks = fields.List(fields.Nested(records.NickRecord), required=True)
    release_date = records.partial_date(allow_none=True)
    supertype = records.supertype()
    platforms = fields.List(records.Reference(records.PlatformRecord()), required=True)
    types = fields.List(records.Reference(records.ProductionTypeRecord()), required=True)
    credits = records.optional_list(fields.Nested(CreditRecord))
    download_links = records.optional_list(fields.Nested(records.LinkRecord))
    external_links = records.optional_list(fields.Nested(records.LinkRecord))
    release_parties = records.relation(records.Reference())
    competition_placings = records.relation(fields.Nested(PlacingRecord))
    invitation_parties = records.relation(records.Reference())
    screenshots = records.optional_list(fields.Nested(ScreenshotRecord))
    tags = records.tags()
    created_at = records.timestamp()
    updated_at = records.timestamp()


def _parties(relation):
    link = relation.table
    return side_rows(link, relation.right, link.c.production_id, link.c.party_id)


RELEASE_PARTIES = _parties(RELEASED)


INVITATION_PARTIES = _parties(INVITED)


PLACINGS = side_rows(
    tables.placings,
    PLACED.right,
    tables.placings.c.production_id,
    tables.placings.c.position,
    tables.placings.c.ranking,
    tables.placings.c.score,
    tables.competitions.c.id,
    tables.competitions.c.name,
    tables.competitions.c.party_id,
).join(tables.competitions, tables.competitions.c.id == tables.placings.c.competition_id)


def _production_nicks(role, source):
    """A production's author or affiliation nicks from the export, by name."""
    return storage.Fill(
        tables.production_nicks,
        {
            "production_id": "l.production_id",
            "role": f"'{role}'",
            "position": "row_number() OVER (PARTITION BY l.production_id ORDER BY n.name, l.line)",
            "name": "n.name",
            "abbreviation": "coalesce(n.abbreviation, '')",
            "releaser_id": "n.releaser_id",
        },
        f"FROM stage.{source} l JOIN stage.demoscene_nick n ON n.id = l.nick_id "
        "WHERE true ON CONFLICT DO NOTHING",
    )


RELEASE_DATE = "partial_date(r.release_date_date, r.release_date_precision)"


SCREENSHOT_COLUMNS = {
    f"{size}_{what}": "text" if what == "url" else "int"
    for size in ("original", "standard", "thumbnail")
    for what in ("url", "width", "height")
}


UPSTREAM = storage.Upstream(
    tables={
        "productions_production": {
            "id": "int",
            "title": "text",
            "supertype": "text",
            "release_date_date": "date",
            "release_date_precision": "text",
            "sortable_title": "text",
            "created_at": "timestamp",
            "updated_at": "timestamp",
        },
        "productions_production_platforms": {"production_id": "int", "platform_id": "int"},
        "productions_production_types": {"production_id": "int", "productiontype_id": "int"},
        "productions_production_author_nicks": {"production_id": "int", "nick_id": "int"},
        "productions_production_author_affiliation_nicks": {
            "production_id": "int",
            "nick_id": "int",
        },
        "productions_credit": {
            "category": "text",
            "role": "text",
            "nick_id": "int",
            "production_id": "int",
        },
        "productions_productionlink": {
            "link_class": "text",
            "parameter": "text",
            "is_download_link": "bool",
            "production_id": "int",
        },
        "productions_screenshot": {"production_id": "int", **SCREENSHOT_COLUMNS},
    },
    foreign_keys=(
        ("productions_production_platforms", "production_id", "productions_production"),
        ("productions_production_platforms", "platform_id", "platforms_platform"),
        ("productions_production_types", "production_id", "productions_production"),
        ("productions_production_types", "productiontype_id", "productions_productiontype"),
        ("productions_production_author_nicks", "production_id", "productions_production"),
        ("productions_production_author_nicks", "nick_id", "demoscene_nick"),
        (
            "productions_production_author_affiliation_nicks",
            "production_id",
            "productions_production",
        ),
        ("productions_production_author_affiliation_nicks", "nick_id", "demoscene_nick"),
        ("productions_credit", "nick_id", "demoscene_nick"),
        ("productions_credit", "production_id", "productions_production"),
        ("productions_productionlink", "production_id", "productions_production"),
        ("productions_screenshot", "production_id", "productions_production"),
    ),
    required={"productions_production": ("title", "supertype", "sortable_title")},
    choices={"productions_production": {"supertype": SUPERTYPES}},
    tags=("productions", "production"),
    fills=(
        storage.Fill(
            tables.productions,
            {
                "id": "r.id",
                "title": "r.title",
                "release_date": RELEASE_DATE,
                "supertype": "r.supertype",
                "tags": "{tags}",
                "created_at": "r.created_at",
                "updated_at": "r.updated_at",
                "sortable_title": "r.sortable_title",
                "title_key": "py_lower(r.title)",
                "release_date_key": f"date_key({RELEASE_DATE})",
                # A screenshot counts once it has a thumbnail, as upstream.
                "has_screenshot": "EXISTS (SELECT 1 FROM stage.productions_screenshot s "
                "WHERE s.production_id = r.id AND s.thumbnail_url != '')",
            },
            "FROM stage.productions_production r",
        ),
        _production_nicks("author", "productions_production_author_nicks"),
        _production_nicks("affiliation", "productions_production_author_affiliation_nicks"),
        storage.Fill(
            tables.production_platforms,
            {
                "production_id": "l.production_id",
                "position": "row_number() OVER (PARTITION BY l.production_id "
                "ORDER BY py_lower(p.name), l.line)",
                "platform_id": "l.platform_id",
            },
            "FROM stage.productions_production_platforms l "
            "JOIN stage.platforms_platform p ON p.id = l.platform_id",
        ),
        storage.Fill(
            tables.production_type_links,
            {
                "production_id": "l.production_id",
                "position": "row_number() OVER (PARTITION BY l.production_id "
                "ORDER BY t.path, l.line)",
                "production_type_id": "l.productiontype_id",
            },
            "FROM stage.productions_production_types l "
            "JOIN stage.productions_productiontype t ON t.id = l.productiontype_id",
        ),
        storage.Fill(
            tables.credits,
            {
                "production_id": "c.production_id",
                "position": "row_number() OVER (PARTITION BY c.production_id ORDER BY c.line)",
                "name": "n.name",
                "abbreviation": "coalesce(n.abbreviation, '')",
                "releaser_id": "n.releaser_id",
                "category": "coalesce(c.category, '')",
                "role": "coalesce(c.role, '')",
            },
            "FROM stage.productions_credit c JOIN stage.demoscene_nick n ON n.id = c.nick_id",
        ),
        # Download links by class, then external links with BaseUrl first, then by class.
        storage.Links(
            tables.production_links,
            "productions_productionlink",
            "production_id",
            order="NOT is_download_link, CASE WHEN is_download_link THEN link_class "
            "ELSE external_links_key(link_class) END",
            columns={"is_download": "is_download_link"},
        ),
        storage.Fill(
            tables.screenshots,
            {
                "production_id": "production_id",
                "position": "row_number() OVER (PARTITION BY production_id ORDER BY line)",
                **{
                    column: f"coalesce({column}, '')" if kind == "text" else column
                    for column, kind in SCREENSHOT_COLUMNS.items()
                },
            },
            "FROM stage.productions_screenshot",
        ),
    ),
)


class ProductionsLoading(Loading):
    resource = resource
    record_schema = ProductionRecord()
    upstream = UPSTREAM
    derived_columns = {
        **storage.TIMESTAMPS,
        "sortable_title": ("title", sortable_title),
        "title_key": ("title", str.lower),
        **storage.date_keys("release_date"),
        # A screenshot counts once it has a thumbnail, as upstream.
        "has_screenshot": ("screenshots", lambda shots: any(s["thumbnail_url"] for s in shots)),
    }
    nested_lists = (
        storage.NestedList(
            "platforms", tables.production_platforms, reference=("platform_id", "platforms")
        ),
        storage.NestedList(
            "types",
            tables.production_type_links,
            reference=("production_type_id", "production_types"),
        ),
        storage.NestedList("screenshots", tables.screenshots),
        storage.NestedList(
            "author_nicks", tables.production_nicks, nick="", constant={"role": "author"}
        ),
        storage.NestedList(
            "author_affiliation_nicks",
            tables.production_nicks,
            nick="",
            constant={"role": "affiliation"},
        ),
        storage.NestedList("credits", tables.credits, nick="nick"),
        storage.NestedList(
            "download_links", tables.production_links, constant={"is_download": True}
        ),
        storage.NestedList(
            "external_links",
            tables.production_links,
            constant={"is_download": False},
            after="download_links",
        ),
    )

    def complete_detail(self, build, rows):
        super().complete_detail(build, rows)
        # Relations, not nested lists: a production's parties and placings.
        by_id = {}
        for row in rows:
            row.update(release_parties=[], competition_placings=[], invitation_parties=[])
            by_id[row["id"]] = row
        ids = list(by_id)
        for field, statement in (
            ("release_parties", RELEASE_PARTIES),
            ("invitation_parties", INVITATION_PARTIES),
        ):
            links = build.rows(statement, ids)
            parties = build.records("parties", {row["party_id"] for row in links})
            for row in links:
                by_id[row["production_id"]][field].append(parties[row["party_id"]])
        placings = build.rows(PLACINGS, ids)
        parties = build.records("parties", {row["party_id"] for row in placings})
        for row in placings:
            by_id[row["production_id"]]["competition_placings"].append(
                {
                    "position": row["position"],
                    "ranking": row["ranking"],
                    "score": row["score"],
                    "competition": {
                        "id": row["id"],
                        "name": row["name"],
                        "party": parties[row["party_id"]],
                    },
                }
            )


loading = ProductionsLoading()
