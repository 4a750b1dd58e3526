"""Importing the upstream's daily database export (a plain-SQL pg_dump, gzipped or not).

The dump is read once, as a stream (``pgdump.read_tables``): the rows of the tables the
API needs are written into a staging database beside the new catalogue file, with the
dump line each came from. Once the whole dump has been read, foreign keys are checked
(an error names table, line and column), and the catalogue's tables are filled from the
staging tables with SQL, deriving every API field as the upstream does and each nested
list in the upstream's order (ties in the order of the dump's rows): see UPSTREAM.md.
The staging database is then removed, and the new file is built like any other load.
"""

import os
import sqlite3
from pathlib import Path

from .. import shared, tables
from ..resources import BY_NAME, LOAD_ORDER
from .link_classes import ARCHIVED, external_links_key, link_url
from .pgdump import DumpError, read_tables

INT, TEXT, BOOL, FLOAT, DATE, TIME = "int", "text", "bool", "float", "date", "timestamp"

# The tables and columns the API needs, with their types (UPSTREAM.md).
WANTED = {
    "productions_production": {
        "id": INT,
        "title": TEXT,
        "supertype": TEXT,
        "release_date_date": DATE,
        "release_date_precision": TEXT,
        "sortable_title": TEXT,
        "created_at": TIME,
        "updated_at": TIME,
    },
    "productions_production_platforms": {"production_id": INT, "platform_id": INT},
    "productions_production_types": {"production_id": INT, "productiontype_id": INT},
    "productions_production_author_nicks": {"production_id": INT, "nick_id": INT},
    "productions_production_author_affiliation_nicks": {"production_id": INT, "nick_id": INT},
    "productions_productiontype": {"id": INT, "path": TEXT, "name": TEXT, "internal_name": TEXT},
    "platforms_platform": {"id": INT, "name": TEXT},
    "demoscene_releaser": {
        "id": INT,
        "name": TEXT,
        "is_group": BOOL,
        "country_code": TEXT,
        "created_at": TIME,
        "updated_at": TIME,
    },
    "demoscene_nick": {"id": INT, "name": TEXT, "abbreviation": TEXT, "releaser_id": INT},
    "demoscene_nickvariant": {"name": TEXT, "nick_id": INT},
    "demoscene_membership": {"is_current": BOOL, "group_id": INT, "member_id": INT},
    "demoscene_releaserexternallink": {"link_class": TEXT, "parameter": TEXT, "releaser_id": INT},
    "productions_credit": {"category": TEXT, "role": TEXT, "nick_id": INT, "production_id": INT},
    "productions_productionlink": {
        "link_class": TEXT,
        "parameter": TEXT,
        "is_download_link": BOOL,
        "production_id": INT,
    },
    "productions_screenshot": {
        "production_id": INT,
        **{
            f"{size}_{what}": TEXT if what == "url" else INT
            for size in ("original", "standard", "thumbnail")
            for what in ("url", "width", "height")
        },
    },
    "parties_partyseries": {"id": INT, "name": TEXT, "website": TEXT},
    "parties_party": {
        "id": INT,
        "name": TEXT,
        "tagline": TEXT,
        "start_date_date": DATE,
        "start_date_precision": TEXT,
        "end_date_date": DATE,
        "end_date_precision": TEXT,
        "is_online": BOOL,
        "location": TEXT,
        "country_code": TEXT,
        "latitude": FLOAT,
        "longitude": FLOAT,
        "website": TEXT,
        "party_series_id": INT,
    },
    "parties_party_releases": {"party_id": INT, "production_id": INT},
    "parties_party_invitations": {"party_id": INT, "production_id": INT},
    "parties_competition": {
        "id": INT,
        "name": TEXT,
        "shown_date_date": DATE,
        "shown_date_precision": TEXT,
        "party_id": INT,
        "platform_id": INT,
        "production_type_id": INT,
    },
    "parties_competitionplacing": {
        "ranking": TEXT,
        "position": INT,
        "score": TEXT,
        "competition_id": INT,
        "production_id": INT,
    },
    "parties_partyexternallink": {"link_class": TEXT, "parameter": TEXT, "party_id": INT},
    "taggit_tag": {"id": INT, "name": TEXT},
    "taggit_taggeditem": {"id": INT, "object_id": INT, "content_type_id": INT, "tag_id": INT},
    "django_content_type": {"id": INT, "app_label": TEXT, "model": TEXT},
}

# (table, column, referenced table): every reference the API follows must resolve.
FOREIGN_KEYS = [
    ("productions_production_platforms", "production_id", "productions_production"),
    ("productions_production_platforms", "platform_id", "platforms_platform"),
    ("productions_production_types", "production_id", "productions_production"),
    ("productions_production_types", "productiontype_id", "productions_productiontype"),
    ("productions_production_author_nicks", "production_id", "productions_production"),
    ("productions_production_author_nicks", "nick_id", "demoscene_nick"),
    ("productions_production_author_affiliation_nicks", "production_id", "productions_production"),
    ("productions_production_author_affiliation_nicks", "nick_id", "demoscene_nick"),
    ("demoscene_nick", "releaser_id", "demoscene_releaser"),
    ("demoscene_nickvariant", "nick_id", "demoscene_nick"),
    ("demoscene_membership", "group_id", "demoscene_releaser"),
    ("demoscene_membership", "member_id", "demoscene_releaser"),
    ("demoscene_releaserexternallink", "releaser_id", "demoscene_releaser"),
    ("productions_credit", "nick_id", "demoscene_nick"),
    ("productions_credit", "production_id", "productions_production"),
    ("productions_productionlink", "production_id", "productions_production"),
    ("productions_screenshot", "production_id", "productions_production"),
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
    ("taggit_taggeditem", "tag_id", "taggit_tag"),
    ("taggit_taggeditem", "content_type_id", "django_content_type"),
]

# Columns whose NULL the API cannot show.
REQUIRED = {
    "productions_production": ("title", "supertype", "sortable_title"),
    "demoscene_releaser": ("name", "is_group"),
    "demoscene_nick": ("name", "releaser_id"),
    "parties_party": ("name", "start_date_date", "end_date_date", "is_online"),
    "platforms_platform": ("name",),
    "productions_productiontype": ("name", "path"),
    "parties_partyseries": ("name",),
    "parties_competition": ("name", "party_id"),
}
# Resources that declare their own part of the import (Resource.upstream).
DECLARED = [BY_NAME[name].upstream for name in LOAD_ORDER if BY_NAME[name].upstream is not None]
for _declared in DECLARED:
    WANTED.update(_declared.tables)
    FOREIGN_KEYS.extend(_declared.foreign_keys)
    REQUIRED.update(_declared.required)
STAGING_BATCH = 10_000


def _partial_date(value, precision):
    """The upstream's partial date from a date column and its precision column."""
    if value is None or not precision:
        return None
    return {"y": value[:4], "m": value[:7], "d": value}.get(precision)


def _empty_to_none(value):
    return value or None


def _link_url(link_class, parameter):
    try:
        return link_url(link_class, parameter)
    except ValueError:
        return None


FUNCTIONS = {
    "partial_date": (2, _partial_date),
    "date_key": (1, shared.date_key),
    "name_key": (1, shared.name_key),
    "py_lower": (1, lambda text: None if text is None else text.lower()),
    "link_url": (2, _link_url),
    "external_links_key": (1, external_links_key),
    "empty_to_none": (1, _empty_to_none),
}


def import_dump(source, builder, progress):
    """Fill ``builder``'s new file from the dump ``source``. Returns the number of
    records of each resource. Raises DumpError naming table, line and column for bad input."""
    target = Path(builder.path)
    # Named after the new file, so that a killed load's is removed with it.
    staging_path = target.with_name(f"{target.name}.staging")
    staging = sqlite3.connect(staging_path)
    try:
        for pragma in ("journal_mode = OFF", "synchronous = OFF", "cache_size = -65536"):
            staging.execute(f"PRAGMA {pragma}")
        _stage(source, staging, progress)
        progress.stage("checking references")
        _index(staging)
        _check(staging)
        staging.commit()
        staging.close()
        staging = None
        connection = builder.raw_connection()
        for name, (arguments, function) in FUNCTIONS.items():
            connection.create_function(name, arguments, function, deterministic=True)
        connection.commit()  # ATTACH cannot run inside a transaction
        connection.execute("ATTACH DATABASE ? AS stage", (str(staging_path),))
        try:
            progress.stage("deriving records")
            _fill(connection)
            counts = {  # every registered resource's records
                name: connection.execute(f"SELECT count(*) FROM main.{table.name}").fetchone()[0]
                for name, table in tables.RECORD_TABLES.items()
            }
        finally:
            connection.commit()
            connection.execute("DETACH DATABASE stage")
        return counts
    finally:
        if staging is not None:
            staging.close()
        staging_path.unlink(missing_ok=True)


def _stage(source, staging, progress):
    """Write every wanted row into a staging table of its name, with its dump line."""
    for table, columns in WANTED.items():
        definition = ", ".join(
            f'"{name}"' + (" PRIMARY KEY" if name == "id" else "") for name in columns
        )
        staging.execute(f'CREATE TABLE "{table}" ({definition}, line INTEGER NOT NULL)')
    statements = {
        table: f'INSERT INTO "{table}" VALUES ({", ".join("?" * (len(columns) + 1))})'
        for table, columns in WANTED.items()
    }
    pending = {table: [] for table in WANTED}
    progress.file_started(Path(source).name, os.path.getsize(source))
    last = [0]

    def report(read, table, rows):
        progress.advanced(read - last[0], 0)
        progress.reading(table, rows)
        last[0] = read

    for table, line, row in read_tables(source, WANTED, report):
        rows = pending[table]
        rows.append((*row, line))
        if len(rows) >= STAGING_BATCH:
            _insert(staging, statements[table], table, rows)
    for table, rows in pending.items():
        _insert(staging, statements[table], table, rows)
    progress.file_finished(Path(source).name, 0)


def _insert(staging, statement, table, rows):
    if not rows:
        return
    try:
        staging.executemany(statement, rows)
    except sqlite3.IntegrityError:
        seen = {}
        for *values, line in rows:
            record_id = values[0]
            existing = staging.execute(
                f'SELECT line FROM "{table}" WHERE id = ?', (record_id,)
            ).fetchone()
            if record_id in seen or existing:
                first = seen.get(record_id) or existing[0]
                raise DumpError(
                    f"{table}:{line}: id: duplicate id {record_id} (first on line {first})"
                ) from None
            seen[record_id] = line
        raise
    rows.clear()


def _index(staging):
    """Every staged reference column, indexed: the checks and the derivations join on
    them."""
    for table, column, _ in FOREIGN_KEYS:
        staging.execute(f'CREATE INDEX "{table}_by_{column}" ON "{table}" ("{column}")')
    staging.execute(
        "CREATE INDEX taggeditem_by_object ON taggit_taggeditem (content_type_id, object_id, id)"
    )


def _check(staging):
    """Every reference resolves and every required value is present."""
    for table, columns in REQUIRED.items():
        for column in columns:
            found = staging.execute(
                f'SELECT line FROM "{table}" WHERE "{column}" IS NULL LIMIT 1'
            ).fetchone()
            if found:
                raise DumpError(f"{table}:{found[0]}: {column}: no value (NULL)")
    for table, column, referenced in FOREIGN_KEYS:
        found = staging.execute(
            f'SELECT c.line, c."{column}" FROM "{table}" c LEFT JOIN "{referenced}" r '
            f'ON r.id = c."{column}" WHERE c."{column}" IS NOT NULL AND r.id IS NULL LIMIT 1'
        ).fetchone()
        if found:
            raise DumpError(
                f"{table}:{found[0]}: {column}: no row with id {found[1]} in {referenced}"
            )
    for table, column in (("productions_production", "supertype"),):
        found = staging.execute(
            f'SELECT line, "{column}" FROM "{table}" WHERE "{column}" NOT IN '
            f"({', '.join(repr(value) for value in shared.SUPERTYPES)}) LIMIT 1"
        ).fetchone()
        if found:
            raise DumpError(f"{table}:{found[0]}: {column}: {found[1]!r} is not a supertype")


def _type_supertypes(connection):
    """{production type id: supertype}: by the type tree's materialised paths."""
    types = connection.execute(
        "SELECT id, path, internal_name FROM stage.productions_productiontype"
    ).fetchall()
    roots = {internal: path for _, path, internal in types if internal in ("music", "graphics")}
    result = {}
    for type_id, path, _ in types:
        result[type_id] = next(
            (name for name, root in roots.items() if path.startswith(root)), "production"
        )
    return result


def _fill(connection):
    execute = connection.execute
    execute(
        "INSERT INTO main.platforms (id, name, name_key) "
        "SELECT id, name, name_key(name) FROM stage.platforms_platform"
    )
    supertypes = _type_supertypes(connection)
    connection.executemany(
        "INSERT INTO main.production_types (id, name, supertype, name_key) "
        "SELECT id, name, ?, name_key(name) FROM stage.productions_productiontype WHERE id = ?",
        [(supertype, type_id) for type_id, supertype in supertypes.items()],
    )
    execute(
        "INSERT INTO main.releasers (id, name, is_group, country_code, created_at, updated_at, "
        "name_key) SELECT id, name, is_group, empty_to_none(country_code), created_at, "
        "updated_at, name_key(name) FROM stage.demoscene_releaser"
    )
    _nicks(connection)
    # Nested lists joined to the releaser table follow its rows' order (UPSTREAM.md).
    execute(
        "INSERT INTO main.memberships (member_id, group_id, is_current, member_position, "
        "group_position) SELECT m.member_id, m.group_id, m.is_current, "
        "row_number() OVER (PARTITION BY m.member_id ORDER BY g.line, m.line), "
        "row_number() OVER (PARTITION BY m.group_id ORDER BY r.line, m.line) "
        "FROM stage.demoscene_membership m "
        "JOIN stage.demoscene_releaser g ON g.id = m.group_id "
        "JOIN stage.demoscene_releaser r ON r.id = m.member_id "
        "WHERE true ON CONFLICT DO NOTHING"
    )
    _links(connection, "demoscene_releaserexternallink", "releaser_id", "releaser_links")
    execute(
        "INSERT INTO main.party_series (id, name, website, name_key) "
        "SELECT id, name, coalesce(website, ''), name_key(name) FROM stage.parties_partyseries"
    )
    execute(
        "INSERT INTO main.parties (id, name, tagline, start_date, end_date, location, "
        "is_online, country_code, latitude, longitude, website, party_series_id, "
        "series_position, name_key, start_date_key, end_date_key) "
        "SELECT id, name, coalesce(tagline, ''), "
        "partial_date(start_date_date, start_date_precision), "
        "partial_date(end_date_date, end_date_precision), coalesce(location, ''), is_online, "
        "coalesce(country_code, ''), latitude, longitude, coalesce(website, ''), "
        "party_series_id, CASE WHEN party_series_id IS NULL THEN NULL ELSE "
        "row_number() OVER (PARTITION BY party_series_id ORDER BY name, line) END, "
        "name_key(name), date_key(partial_date(start_date_date, start_date_precision)), "
        "date_key(partial_date(end_date_date, end_date_precision)) FROM stage.parties_party"
    )
    bad = execute(
        "SELECT p.id FROM main.parties p WHERE p.start_date IS NULL OR p.end_date IS NULL LIMIT 1"
    ).fetchone()
    if bad:
        line = execute("SELECT line FROM stage.parties_party WHERE id = ?", bad).fetchone()[0]
        raise DumpError(f"parties_party:{line}: start_date_precision: not y, m or d")
    _links(connection, "parties_partyexternallink", "party_id", "party_links")
    execute(
        "INSERT INTO main.competitions (id, party_id, position, name, shown_date, platform_id, "
        "production_type_id) SELECT id, party_id, "
        "row_number() OVER (PARTITION BY party_id ORDER BY name, id), name, "
        "partial_date(shown_date_date, shown_date_precision), platform_id, production_type_id "
        "FROM stage.parties_competition"
    )
    _productions(connection)
    for source, target in (
        ("parties_party_releases", "party_releases"),
        ("parties_party_invitations", "party_invitations"),
    ):
        execute(
            f"INSERT INTO main.{target} (party_id, production_id, party_position, "
            "production_position) SELECT l.party_id, l.production_id, "
            "row_number() OVER (PARTITION BY l.party_id ORDER BY p.sortable_title, l.line), "
            "row_number() OVER (PARTITION BY l.production_id ORDER BY y.name, l.line) "
            f"FROM stage.{source} l "
            "JOIN stage.productions_production p ON p.id = l.production_id "
            "JOIN stage.parties_party y ON y.id = l.party_id WHERE true ON CONFLICT DO NOTHING"
        )
    execute(
        "INSERT INTO main.placings (competition_id, result_position, production_id, "
        "production_position, position, ranking, score) SELECT competition_id, "
        "row_number() OVER (PARTITION BY competition_id "
        "ORDER BY position IS NULL, position, line), production_id, "
        "row_number() OVER (PARTITION BY production_id ORDER BY line), position, "
        "coalesce(ranking, ''), coalesce(score, '') FROM stage.parties_competitionplacing"
    )
    for declared in DECLARED:
        _fill_declared(connection, declared)


def _nicks(connection):
    """Each releaser's nicks by name, with their variants by name."""
    connection.execute(
        "INSERT INTO main.releaser_nicks (releaser_id, position, name, abbreviation, variants) "
        "SELECT n.releaser_id, row_number() OVER (PARTITION BY n.releaser_id "
        "ORDER BY n.name, n.line), n.name, coalesce(n.abbreviation, ''), "
        "coalesce((SELECT json_group_array(name) FROM (SELECT v.name FROM "
        "stage.demoscene_nickvariant v WHERE v.nick_id = n.id ORDER BY v.name, v.line)), '[]') "
        "FROM stage.demoscene_nick n"
    )


def _links(connection, source, owner, target, download=None):
    """Links of a releaser or party, archived classes left out, by class."""
    archived = ", ".join("?" * len(ARCHIVED))
    connection.execute(
        f"INSERT INTO main.{target} ({owner}, position, link_class, url) "
        f"SELECT {owner}, row_number() OVER (PARTITION BY {owner} ORDER BY link_class, line), "
        f"link_class, link_url(link_class, parameter) FROM stage.{source} "
        f"WHERE link_class NOT IN ({archived})",
        sorted(ARCHIVED),
    )
    _check_urls(connection, target, source)


def _check_urls(connection, target, source):
    found = connection.execute(f"SELECT 1 FROM main.{target} WHERE url IS NULL LIMIT 1").fetchone()
    if found:
        row = connection.execute(
            f"SELECT line, link_class, parameter FROM stage.{source} "
            "WHERE link_url(link_class, parameter) IS NULL LIMIT 1"
        ).fetchone()
        raise DumpError(f"{source}:{row[0]}: parameter: {row[2]!r} is not a link of class {row[1]}")


def _content_type(connection, app_label, model):
    found = connection.execute(
        "SELECT id FROM stage.django_content_type WHERE app_label = ? AND model = ?",
        (app_label, model),
    ).fetchone()
    return found[0] if found else -1


def _tags(connection, app_label, model):
    return (
        "coalesce((SELECT json_group_array(name) FROM (SELECT t.name FROM "
        "stage.taggit_taggeditem i JOIN stage.taggit_tag t ON t.id = i.tag_id "
        f"WHERE i.content_type_id = {int(_content_type(connection, app_label, model))} "
        "AND i.object_id = r.id ORDER BY i.id)), '[]')"
    )


def _productions(connection):
    execute = connection.execute
    execute(
        "INSERT INTO main.productions (id, title, release_date, supertype, tags, created_at, "
        "updated_at, sortable_title, title_key, release_date_key, has_screenshot) "
        "SELECT r.id, r.title, partial_date(r.release_date_date, r.release_date_precision), "
        f"r.supertype, {_tags(connection, 'productions', 'production')}, r.created_at, "
        "r.updated_at, r.sortable_title, py_lower(r.title), "
        "date_key(partial_date(r.release_date_date, r.release_date_precision)), "
        # A screenshot counts once it has a thumbnail, as upstream.
        "EXISTS (SELECT 1 FROM stage.productions_screenshot s WHERE s.production_id = r.id "
        "AND s.thumbnail_url != '') "
        "FROM stage.productions_production r"
    )
    for source, role in (
        ("productions_production_author_nicks", "author"),
        ("productions_production_author_affiliation_nicks", "affiliation"),
    ):
        execute(
            "INSERT INTO main.production_nicks (production_id, role, position, name, "
            "abbreviation, releaser_id) SELECT l.production_id, ?, "
            "row_number() OVER (PARTITION BY l.production_id ORDER BY n.name, l.line), n.name, "
            f"coalesce(n.abbreviation, ''), n.releaser_id FROM stage.{source} l "
            "JOIN stage.demoscene_nick n ON n.id = l.nick_id WHERE true ON CONFLICT DO NOTHING",
            (role,),
        )
    execute(
        "INSERT INTO main.production_platforms (production_id, position, platform_id) "
        "SELECT l.production_id, row_number() OVER (PARTITION BY l.production_id "
        "ORDER BY py_lower(p.name), l.line), l.platform_id "
        "FROM stage.productions_production_platforms l "
        "JOIN stage.platforms_platform p ON p.id = l.platform_id"
    )
    execute(
        "INSERT INTO main.production_type_links (production_id, position, production_type_id) "
        "SELECT l.production_id, row_number() OVER (PARTITION BY l.production_id "
        "ORDER BY t.path, l.line), l.productiontype_id "
        "FROM stage.productions_production_types l "
        "JOIN stage.productions_productiontype t ON t.id = l.productiontype_id"
    )
    # Credits and screenshots unqualified: the builder keeps them in its scratch file.
    execute(
        "INSERT INTO credits (production_id, position, name, abbreviation, releaser_id, "
        "category, role) SELECT c.production_id, row_number() OVER "
        "(PARTITION BY c.production_id ORDER BY c.line), n.name, coalesce(n.abbreviation, ''), "
        "n.releaser_id, coalesce(c.category, ''), coalesce(c.role, '') "
        "FROM stage.productions_credit c JOIN stage.demoscene_nick n ON n.id = c.nick_id"
    )
    archived = ", ".join("?" * len(ARCHIVED))
    # Download links by class, then external links with BaseUrl first, then by class.
    execute(
        "INSERT INTO main.production_links (production_id, position, is_download, link_class, "
        "url) SELECT production_id, row_number() OVER (PARTITION BY production_id "
        "ORDER BY NOT is_download_link, CASE WHEN is_download_link THEN link_class "
        "ELSE external_links_key(link_class) END, line), is_download_link, link_class, "
        "link_url(link_class, parameter) FROM stage.productions_productionlink "
        f"WHERE link_class NOT IN ({archived})",
        sorted(ARCHIVED),
    )
    _check_urls(connection, "production_links", "productions_productionlink")
    execute(
        "INSERT INTO screenshots SELECT production_id, row_number() OVER "
        "(PARTITION BY production_id ORDER BY line), coalesce(original_url, ''), "
        "original_width, original_height, coalesce(standard_url, ''), standard_width, "
        "standard_height, coalesce(thumbnail_url, ''), thumbnail_width, thumbnail_height "
        "FROM stage.productions_screenshot"
    )


def _fill_declared(connection, declared):
    """A resource's tables filled as its declaration says (``storage.Upstream``)."""
    tags = _tags(connection, *declared.tags) if declared.tags else None
    for fill in declared.fills:
        expressions = ", ".join(
            expression.replace("{tags}", tags) if tags else expression
            for expression in fill.columns.values()
        )
        connection.execute(
            f"INSERT INTO main.{fill.table.name} ({', '.join(fill.columns)}) "
            f"SELECT {expressions} {fill.source}"
        )
