"""Every table, column and index of the catalogue database.

Each record table keeps, beside the fields it serves, the sort keys computed at load
(``*_key``, ``sortable_title``) and one ``rank_<ordering key>`` column per ordering
key: a record's 1-based position in that ascending order, so that page k of a listing
is a range lookup on a unique index rather than an OFFSET scan.
"""

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    Table,
    Text,
)

metadata = MetaData()


def _rank(name):
    return Column(f"rank_{name}", Integer)


catalogue_info = Table(
    "catalogue_info",
    metadata,
    Column("version", Text, nullable=False),
    Column("loaded_at", Text, nullable=False),
)

record_counts = Table(
    "record_counts",
    metadata,
    Column("resource", Text, primary_key=True),
    Column("count", Integer, nullable=False),
)

platforms = Table(
    "platforms",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("name_key", Text, nullable=False),
    _rank("id"),
    _rank("name"),
)

production_types = Table(
    "production_types",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("supertype", Text, nullable=False),
    Column("name_key", Text, nullable=False),
    _rank("id"),
    _rank("name"),
)

releasers = Table(
    "releasers",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("is_group", Boolean, nullable=False),
    Column("name_key", Text, nullable=False),
    _rank("id"),
    _rank("name"),
)

party_series = Table(
    "party_series",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("website", Text, nullable=False),
    Column("name_key", Text, nullable=False),
    _rank("id"),
    _rank("name"),
)

parties = Table(
    "parties",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("tagline", Text, nullable=False),
    Column("start_date", Text, nullable=False),
    Column("end_date", Text, nullable=False),
    Column("location", Text, nullable=False),
    Column("is_online", Boolean, nullable=False),
    Column("country_code", Text, nullable=False),
    Column("latitude", Float),
    Column("longitude", Float),
    Column("website", Text, nullable=False),
    Column("party_series_id", Integer, ForeignKey("party_series.id")),
    Column("name_key", Text, nullable=False),
    Column("start_date_key", Text, nullable=False),
    Column("end_date_key", Text, nullable=False),
    _rank("id"),
    _rank("name"),
    _rank("start_date_date"),
    _rank("end_date_date"),
    _rank("country_code"),
)

bbses = Table(
    "bbses",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("name", Text, nullable=False),
    Column("location", Text, nullable=False),
    Column("latitude", Float),
    Column("longitude", Float),
    Column("tags", JSON, nullable=False),
    Column("name_key", Text, nullable=False),
    _rank("id"),
    _rank("name"),
)

productions = Table(
    "productions",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=False),
    Column("title", Text, nullable=False),
    Column("release_date", Text),
    Column("supertype", Text, nullable=False),
    Column("tags", JSON, nullable=False),
    Column("sortable_title", Text, nullable=False),
    Column("title_key", Text, nullable=False),  # lower-cased title, for the title filter
    Column("release_date_key", Text),
    _rank("id"),
    _rank("sortable_title"),
    _rank("release_date_date"),
    _rank("supertype"),
)

# The link tables are clustered by production (WITHOUT ROWID, keyed by production and
# position), so a production's nicks, platforms or types are one contiguous read.
# role is "author" or "affiliation"; position keeps the order they were loaded in.
production_nicks = Table(
    "production_nicks",
    metadata,
    Column("production_id", Integer, ForeignKey("productions.id"), primary_key=True),
    Column("role", Text, primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("name", Text, nullable=False),
    Column("abbreviation", Text, nullable=False),
    Column("releaser_id", Integer, ForeignKey("releasers.id"), nullable=False),
    sqlite_with_rowid=False,
)

production_platforms = Table(
    "production_platforms",
    metadata,
    Column("production_id", Integer, ForeignKey("productions.id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("platform_id", Integer, ForeignKey("platforms.id"), nullable=False),
    sqlite_with_rowid=False,
)

production_type_links = Table(
    "production_type_links",
    metadata,
    Column("production_id", Integer, ForeignKey("productions.id"), primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("production_type_id", Integer, ForeignKey("production_types.id"), nullable=False),
    sqlite_with_rowid=False,
)

# The record tables, by resource name as it appears in the API.
RECORD_TABLES = {
    "party_series": party_series,
    "platforms": platforms,
    "bbses": bbses,
    "parties": parties,
    "productions": productions,
    "releasers": releasers,
    "production_types": production_types,
}

# The loader creates tables with ``CreateTable`` and these indexes only after the bulk
# insert, which is much faster than maintaining them row by row.
INDEXES = [
    Index("production_nicks_by_releaser", production_nicks.c.releaser_id),
    Index("production_platforms_by_platform", production_platforms.c.platform_id),
    Index("production_type_links_by_type", production_type_links.c.production_type_id),
    Index("parties_by_party_series", parties.c.party_series_id),
    Index("productions_by_title_key", productions.c.title_key),
    Index("releasers_by_is_group", releasers.c.is_group, releasers.c.id),
]
for _table in RECORD_TABLES.values():
    for _column in _table.columns:
        if _column.name.startswith("rank_"):
            INDEXES.append(Index(f"{_table.name}_by_{_column.name}", _column, unique=True))
# Raw sort keys, for orderings on several keys and for lookups by value.
for _table, _names in [
    (platforms, ["name_key"]),
    (production_types, ["name_key"]),
    (releasers, ["name_key"]),
    (party_series, ["name_key"]),
    (parties, ["name_key", "start_date_key", "end_date_key", "country_code"]),
    (bbses, ["name_key"]),
    (productions, ["sortable_title", "release_date_key", "supertype"]),
]:
    for _name in _names:
        INDEXES.append(Index(f"{_table.name}_by_{_name}", _table.c[_name], _table.c.id))
