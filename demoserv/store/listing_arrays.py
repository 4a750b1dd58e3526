"""The listing arrays, built at load and read by the server (``listing_index``): each
resource's sort and filter columns stored in ``listing_columns`` as arrays in id order.
For every ordering key, the record's rank (its position in that key's order) and its
group (the dense rank of its value: equal values, equal groups); the columns its
filters read; and for a searched resource, its folded search texts. Imported by the
catalogue build, so it imports nothing of Flask."""

import functools

import numpy as np
from sqlalchemy import func, select

from . import tables
from .values import search_fold

CHUNK = 20_000  # rows read at a time when the columns are built
# The folded search texts: each record's text and a separator (a term holds no space),
# and for every byte the record it belongs to, as the first record of its block of
# 2**TEXT_BLOCK bytes plus one byte (a block meets at most 256 records).
TEXT_SEPARATOR = b"\n"
TEXT_BLOCK = 8


def _dense_rank(column):
    order = column.asc().nulls_last() if column.nullable else column.asc()
    return func.dense_rank().over(order_by=order)


def build_columns(connection, resource):
    """The arrays ``columns.Columns`` reads, as (name, numpy array), from the record
    table, one at a time: each is read by its own query and made at its full length, a
    chunk of rows at a time, so memory holds one array (a few bytes a record) and one
    chunk of rows, whatever the number of arrays."""
    table = resource.table
    selected = [table.c.id.label("id")]
    for name, key in resource.sort_keys.items():
        selected.append(key.rank.label(f"rank:{name}"))
        selected.append(_dense_rank(key.column).label(f"group:{name}"))
    for column in dict.fromkeys(f.stored_column for f in resource.filters if f.stored_column):
        selected.append(table.c[column].label(f"filter:{column}"))  # one array a column
    for item in resource.filters:
        yield from item.stored_arrays(connection, resource)
    count = connection.execute(select(func.count()).select_from(table)).scalar_one()
    for column in selected:
        name = column.name
        if name.startswith("filter:"):
            kind = next(f for f in resource.filters if f"filter:{f.stored_column}" == name)
            encode = functools.partial(_encoded, kind)
        elif name == "id":
            encode = functools.partial(np.array, dtype=np.int64)
        else:
            encode = functools.partial(np.array, dtype=np.int32)
        array = encode([])
        filled = 0
        result = connection.execute(select(column).order_by(table.c.id))
        while rows := result.fetchmany(CHUNK):
            part = encode([row[0] for row in rows])
            if filled == 0:
                array = np.empty(count, dtype=part.dtype)
            array[filled : filled + len(part)] = part
            filled += len(rows)
        yield name, array


def _encoded(kind, values):
    """The array of an array filter ``kind``'s ``values``, as the filter encodes them."""
    return np.array(kind.encode(values), dtype=kind.dtype)


def search_arrays(rows):
    """The arrays of the ``search`` filter from ``rows`` of (id, text, ...) in id order
    (the texts of a record: its title or name, nicks, ...): ``search:text``, every
    record's folded texts in UTF-8, each followed by a separator; ``search:starts``,
    where each record's bytes start; and ``search:block`` and ``search:offset``, which
    give the record of any byte (columns.Columns.search)."""
    parts = []
    for row in rows:
        text = " ".join(part for part in row[1:] if part)
        parts.append(search_fold(text).encode() + TEXT_SEPARATOR)
    lengths = np.fromiter((len(part) for part in parts), dtype=np.int64, count=len(parts))
    text = np.frombuffer(b"".join(parts), dtype=np.uint8)
    del parts
    if len(text) >= 2**31:
        raise ValueError("search texts over 2 GB")
    starts = np.zeros(len(lengths), dtype=np.int32)
    np.cumsum(lengths[:-1], out=starts[1:])
    # Each byte's record, a megabyte of text at a time (a few arrays of 8 MB at once).
    block_size = 1 << TEXT_BLOCK
    block = np.empty(-(-len(text) // block_size), dtype=np.int32)
    offset = np.empty(len(text), dtype=np.uint8)
    step = 1 << 20  # a whole number of blocks
    for first in range(0, len(text), step):
        positions = np.arange(first, min(first + step, len(text)))
        records = np.searchsorted(starts, positions, side="right") - 1
        firsts = records[::block_size]
        block[first // block_size : first // block_size + len(firsts)] = firsts
        offset[first : first + len(positions)] = (
            records - np.repeat(firsts, block_size)[: len(records)]
        )
    yield "search:text", text
    yield "search:starts", starts
    yield "search:block", block
    yield "search:offset", offset


def store_columns(connection, resource, arrays):
    """Store the (name, array) pairs ``arrays``: one array's bytes are copied at a time."""
    for name, array in arrays:
        connection.execute(
            tables.listing_columns.insert(),
            {
                "resource": resource.name,
                "name": name,
                "dtype": array.dtype.str,
                "data": array.tobytes(),
            },
        )
        del array
