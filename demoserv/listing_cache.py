"""The listings of one served file, kept once found: their arrays (``listing_index``),
read on the first listing, and the listings found, as arrays of ids in order, in a
cache bounded in bytes, so that the later pages of a listing cost a slice. A listing
not kept is found through the app's ``listing_guard``."""

import threading
from collections import OrderedDict

from .listing_index import Columns

CACHE_BYTES = 32 * 1024 * 1024  # kept listings per served file, in bytes of positions
ENTRY_OVERHEAD = 256  # bytes an empty listing counts for
PROTECTED_SHARE = 0.75  # of CACHE_BYTES, for listings asked for more than once


def _size(ids):
    return ids.nbytes + ENTRY_OVERHEAD


class Listings:
    """The listings of one served file: its columns, read on first use, and the listings
    found, within CACHE_BYTES. The cache is segmented: a listing found enters on
    probation, and one asked for again is protected (up to PROTECTED_SHARE of the
    budget), so that a stream of listings asked for once (a crawler, or a stranger
    sending never-seen parameters) pushes out only others asked for once, never the
    listings that clients come back to."""

    def __init__(self):
        self._columns = {}
        self._segments = {"probation": OrderedDict(), "protected": OrderedDict()}
        self._bytes = {"probation": 0, "protected": 0}
        self._lock = threading.Lock()

    def columns(self, connection, resource):
        found = self._columns.get(resource.name)
        if found is None:
            with self._lock:
                found = self._columns.get(resource.name)
                if found is None:
                    found = self._columns[resource.name] = Columns(connection, resource)
        return found

    def _put(self, segment, key, ids):
        self._segments[segment][key] = ids
        self._bytes[segment] += _size(ids)

    def _take(self, segment, key=None):
        """Remove ``key`` (by default the least recently used) from ``segment``."""
        entries = self._segments[segment]
        key, ids = (key, entries.pop(key)) if key is not None else entries.popitem(last=False)
        self._bytes[segment] -= _size(ids)
        return key, ids

    def _find(self, key):
        return self._segments["protected"].get(key, self._segments["probation"].get(key))

    def _kept(self, key):
        """The listing kept under ``key`` (None if none), counting this use."""
        with self._lock:
            protected, probation = self._segments["protected"], self._segments["probation"]
            if key in protected:
                protected.move_to_end(key)
                return protected[key]
            if key not in probation:
                return None
            _, found = self._take("probation", key)
            self._put("protected", key, found)  # asked for again
            while self._bytes["protected"] > CACHE_BYTES * PROTECTED_SHARE:
                self._put("probation", *self._take("protected"))
            self._evict()
            return found

    def _evict(self):
        """Within the budget: listings on probation go first (but the newest), then the
        protected ones, least recently used first."""
        for segment, keep in (("probation", 1), ("protected", 0)):
            while self.kept_bytes > CACHE_BYTES and len(self._segments[segment]) > keep:
                self._take(segment)

    def ids(self, connection, resource, ordering, conditions, guard):
        """The ids of the listing, in order (a numpy array); one not kept is found
        through ``guard`` (a ``listing_guard.ListingGuard``)."""
        key = (resource.name, ordering.cache_key, conditions.key)
        found = self._kept(key)
        if found is not None:
            return found
        return guard.run(self._found_anew, key, connection, resource, ordering, conditions)

    def _found_anew(self, key, connection, resource, ordering, conditions):
        """The listing found and kept, on the guard's thread, so that a request that
        waited there for the same listing finds it kept."""
        with self._lock:
            found = self._find(key)
        if found is not None:
            return found
        columns = self.columns(connection, resource)
        mask = None
        for item, value in conditions.items:
            part = item.mask(columns, value, connection, resource.table)
            mask = part if mask is None else mask & part
        found = columns.ids[columns.order(ordering, mask)]
        with self._lock:
            if self._find(key) is None:
                self._put("probation", key, found)
                self._evict()
        return found

    @property
    def kept(self):
        """Keys kept: on probation, then protected, each least recently used first."""
        with self._lock:
            return [key for entries in self._segments.values() for key in entries]

    @property
    def kept_bytes(self):
        return self._bytes["probation"] + self._bytes["protected"]
