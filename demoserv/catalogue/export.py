"""Writing the served catalogue back as a catalogue folder, in the format it loads from:
each record's detail fields, nested records that are records of their own reduced to
their ids, and each relation shown from two sides written once, on the party's, the
member's or the party's side (a load derives the other side)."""

import os
from pathlib import Path

import orjson
from sqlalchemy import select

from .. import tables
from ..resources import BY_NAME, LOAD_ORDER
from ..stored import RecordCodec

BATCH = 1000
# Fields written by the other side of their relation.
OTHER_SIDE = {
    "productions": ("release_parties", "invitation_parties", "competition_placings"),
    "releasers": ("members", "subgroups"),
    "party_series": ("parties",),
}
# Stored values the API does not show, which filters use.
HIDDEN = {
    "productions": ("created_at", "updated_at"),
    "releasers": ("country_code", "created_at", "updated_at"),
}


def _id(record):
    return None if record is None else record["id"]


def _without_address(record):
    return {name: value for name, value in record.items() if name not in ("url", "service_url")}


def _nick(nick):
    return {**nick, "releaser": _without_address(nick["releaser"])}


def _file_record(resource, record):
    """A detail record as its catalogue line."""
    record = _without_address(record)
    for name in OTHER_SIDE.get(resource, ()):
        record.pop(name, None)
    if resource == "productions":
        for field in ("author_nicks", "author_affiliation_nicks"):
            record[field] = [_nick(nick) for nick in record[field]]
        record["credits"] = [
            {**credit, "nick": _nick(credit["nick"])} for credit in record["credits"]
        ]
        record["platforms"] = [_without_address(item) for item in record["platforms"]]
        record["types"] = [_without_address(item) for item in record["types"]]
    elif resource == "parties":
        record["party_series"] = _id(record["party_series"])
        record["invitations"] = [_id(item) for item in record["invitations"]]
        record["releases"] = [_id(item) for item in record["releases"]]
        record["competitions"] = [
            {
                **_without_address(competition),
                "platform": _id(competition["platform"]),
                "production_type": _id(competition["production_type"]),
                "results": [
                    {**result, "production": _id(result["production"])}
                    for result in competition["results"]
                ],
            }
            for competition in record["competitions"]
        ]
    elif resource == "releasers":
        record["nicks"] = [
            {name: value for name, value in nick.items() if name != "is_primary_nick"}
            for nick in record["nicks"]
        ]
        record["member_of"] = [
            {**membership, "group": _id(membership["group"])} for membership in record["member_of"]
        ]
    elif resource == "bbses":
        record["bbstros"] = [_id(item) for item in record["bbstros"]]
        record["staff"] = [{**item, "releaser": _id(item["releaser"])} for item in record["staff"]]
        record["affiliations"] = [
            {**item, "group": _id(item["group"])} for item in record["affiliations"]
        ]
    return record


def export_catalogue(connection, target):
    """Write every resource of the catalogue on ``connection`` to the folder ``target``,
    each file in id order. Returns the number of records of each resource."""
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name in LOAD_ORDER:
        resource = BY_NAME[name]
        path = target / f"{name}.jsonl"
        partial = path.with_name(f".{path.name}.partial")
        count = 0
        with partial.open("wb") as out:
            for record in _records(connection, resource):
                out.write(orjson.dumps(_file_record(name, record)) + b"\n")
                count += 1
        os.replace(partial, path)
        counts[name] = count
    return counts


def _records(connection, resource):
    """The detail records of ``resource`` in id order, with the hidden values."""
    table = resource.table
    documents = resource.details_table if resource.details_table is not None else table
    hidden = [table.c[name] for name in HIDDEN.get(resource.name, ())]
    codec = RecordCodec(
        connection.execute(
            select(tables.dictionaries.c.data).where(
                tables.dictionaries.c.resource == resource.name,
                tables.dictionaries.c.kind == ("list" if documents is table else "detail"),
            )
        ).scalar()
    )
    last_id = 0
    while True:
        query = (
            (
                select(documents.c.id, documents.c.doc, *hidden)
                .join(table, table.c.id == documents.c.id)
                .where(documents.c.id > last_id)
                .order_by(documents.c.id)
                .limit(BATCH)
            )
            if documents is not table
            else (
                select(table.c.id, table.c.doc, *hidden)
                .where(table.c.id > last_id)
                .order_by(table.c.id)
                .limit(BATCH)
            )
        )
        rows = connection.execute(query).all()
        if not rows:
            return
        for record_id, doc, *values in rows:
            record = orjson.loads(codec.marked(doc))
            for column, value in zip(hidden, values):
                if value is not None:
                    record[str(column.name)] = value
            yield record
        last_id = rows[-1][0]
