"""Bulletin board systems, with their BBStros, staff and affiliated groups."""

from marshmallow import Schema, fields

from .. import filters, records, tables
from . import storage
from .declaration import Resource, owned_rows
from .summaries import (
    NAMED_DETAIL_HEAD,
    ProductionSchema,
    ReleaserNameSchema,
    nested_list,
    record_url,
    service_url,
)


class BBSSchema(Schema):
    url = record_url("bbses")
    service_url = service_url("/bbs/{id}/")
    id = fields.Integer()
    name = fields.String()
    location = fields.String()
    latitude = fields.Float(allow_none=True)
    longitude = fields.Float(allow_none=True)
    tags = fields.List(fields.String())


class StaffSchema(Schema):
    releaser = fields.Nested(ReleaserNameSchema)
    role = fields.String()
    is_current = fields.Boolean()


class AffiliationSchema(Schema):
    group = fields.Nested(ReleaserNameSchema)
    role = fields.String()


class BBSDetailSchema(BBSSchema):
    country_code = fields.String()
    bbstros = nested_list(ProductionSchema)
    staff = nested_list(StaffSchema)
    affiliations = nested_list(AffiliationSchema)

    class Meta:
        fields = (
            *NAMED_DETAIL_HEAD,
            "location",
            "country_code",
            "latitude",
            "longitude",
            "bbstros",
            "staff",
            "affiliations",
            "tags",
        )


class StaffRecord(records.RecordSchema):
    releaser = records.Reference(required=True)
    role = records.text()
    is_current = records.StrictBoolean(required=True)


class AffiliationRecord(records.RecordSchema):
    group = records.Reference(required=True)
    role = records.text()


class BBSRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    location = records.text()
    country_code = records.country_code(load_default="")
    latitude = records.coordinate(90)
    longitude = records.coordinate(180)
    tags = records.tags()
    bbstros = records.optional_list(records.Reference())
    staff = records.optional_list(fields.Nested(StaffRecord))
    affiliations = records.optional_list(fields.Nested(AffiliationRecord))


BBSTROS, STAFF, AFFILIATIONS = (
    owned_rows(tables.bbstros, "bbs_id"),
    owned_rows(tables.bbs_staff, "bbs_id"),
    owned_rows(tables.bbs_affiliations, "bbs_id"),
)


class BBSes(Resource):
    name = "bbses"
    title = "BBS"
    description = "Bulletin board systems of the demoscene."
    table = tables.bbses
    details_table = tables.bbses_details
    detail_needs = frozenset({"productions", "releasers"})
    filters = (
        filters.NameEquals("name", "Only BBSes with this name (exact, case-insensitive)."),
        filters.Search("search", filters.search_help("BBSes", "name")),
        filters.Tagged(
            "tag",
            "Only BBSes carrying every one of these tags (repeat it, or separate tags with "
            "commas).",
            link=tables.bbs_tags,
            owner="bbs_id",
        ),
        filters.CountryCode("country_code", "Only BBSes in this country (two letters, any case)."),
    )
    schema = BBSSchema()
    detail_schema = BBSDetailSchema()
    record_schema = BBSRecord()
    upstream = storage.Upstream(
        tables={
            "bbs_bbs": {
                "id": "int",
                "name": "text",
                "location": "text",
                "country_code": "text",
                "latitude": "float",
                "longitude": "float",
            },
            "bbs_bbs_bbstros": {"bbs_id": "int", "production_id": "int"},
            "bbs_operator": {
                "role": "text",
                "bbs_id": "int",
                "releaser_id": "int",
                "is_current": "bool",
            },
            "bbs_affiliation": {"role": "text", "bbs_id": "int", "group_id": "int"},
        },
        foreign_keys=(
            ("bbs_bbs_bbstros", "bbs_id", "bbs_bbs"),
            ("bbs_bbs_bbstros", "production_id", "productions_production"),
            ("bbs_operator", "bbs_id", "bbs_bbs"),
            ("bbs_operator", "releaser_id", "demoscene_releaser"),
            ("bbs_affiliation", "bbs_id", "bbs_bbs"),
            ("bbs_affiliation", "group_id", "demoscene_releaser"),
        ),
        required={"bbs_bbs": ("name",)},
        tags=("bbs", "bbs"),
        fills=(
            storage.Fill(
                tables.bbses,
                {
                    "id": "r.id",
                    "name": "r.name",
                    "location": "coalesce(r.location, '')",
                    "country_code": "coalesce(r.country_code, '')",
                    "latitude": "r.latitude",
                    "longitude": "r.longitude",
                    "tags": "{tags}",
                    "name_key": "name_key(r.name)",
                },
                "FROM stage.bbs_bbs r",
            ),
            storage.Fill(
                tables.bbstros,
                {
                    "bbs_id": "b.bbs_id",
                    "position": "row_number() OVER (PARTITION BY b.bbs_id "
                    "ORDER BY p.sortable_title, b.line)",
                    "production_id": "b.production_id",
                },
                "FROM stage.bbs_bbs_bbstros b "
                "JOIN stage.productions_production p ON p.id = b.production_id",
            ),
            storage.Fill(
                tables.bbs_staff,
                {
                    "bbs_id": "o.bbs_id",
                    "position": "row_number() OVER (PARTITION BY o.bbs_id ORDER BY r.line, o.line)",
                    "releaser_id": "o.releaser_id",
                    "role": "coalesce(o.role, '')",
                    "is_current": "coalesce(o.is_current, 0)",
                },
                "FROM stage.bbs_operator o JOIN stage.demoscene_releaser r ON r.id = o.releaser_id",
            ),
            storage.Fill(
                tables.bbs_affiliations,
                {
                    "bbs_id": "a.bbs_id",
                    "position": "row_number() OVER (PARTITION BY a.bbs_id ORDER BY r.line, a.line)",
                    "group_id": "a.group_id",
                    "role": "coalesce(a.role, '')",
                },
                "FROM stage.bbs_affiliation a JOIN stage.demoscene_releaser r ON r.id = a.group_id",
            ),
        ),
    )
    owns = (
        storage.Owned("bbstros", tables.bbstros, reference=("production_id", "productions")),
        storage.Owned("staff", tables.bbs_staff, references={"releaser": "releasers"}),
        storage.Owned("affiliations", tables.bbs_affiliations, references={"group": "releasers"}),
    )

    def complete_detail(self, build, rows):
        by_id = {}
        for row in rows:
            row.update(bbstros=[], staff=[], affiliations=[])
            by_id[row["id"]] = row
        ids = list(by_id)
        bbstros = build.rows(BBSTROS, ids)
        staff = build.rows(STAFF, ids)
        affiliations = build.rows(AFFILIATIONS, ids)
        productions = build.records("productions", {row["production_id"] for row in bbstros})
        releasers = build.records(
            "releasers",
            {row["releaser_id"] for row in staff} | {row["group_id"] for row in affiliations},
        )
        for row in bbstros:
            by_id[row["bbs_id"]]["bbstros"].append(productions[row["production_id"]])
        for row in staff:
            by_id[row["bbs_id"]]["staff"].append(
                {
                    "releaser": releasers[row["releaser_id"]],
                    "role": row["role"],
                    "is_current": row["is_current"],
                }
            )
        for row in affiliations:
            by_id[row["bbs_id"]]["affiliations"].append(
                {"group": releasers[row["group_id"]], "role": row["role"]}
            )


resource = BBSes()


def bbs_list():
    return resource.answer_list()


def bbs_detail(record_id):
    return resource.answer_detail(record_id)


bp = resource.blueprint(bbs_list, bbs_detail)
