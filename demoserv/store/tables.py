"""Every table, column and index of the catalogue database.

A record table keeps the fields its records are built from, the sort keys computed at
load (``*_key``, ``sortable_title``), one ``rank_<ordering key>`` column per ordering key
(the record's 1-based position in that ascending order, so that page k is a range
lookup on a unique index) and ``doc``: the record's list JSON, built once at load (its
read model). ``<resource>_details`` holds each detail record's JSON likewise.

Relation tables are clustered by their owner (WITHOUT ROWID, keyed by owner and
position), so a record's nested list is one contiguous read; ``position`` keeps the
order the catalogue gave, and a relation shown from both sides keeps each side's order.
"""

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    Table,
    Text,
)

metadata = MetaData()


def _rank(name):
    return Column(f"rank_{name}", Integer)


def _id():
    return Column("id", Integer, primary_key=True, autoincrement=False)


def _doc():
    return Column("doc", LargeBinary)


def _owned(name, owner, *columns, position=True):
    """A relation table clustered by ``owner`` (and position)."""
    keys = [Column(owner, Integer, primary_key=True)]
    if position:
        keys.append(Column("position", Integer, primary_key=True))
    return Table(name, metadata, *keys, *columns, sqlite_with_rowid=False)


def _tagged(name, owner):
    """A record's tags (from its ``tags`` column, at load), clustered by tag: the
    ``tag`` filter reads the records of a tag as one contiguous range."""
    return Table(
        name,
        metadata,
        Column("tag", Text, primary_key=True),
        Column(owner, Integer, primary_key=True),
        sqlite_with_rowid=False,
    )


def _details(resource):
    return Table(f"{resource}_details", metadata, _id(), _doc())


def _named(name, *columns):
    """A record table of a named resource, ordered by ``id`` and ``name``: its id, name,
    own ``columns``, name key, ranks and list record."""
    return Table(
        name,
        metadata,
        _id(),
        Column("name", Text, nullable=False),
        *columns,
        Column("name_key", Text, nullable=False),
        _rank("id"),
        _rank("name"),
        _doc(),
    )


catalogue_info = Table(
    "catalogue_info",
    metadata,
    Column("version", Text, nullable=False),
    Column("loaded_at", Text, nullable=False),
    Column("schema_version", Text, nullable=False),  # fingerprint.schema_version
    # What optional data the catalogue holds, for the filters that need it (JSON list).
    Column("features", JSON, nullable=False),
    # A digest of the history of loads (catalogue_loads), written with it: the changes
    # feed's answers follow it as well as the version (null in a file without a history).
    Column("history", Text),
)

# Where the catalogue came from (loader/provenance.py), one fact a row: the source
# (an address or a file name), the export's validators, size, digest and own date, and
# when it was loaded. Not part of the records: the catalogue version ignores it.
catalogue_source = Table(
    "catalogue_source",
    metadata,
    Column("key", Text, primary_key=True),
    Column("value", Text, nullable=False),
)

# The zstd dictionary of each resource's list and detail records (stored.RecordCodec).
dictionaries = Table(
    "dictionaries",
    metadata,
    Column("resource", Text, primary_key=True),
    Column("kind", Text, primary_key=True),  # "list" or "detail"
    Column("data", LargeBinary, nullable=False),
)

# Each resource's sort and filter columns as arrays in id order (store/listing_arrays.py).
listing_columns = Table(
    "listing_columns",
    metadata,
    Column("resource", Text, primary_key=True),
    Column("name", Text, primary_key=True),
    Column("dtype", Text, nullable=False),
    Column("data", LargeBinary, nullable=False),
)

record_counts = Table(
    "record_counts",
    metadata,
    Column("resource", Text, primary_key=True),
    Column("count", Integer, nullable=False),
)

# The history of changes (loader/history.py): a digest of each record's detail record
# as built, which the next load compares with its own; each load that changed records,
# and each record it added, changed or removed (its digest before and after, null where
# the record is absent), carried from each file into the next.
record_digests = Table(
    "record_digests",
    metadata,
    Column("resource", Text, primary_key=True),
    Column("id", Integer, primary_key=True),
    Column("digest", Integer, nullable=False),
    sqlite_with_rowid=False,
)
catalogue_loads = Table(
    "catalogue_loads",
    metadata,
    Column("load_number", Integer, primary_key=True, autoincrement=False),
    Column("version", Text, nullable=False),
    Column("loaded_at", Text, nullable=False),
    # {resource: {"added": n, "changed": n, "removed": n}}; {} for the history's start
    Column("counts", JSON, nullable=False),
)
catalogue_changes = Table(
    "catalogue_changes",
    metadata,
    Column("resource", Text, primary_key=True),
    Column("id", Integer, primary_key=True),
    Column("load_number", Integer, primary_key=True),
    Column("digest_before", Integer),
    Column("digest_after", Integer),
    sqlite_with_rowid=False,
)

# The changes feed's answers, built at load from the history (loader/feed.py). A
# scope is a resource, or FEED_ALL for the feed of every resource.
FEED_ALL = ""
# What each change row tells the feed since a load between the record's previous
# change and this one: added, changed, removed, or null (the record is as served).
feed_changes = Table(
    "feed_changes",
    metadata,
    Column("resource", Text, primary_key=True),
    Column("id", Integer, primary_key=True),
    Column("load_number", Integer, primary_key=True),
    Column("change", Text),
    sqlite_with_rowid=False,
)
# Each record changed after the oldest load kept, in the feed's order within its scope.
feed_records = Table(
    "feed_records",
    metadata,
    Column("scope", Text, primary_key=True),
    Column("position", Integer, primary_key=True),  # 0-based
    Column("resource", Text, nullable=False),
    Column("id", Integer, nullable=False),
    Column("last_load", Integer, nullable=False),
    sqlite_with_rowid=False,
)
# Since each load, the records of a scope after it that the feed leaves out (the same
# as served): the number of entries before each, and how many were left out up to it.
feed_skips = Table(
    "feed_skips",
    metadata,
    Column("since_load", Integer, primary_key=True),
    Column("scope", Text, primary_key=True),
    Column("entries_before", Integer, primary_key=True),
    Column("skipped", Integer, primary_key=True),
    sqlite_with_rowid=False,
)
# Since each load, where a scope's feed starts in feed_records and how many entries it has.
feed_spans = Table(
    "feed_spans",
    metadata,
    Column("since_load", Integer, primary_key=True),
    Column("scope", Text, primary_key=True),
    Column("start", Integer, nullable=False),
    Column("count", Integer, nullable=False),
    sqlite_with_rowid=False,
)

platforms = _named("platforms")

production_types = _named(
    "production_types",
    Column("supertype", Text, nullable=False),
)

releasers = _named(
    "releasers",
    Column("is_group", Boolean, nullable=False),
    Column("country_code", Text),
    Column("created_at", Text),
    Column("updated_at", Text),
)
releasers_details = _details("releasers")
releaser_nicks = _owned(
    "releaser_nicks",
    "releaser_id",
    Column("name", Text, nullable=False),
    Column("abbreviation", Text, nullable=False),
    Column("variants", JSON, nullable=False),
)
# member_position orders a member's member_of; group_position a group's members.
memberships = Table(
    "memberships",
    metadata,
    Column("member_id", Integer, primary_key=True),
    Column("group_id", Integer, primary_key=True),
    Column("is_current", Boolean, nullable=False),
    Column("member_position", Integer, nullable=False),
    Column("group_position", Integer, nullable=False),
    sqlite_with_rowid=False,
)
releaser_links = _owned(
    "releaser_links",
    "releaser_id",
    Column("link_class", Text, nullable=False),
    Column("url", Text, nullable=False),
)

party_series = _named(
    "party_series",
    Column("website", Text, nullable=False),
)
party_series_details = _details("party_series")

parties = Table(
    "parties",
    metadata,
    _id(),
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
    Column("party_series_id", Integer),
    Column("series_position", Integer),  # among its series' parties
    Column("name_key", Text, nullable=False),
    Column("start_date_key", Text, nullable=False),
    Column("end_date_key", Text, nullable=False),
    _rank("id"),
    _rank("name"),
    _rank("start_date_date"),
    _rank("end_date_date"),
    _rank("country_code"),
    _doc(),
)
parties_details = _details("parties")
party_links = _owned(
    "party_links",
    "party_id",
    Column("link_class", Text, nullable=False),
    Column("url", Text, nullable=False),
)
# A production released at (or invited to) a party: each side's order of the pair.
party_releases, party_invitations = (
    Table(
        name,
        metadata,
        Column("party_id", Integer, primary_key=True),
        Column("production_id", Integer, primary_key=True),
        Column("party_position", Integer, nullable=False),
        Column("production_position", Integer, nullable=False),
        sqlite_with_rowid=False,
    )
    for name in ("party_releases", "party_invitations")
)
competitions = Table(
    "competitions",
    metadata,
    _id(),
    Column("party_id", Integer, nullable=False),
    Column("position", Integer, nullable=False),
    Column("name", Text, nullable=False),
    Column("shown_date", Text),
    Column("platform_id", Integer),
    Column("production_type_id", Integer),
)
placings = Table(
    "placings",
    metadata,
    Column("competition_id", Integer, primary_key=True),
    Column("result_position", Integer, primary_key=True),  # among the competition's results
    Column("production_id", Integer, nullable=False),
    Column("production_position", Integer, nullable=False),  # among the production's placings
    Column("position", Integer),
    Column("ranking", Text, nullable=False),
    Column("score", Text, nullable=False),
    sqlite_with_rowid=False,
)

bbses = _named(
    "bbses",
    Column("location", Text, nullable=False),
    Column("country_code", Text, nullable=False),
    Column("latitude", Float),
    Column("longitude", Float),
    Column("tags", JSON, nullable=False),
)
bbses_details = _details("bbses")
bbs_tags = _tagged("bbs_tags", "bbs_id")
bbstros = _owned("bbstros", "bbs_id", Column("production_id", Integer, nullable=False))
bbs_staff = _owned(
    "bbs_staff",
    "bbs_id",
    Column("releaser_id", Integer, nullable=False),
    Column("role", Text, nullable=False),
    Column("is_current", Boolean, nullable=False),
)
bbs_affiliations = _owned(
    "bbs_affiliations",
    "bbs_id",
    Column("group_id", Integer, nullable=False),
    Column("role", Text, nullable=False),
)

productions = Table(
    "productions",
    metadata,
    _id(),
    Column("title", Text, nullable=False),
    Column("release_date", Text),
    Column("supertype", Text, nullable=False),
    Column("tags", JSON, nullable=False),
    Column("created_at", Text),
    Column("updated_at", Text),
    Column("sortable_title", Text, nullable=False),
    Column("title_key", Text, nullable=False),  # lower-cased title, for the title filter
    Column("release_date_key", Text),
    Column("has_screenshot", Boolean, nullable=False, default=False),
    Column("best_placing", Integer),  # its best competition position, for a filter
    _rank("id"),
    _rank("sortable_title"),
    _rank("release_date_date"),
    _rank("supertype"),
    _doc(),
)
productions_details = _details("productions")
production_tags = _tagged("production_tags", "production_id")
# role is "author" or "affiliation".
production_nicks = Table(
    "production_nicks",
    metadata,
    Column("production_id", Integer, primary_key=True),
    Column("role", Text, primary_key=True),
    Column("position", Integer, primary_key=True),
    Column("name", Text, nullable=False),
    Column("abbreviation", Text, nullable=False),
    Column("releaser_id", Integer, nullable=False),
    sqlite_with_rowid=False,
)
production_platforms = _owned(
    "production_platforms", "production_id", Column("platform_id", Integer, nullable=False)
)
production_type_links = _owned(
    "production_type_links",
    "production_id",
    Column("production_type_id", Integer, nullable=False),
)
credits = _owned(
    "credits",
    "production_id",
    Column("name", Text, nullable=False),
    Column("abbreviation", Text, nullable=False),
    Column("releaser_id", Integer, nullable=False),
    Column("category", Text, nullable=False),
    Column("role", Text, nullable=False),
)
production_links = _owned(
    "production_links",
    "production_id",
    Column("is_download", Boolean, nullable=False),
    Column("link_class", Text, nullable=False),
    Column("url", Text, nullable=False),
)
screenshots = _owned(
    "screenshots",
    "production_id",
    *(
        column
        for size in ("original", "standard", "thumbnail")
        for column in (
            Column(f"{size}_url", Text, nullable=False),
            Column(f"{size}_width", Integer),
            Column(f"{size}_height", Integer),
        )
    ),
)

# What only the /api/adhoc/ answers read (loader/adhoc_answers.py), kept while a catalogue is
# built: every link with its parameter (archived classes too), and what the export holds
# beyond the records; ``seq`` is the export's row order (its line), which breaks ties.
adhoc_links = Table(
    "adhoc_links",
    metadata,
    Column("owner", Text, primary_key=True),  # "production", "releaser" or "party"
    Column("owner_id", Integer, primary_key=True),
    Column("link_class", Text, primary_key=True),
    Column("seq", Integer, primary_key=True),
    Column("parameter", Text),  # None: a catalogue file's URL that gives none back
    Column("url", Text, nullable=False),
    Column("is_download", Boolean, nullable=False),
    sqlite_with_rowid=False,
)
adhoc_productions = Table(
    "adhoc_productions",
    metadata,
    Column("production_id", Integer, primary_key=True, autoincrement=False),
    Column("seq", Integer, nullable=False),
    Column("byline", Text),  # the upstream's unparsed byline, shown in place of the nicks
)
adhoc_nicks = _owned(
    "adhoc_nicks",
    "releaser_id",
    Column("seq", Integer, nullable=False),
    Column("differentiator", Text, nullable=False),
)
# Every /api/adhoc/ answer built at load: a path's body, per month for the month lists
# ("" for the others); a NUL byte stands for the site's host (shared.ADHOC_SITE_HOST).
adhoc_answers = Table(
    "adhoc_answers",
    metadata,
    Column("path", Text, primary_key=True),
    Column("month", Text, primary_key=True),
    Column("body", LargeBinary, nullable=False),
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

# Created only after the bulk insert, which is much faster than maintaining them row by row.
INDEXES = [
    Index("production_nicks_by_releaser", production_nicks.c.releaser_id, production_nicks.c.role),
    Index("production_platforms_by_platform", production_platforms.c.platform_id),
    Index("production_type_links_by_type", production_type_links.c.production_type_id),
    Index("production_links_by_url", production_links.c.url),
    Index("parties_by_party_series", parties.c.party_series_id),
    Index("productions_by_title_key", productions.c.title_key),
    Index("productions_by_created_at", productions.c.created_at),
    Index("productions_by_updated_at", productions.c.updated_at),
    Index("productions_by_best_placing", productions.c.best_placing),
    Index("releasers_by_is_group", releasers.c.is_group, releasers.c.id),
    Index("releasers_by_country_code", releasers.c.country_code),
    Index("releasers_by_created_at", releasers.c.created_at),
    Index("releasers_by_updated_at", releasers.c.updated_at),
    Index("bbses_by_country_code", bbses.c.country_code),
    Index("memberships_by_group", memberships.c.group_id, memberships.c.group_position),
    Index("party_releases_by_production", party_releases.c.production_id),
    Index("party_invitations_by_production", party_invitations.c.production_id),
    Index("competitions_by_party", competitions.c.party_id, competitions.c.position),
    Index("placings_by_production", placings.c.production_id, placings.c.position),
    Index("catalogue_loads_by_version", catalogue_loads.c.version, catalogue_loads.c.load_number),
]
# A page in a single key's order reads its records by rank. Where that order scatters the
# records over their table (unlike id, or a key of few values with ties by id), the rank's
# index holds the record too, so that a page reads a few neighbouring pages of the file
# instead of one per record: about 50 MB more for each key at 375,000 productions.
COVERED_RANKS = {"productions": ("rank_sortable_title", "rank_release_date_date")}
for _table in RECORD_TABLES.values():
    for _column in _table.columns:
        if _column.name.startswith("rank_"):
            _covered = _column.name in COVERED_RANKS.get(_table.name, ())
            _more = (_table.c.doc,) if _covered else ()
            INDEXES.append(Index(f"{_table.name}_by_{_column.name}", _column, *_more, unique=True))
# Raw sort keys, for lookups by value: every name key (the name filter's), and these.
# (Productions' are not indexed: their filters and orderings on several keys read
# in-memory arrays, listings/columns.py.)
RAW_KEYS = {"parties": ("start_date_key", "end_date_key", "country_code")}
for _table in RECORD_TABLES.values():
    _names = list(RAW_KEYS.get(_table.name, ()))
    if "name_key" in _table.c:
        _names.insert(0, "name_key")
    for _name in _names:
        INDEXES.append(Index(f"{_table.name}_by_{_name}", _table.c[_name], _table.c.id))


def expected_columns():
    """{table: {column, ...}} of the schema this server reads."""
    return {
        table.name: {column.name for column in table.columns} for table in metadata.sorted_tables
    }


def schema_mismatch(connection, expected):
    """What keeps the file's tables from being the ones this server reads, or None."""
    found = {}
    rows = connection.exec_driver_sql(
        "SELECT m.name, c.name FROM sqlite_master AS m, pragma_table_info(m.name) AS c "
        "WHERE m.type = 'table'"
    )
    for table, column in rows:
        found.setdefault(table, set()).add(column)
    if not found:
        raise ValueError("no tables: an empty file or not a database")
    for table, columns in expected.items():
        if table not in found:
            return f"no table {table}"
        if found[table] != columns:
            missing = sorted(columns - found[table])
            extra = sorted(found[table] - columns)
            return f"table {table}: " + "; ".join(
                part
                for part in (
                    missing and f"missing column {', '.join(missing)}",
                    extra and f"unknown column {', '.join(extra)}",
                )
                if part
            )
    return None
