"""The listings found, kept: a filtered listing, or one in an order on several keys, is
found from its served file's listing arrays (``listing_index``, read on the file's first
listing), and its ids, in order, are kept in the app's cache of listings (a
``byte_cache.ByteCache`` of ``LISTING_CACHE_BYTES``), so that its later pages cost a
slice. A listing not kept is found through the app's ``listing_guard``."""

import threading

from flask import current_app

from ..byte_cache import ByteCache
from .columns import Columns
from .guard import EXTENSION as LISTING_GUARD

EXTENSION = "demoserv.listings.kept"
ENTRY_OVERHEAD = 256  # bytes an empty listing counts for


def init_app(app):
    app.extensions[EXTENSION] = ByteCache(app.config["LISTING_CACHE_BYTES"])


class Listings:
    """The listings of one served file: its columns, read on first use, and the listings
    found from them, kept in the app's cache under the file's id."""

    def __init__(self):
        self._columns = {}
        self._lock = threading.Lock()

    def columns(self, connection, resource):
        found = self._columns.get(resource.name)
        if found is None:
            with self._lock:
                found = self._columns.get(resource.name)
                if found is None:
                    found = self._columns[resource.name] = Columns(connection, resource)
        return found

    def ids(self, served, connection, resource, ordering, conditions):
        """The ids of the listing, in order (a numpy array), from the file whose id is
        ``served``; one not kept is found through the app's ``listing_guard``."""
        key = (resource.name, ordering.cache_key, conditions.key)
        cache = current_app.extensions[EXTENSION]
        found = cache.find(key, served)
        if found is not None:
            return found
        guard = current_app.extensions[LISTING_GUARD]
        return guard.run(
            self._found_anew, cache, served, key, connection, resource, ordering, conditions
        )

    def _found_anew(self, cache, served, key, connection, resource, ordering, conditions):
        """The listing found and kept, on the guard's thread, so that a request that
        waited there for the same listing finds it kept."""
        found = cache.peek(key, served)
        if found is not None:
            return found
        columns = self.columns(connection, resource)
        mask = None
        for item, value in conditions.items:
            part = item.mask(columns, value, connection, resource.table)
            mask = part if mask is None else mask & part
        found = columns.ids[columns.order(ordering, mask)]
        cache.keep(key, found, found.nbytes + ENTRY_OVERHEAD, served)
        return found
