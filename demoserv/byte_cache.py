"""The one cache of the server: values bounded in bytes, kept for the served file they
were built from. Each of its uses makes its own, with its budget: the answers kept
whole (``answer_cache``, the ``ANSWER_CACHE_BYTES`` setting), the listings found
(``listing_cache``, ``LISTING_CACHE_BYTES``), the OpenAPI document and the browsable
page's forms (``openapi``), the status page's facts (``status``), the refusals kept by
``web/admission.py`` and the browsable page's breadcrumbs (``web/browsable.py``), each
of these a fixed budget of its module.

A segmented LRU: a value enters on probation and is protected once asked for again (up
to ``PROTECTED_SHARE`` of the budget; past it, the least recently used protected values
go back on probation); no value larger than the rest of the budget is kept; probation's
least recently used values go first when the budget is reached. So a stream of values
asked for once (a crawler, a stranger sending ever new addresses) pushes out only others
asked for once, never what clients come back to.

Each value is kept for a served file (its ``Catalogue.file_id``): a lookup for another
file empties the cache, and a value built from a file no longer the cache's is not
kept, so nothing of an old catalogue outlives a load or a rollback. No Flask."""

import threading
from collections import OrderedDict

PROTECTED_SHARE = 0.75  # of the budget, for values asked for more than once


class ByteCache:
    """Values within ``budget`` bytes (each counts the size it is kept with), all of one
    served file; safe to share between threads."""

    def __init__(self, budget):
        self.budget = budget
        self._served = None
        # key -> (value, size), least recently used first
        self._probation, self._protected = OrderedDict(), OrderedDict()
        self._probation_bytes = self._protected_bytes = 0
        self._lock = threading.Lock()

    def __len__(self):
        return len(self._probation) + len(self._protected)

    @property
    def kept_bytes(self):
        return self._probation_bytes + self._protected_bytes

    def keys(self):
        """Keys kept: on probation, then protected, each least recently used first."""
        with self._lock:
            return [*self._probation, *self._protected]

    def find(self, key, served=None):
        """The value kept for ``key`` (None if none), counting this use: one on
        probation is protected. ``served`` other than the cache's empties it."""
        with self._lock:
            if served != self._served:
                self._empty(served)
                return None
            entry = self._protected.get(key)
            if entry is not None:
                self._protected.move_to_end(key)
                return entry[0]
            entry = self._probation.pop(key, None)
            if entry is None:
                return None
            self._probation_bytes -= entry[1]
            self._protect(key, entry)
            return entry[0]

    def peek(self, key, served=None):
        """The value kept for ``key`` (None if none), not counted as a use."""
        with self._lock:
            if served != self._served:
                return None
            entry = self._protected.get(key) or self._probation.get(key)
            return None if entry is None else entry[0]

    def keep(self, key, value, size, served=None):
        """Keep ``value`` under ``key``, counting ``size`` bytes, unless ``served`` is no
        longer the cache's file or it would not fit beside the protected values."""
        if size > self.budget * (1 - PROTECTED_SHARE):
            return
        with self._lock:
            if served != self._served or key in self._protected:
                return
            previous = self._probation.pop(key, None)
            if previous is not None:
                self._probation_bytes -= previous[1]
            self._probation[key] = (value, size)
            self._probation_bytes += size
            self._trim()

    def clear(self):
        with self._lock:
            self._empty(self._served)

    def _empty(self, served):
        self._served = served
        self._probation.clear()
        self._protected.clear()
        self._probation_bytes = self._protected_bytes = 0

    def _protect(self, key, entry):
        """Move ``entry`` to the protected segment; its least recently used values go
        back on probation past their share, and probation's go past the budget."""
        self._protected[key] = entry
        self._protected_bytes += entry[1]
        while self._protected_bytes > self.budget * PROTECTED_SHARE:
            demoted_key, demoted = self._protected.popitem(last=False)
            self._protected_bytes -= demoted[1]
            self._probation[demoted_key] = demoted
            self._probation_bytes += demoted[1]
        self._trim()

    def _trim(self):
        """Within the budget: probation's least recently used values go."""
        while self.kept_bytes > self.budget and self._probation:
            self._probation_bytes -= self._probation.popitem(last=False)[1][1]
