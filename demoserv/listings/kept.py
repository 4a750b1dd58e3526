"""The listings found, kept: a filtered listing, or one in an order on several keys, is
found by the finder process (``finder``) from the served file's listing arrays, and its
ids, in order, are kept in the app's cache of listings (a ``byte_cache.ByteCache`` of
``LISTING_CACHE_BYTES``), so that its later pages cost a slice. A listing not kept is
found through the app's listing guard (``guard``)."""

from flask import current_app

from ..byte_cache import ByteCache
from .finder import FINDER
from .guard import EXTENSION as LISTING_GUARD

EXTENSION = "demoserv.listings.kept"
ENTRY_OVERHEAD = 256  # bytes an empty listing counts for


def init_app(app):
    app.extensions[EXTENSION] = ByteCache(app.config["LISTING_CACHE_BYTES"])


def ids(path, served, resource, ordering, conditions):
    """The ids of the listing, in order (a memoryview of machine integers, as
    ``Finder.find`` gives them), from the file ``path`` whose id is ``served``; one not
    kept is found through the app's listing guard."""
    key = (resource.name, ordering.cache_key, conditions.key)
    cache = current_app.extensions[EXTENSION]
    found = cache.find(key, served)
    if found is not None:
        return found
    guard = current_app.extensions[LISTING_GUARD]
    return guard.run(_found_anew, cache, key, path, served)


def is_kept(listings, served, resource, ordering, conditions):
    """Whether the listing's ids are kept in ``listings`` (an app's cache of them) from
    the file whose id is ``served``; asked without counting as a use."""
    key = (resource.name, ordering.cache_key, conditions.key)
    return listings.peek(key, served) is not None


def _found_anew(cache, key, path, served):
    """The listing found by the finder and kept, on the guard's thread, so that a
    request that waited there for the same listing finds it kept."""
    found = cache.peek(key, served)
    if found is None:
        found = FINDER.find(path, served, *key)
        cache.keep(key, found, found.nbytes + ENTRY_OVERHEAD, served)
    return found
