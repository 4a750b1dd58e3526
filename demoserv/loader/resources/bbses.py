"""How BBSes are loaded: their catalogue record, the nested lists they store (BBStros,
staff, affiliations), their part of the upstream import, and their detail records'
assembly."""

from marshmallow import fields

from ...resources.bbses import resource
from ...store import tables
from .. import records
from . import storage
from .loading import Loading


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


class BBSesLoading(Loading):
    resource = resource
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
    nested_lists = (
        storage.NestedList("bbstros", tables.bbstros, reference=("production_id", "productions")),
        storage.NestedList("staff", tables.bbs_staff, references={"releaser": "releasers"}),
        storage.NestedList(
            "affiliations", tables.bbs_affiliations, references={"group": "releasers"}
        ),
    )


loading = BBSesLoading()
