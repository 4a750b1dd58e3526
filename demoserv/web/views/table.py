"""The API's table of endpoints, in the order the OpenAPI document lists them: the root,
every resource's list and detail, every sub-listing, status, the changes feed, the
snapshot and its files, the document and its page, and the site root. The routes
(``endpoints.blueprint``), the API root's addresses, OPTIONS and the OpenAPI document
(``openapi.build``) are all derived from it."""

import functools

from ...resources import RESOURCES, with_page_sizes
from . import changes, openapi, resources, root, snapshot, status


def table(declared):
    """The endpoints of the resources ``declared`` and of the rest of the API."""
    endpoints = [
        *resources.endpoints(declared),
        status.ENDPOINT,
        changes.ENDPOINT,
        *snapshot.ENDPOINTS,
        *openapi.ENDPOINTS,
    ]
    api_root, site_root = root.endpoints(endpoints)
    return [api_root, *endpoints, site_root]


ENDPOINTS = table(RESOURCES)


def served(page_sizes=None):
    """The table an app serves: ``ENDPOINTS``, or with ``page_sizes`` ({resource: records
    a page}) in place of the declared sizes, one table for each set of sizes."""
    if not page_sizes:
        return ENDPOINTS
    return _resized(tuple(sorted(page_sizes.items())))


@functools.cache
def _resized(sizes):
    return table(with_page_sizes(dict(sizes)))
