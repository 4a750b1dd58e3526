"""How party series are loaded: their catalogue record, their part of the upstream
import, and their detail records' assembly (a series' parties)."""

from ...resources.party_series import resource
from ...store import tables
from .. import records
from . import storage
from .loading import Loading, side_rows
from .parties import SERIES

PARTIES = side_rows(tables.parties, SERIES, tables.parties.c.party_series_id, tables.parties.c.id)


class PartySeriesRecord(records.RecordSchema):
    id = records.id_field()
    name = records.text()
    website = records.text()
    parties = records.relation(records.Reference())


class PartySeriesLoading(Loading):
    resource = resource
    record_schema = PartySeriesRecord()
    upstream = storage.Upstream(
        tables={"parties_partyseries": {"id": "int", "name": "text", "website": "text"}},
        required={"parties_partyseries": ("name",)},
        fills=(
            storage.Fill(
                tables.party_series,
                {
                    "id": "id",
                    "name": "name",
                    "website": "coalesce(website, '')",
                    "name_key": "name_key(name)",
                },
                "FROM stage.parties_partyseries",
            ),
        ),
    )

    def complete_detail(self, build, rows):
        by_id = {row["id"]: row for row in rows}
        for row in rows:
            row["parties"] = []
        links = build.rows(PARTIES, list(by_id))
        parties = build.records("parties", {row["id"] for row in links})
        for row in links:
            by_id[row["party_series_id"]]["parties"].append(parties[row["id"]])


loading = PartySeriesLoading()
