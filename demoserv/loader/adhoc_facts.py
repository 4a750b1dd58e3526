"""What the ``/api/adhoc/`` answers read beyond the records (``tables.adhoc_*``): every
link with its parameter (archived classes too), nicks' differentiators, productions'
unparsed bylines, and each row's line in the upstream's export (``seq``), which breaks
ties as the upstream's database does.

The import fills them from the export (``UPSTREAM``). The built file keeps them, so that
an export writes them to the catalogue folder's ``adhoc.jsonl`` (``write_file``) and a
load of the folder reads them back (``read_file``): export then load gives the same
answers. What the file does not give (no file, or records added by hand) is derived
from the records (``derive``): links' parameters read back from their URLs, ties in id
and list order, no differentiator nor byline.
"""

import os

import orjson
from marshmallow import ValidationError, fields, validate, validates_schema
from sqlalchemy import func, select

from ..store import tables
from . import adhoc_values as values
from . import records
from .files import ADHOC_FILE, read_records
from .resources import storage

BATCH = 5000  # rows per INSERT
# The export's link tables: owner -> (table, owner column).
LINK_TABLES = {
    "production": ("productions_productionlink", "production_id"),
    "releaser": ("demoscene_releaserexternallink", "releaser_id"),
    "party": ("parties_partyexternallink", "party_id"),
}
# The catalogue's link tables and record tables, for a catalogue loaded from files.
CATALOGUE_LINKS = {
    "production": (tables.production_links, "production_id", "is_download"),
    "releaser": (tables.releaser_links, "releaser_id", "0"),
    "party": (tables.party_links, "party_id", "0"),
}
OWNERS = {"production": tables.productions, "releaser": tables.releasers, "party": tables.parties}


def _id_check(owner, link_class):
    table, _ = LINK_TABLES[owner]
    return (
        f"SELECT line FROM stage.{table} WHERE link_class = '{link_class}' "
        "AND NOT adhoc_is_id(parameter) ORDER BY line LIMIT 1",
        f"{table}:{{line}}: parameter: not a {link_class} id (a number)",
    )


def _links_fill(owner, checks):
    table, column = LINK_TABLES[owner]
    return storage.Fill(
        tables.adhoc_links,
        {
            "owner": f"'{owner}'",
            "owner_id": column,
            "seq": "line",
            "link_class": "link_class",
            "parameter": "parameter",
            "url": "coalesce(link_url(link_class, parameter), '')",
            "is_download": "is_download_link" if owner == "production" else "0",
        },
        f"FROM stage.{table}",
        checks=checks,
    )


# The import's part: what it stages beyond the records' own columns, and the rows of
# the tables above, with the checks of the values the upstream reads as numbers.
UPSTREAM = storage.Upstream(
    tables={
        "productions_production": {"unparsed_byline": "text"},
        "demoscene_nick": {"differentiator": "text"},
    },
    functions={
        "adhoc_is_id": (1, lambda connection: values.is_id),
        "adhoc_is_pouet_party": (1, lambda connection: values.is_pouet_party),
    },
    fills=(
        _links_fill(
            "production",
            (_id_check("production", "PouetProduction"), _id_check("production", "ZxdemoItem")),
        ),
        _links_fill(
            "releaser",
            (_id_check("releaser", "PouetGroup"), _id_check("releaser", "ZxdemoAuthor")),
        ),
        _links_fill(
            "party",
            (
                _id_check("party", "ZxdemoParty"),
                (
                    "SELECT line FROM stage.parties_partyexternallink WHERE link_class = "
                    "'PouetParty' AND NOT adhoc_is_pouet_party(parameter) ORDER BY line LIMIT 1",
                    "parties_partyexternallink:{line}: parameter: not a PouetParty parameter "
                    "(<pouet id>/<year>, two numbers)",
                ),
            ),
        ),
        storage.Fill(
            tables.adhoc_productions,
            {"production_id": "id", "seq": "line", "byline": "nullif(unparsed_byline, '')"},
            "FROM stage.productions_production",
        ),
        # Positioned as releaser_nicks are (by name, then line), to be joined to them.
        storage.Fill(
            tables.adhoc_nicks,
            {
                "releaser_id": "releaser_id",
                "position": "row_number() OVER (PARTITION BY releaser_id ORDER BY name, line)",
                "seq": "line",
                "differentiator": "coalesce(differentiator, '')",
            },
            "FROM stage.demoscene_nick",
        ),
    ),
)


# A line of adhoc.jsonl: one row of one of the tables, under the table's key.
class _Link(records.RecordSchema):
    owner = fields.String(required=True, validate=validate.OneOf(list(OWNERS)))
    owner_id = records.id_field()
    link_class = records.text(validate=validate.Length(min=1))
    seq = records.StrictInteger(required=True)
    parameter = records.Text(required=True, allow_none=True)
    url = records.text()
    is_download = records.StrictBoolean(required=True)


class _Production(records.RecordSchema):
    production_id = records.id_field()
    seq = records.StrictInteger(required=True)
    byline = records.Text(required=True, allow_none=True)


class _Nick(records.RecordSchema):
    releaser_id = records.id_field()
    position = records.StrictInteger(required=True, validate=validate.Range(0))
    seq = records.StrictInteger(required=True)
    differentiator = records.text()


KINDS = {
    "link": (tables.adhoc_links, _Link),
    "production": (tables.adhoc_productions, _Production),
    "nick": (tables.adhoc_nicks, _Nick),
}


class _Line(records.RecordSchema):
    link = fields.Nested(_Link)
    production = fields.Nested(_Production)
    nick = fields.Nested(_Nick)

    @validates_schema(pass_original=True)
    def _one_kind(self, data, original, **kwargs):
        given = [kind for kind in KINDS if kind in original]
        if len(given) != 1:
            raise ValidationError(f"give exactly one of {', '.join(KINDS)}.", "record")


def write_file(connection, target):
    """Write the rows of the tables above on ``connection`` to ``target`` (a folder), in
    each table's key order; a nick's position as its place in its releaser's list (from
    0, as a load of the folder positions the releaser's nicks)."""
    path = target / ADHOC_FILE
    partial = path.with_name(f".{path.name}.partial")
    with partial.open("wb") as out:
        for kind, (table, _) in KINDS.items():
            columns = list(table.columns)
            if table is tables.adhoc_nicks:
                place = func.row_number().over(
                    partition_by=table.c.releaser_id, order_by=table.c.position
                )
                columns[1] = (place - 1).label("position")
            query = select(*columns).order_by(*table.primary_key.columns)
            for row in connection.execute(query).mappings():
                item = {str(name): value for name, value in row.items()}
                out.write(orjson.dumps({kind: item}) + b"\n")
    os.replace(partial, path)


def read_file(builder, path, report):
    """The rows of ``path`` (a folder's adhoc.jsonl) into the tables above, those of
    records the folder does not hold left out (a key given twice: its first line)."""
    raw = builder.raw_connection()
    pending = {kind: [] for kind in KINDS}

    def flush(kind):
        table = KINDS[kind][0]
        names = [column.name for column in table.columns]
        raw.executemany(
            f"INSERT OR IGNORE INTO {table.name} ({', '.join(names)}) "
            f"VALUES ({', '.join('?' * len(names))})",
            [[row[name] for name in names] for row in pending[kind]],
        )
        pending[kind].clear()

    for _, line in read_records(path, _Line(), report):
        ((kind, row),) = line.items()
        pending[kind].append(row)
        if len(pending[kind]) >= BATCH:
            flush(kind)
    for kind in KINDS:
        flush(kind)
    for owner, table in OWNERS.items():
        raw.execute(
            f"DELETE FROM {tables.adhoc_links.name} WHERE owner = ? "
            f"AND owner_id NOT IN (SELECT id FROM main.{table.name})",
            (owner,),
        )
    raw.execute(
        f"DELETE FROM {tables.adhoc_productions.name} "
        f"WHERE production_id NOT IN (SELECT id FROM main.{tables.productions.name})"
    )
    nicks = tables.adhoc_nicks.name
    raw.execute(
        f"DELETE FROM {nicks} WHERE NOT EXISTS (SELECT 1 FROM "
        f"main.{tables.releaser_nicks.name} AS n WHERE n.releaser_id = {nicks}.releaser_id "
        f"AND n.position = {nicks}.position)"
    )


def derive(builder):
    """The rows of the records that ``read_file`` gave none for, from the records: each
    link's parameter read back from its URL, ties in id and list order, no
    differentiator nor byline."""
    raw = builder.raw_connection()
    raw.create_function("adhoc_parameter", 2, values.parameter_from_url, deterministic=True)
    links = tables.adhoc_links.name
    for owner, (table, column, is_download) in CATALOGUE_LINKS.items():
        raw.execute(
            f"INSERT INTO {links} (owner, owner_id, seq, link_class, parameter, url, "
            f"is_download) SELECT '{owner}', {column}, "
            f"row_number() OVER (ORDER BY {column}, position), link_class, "
            f"adhoc_parameter(link_class, url), url, {is_download} FROM main.{table.name} AS l "
            f"WHERE NOT EXISTS (SELECT 1 FROM {links} AS a WHERE a.owner = '{owner}' "
            f"AND a.owner_id = l.{column})"
        )
    raw.execute(
        f"INSERT INTO {tables.adhoc_productions.name} (production_id, seq) "
        f"SELECT id, id FROM main.{tables.productions.name} WHERE id NOT IN "
        f"(SELECT production_id FROM {tables.adhoc_productions.name})"
    )
    nicks = tables.adhoc_nicks.name
    raw.execute(
        f"INSERT INTO {nicks} (releaser_id, position, seq, differentiator) "
        "SELECT releaser_id, position, row_number() OVER (ORDER BY releaser_id, position), '' "
        f"FROM main.{tables.releaser_nicks.name} AS n WHERE NOT EXISTS (SELECT 1 FROM "
        f"{nicks} AS a WHERE a.releaser_id = n.releaser_id AND a.position = n.position)"
    )
