"""How platforms are loaded: their catalogue record and their part of the upstream import."""

from ...resources.platforms import resource
from ...store import tables
from .. import records
from . import storage
from .loading import Loading


class PlatformsLoading(Loading):
    resource = resource
    record_schema = records.PlatformRecord()
    created_by_summaries = True  # a production's or competition's summary may create one
    upstream = storage.Upstream(
        tables={"platforms_platform": {"id": "int", "name": "text"}},
        required={"platforms_platform": ("name",)},
        fills=(
            storage.Fill(
                tables.platforms,
                {"id": "id", "name": "name", "name_key": "name_key(name)"},
                "FROM stage.platforms_platform",
            ),
        ),
    )


loading = PlatformsLoading()
