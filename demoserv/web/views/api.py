"""The API's table of endpoints, in the order the OpenAPI document lists them: the root,
every resource's list and detail, every sub-listing, status, the changes feed, the
document and its page. The routes (``endpoints.blueprint``), the API root's addresses,
OPTIONS and the OpenAPI document (``openapi.build``) are all derived from it."""

from ...resources import RESOURCES
from . import changes, openapi, resources, root, status

_ENDPOINTS = [
    *resources.endpoints(RESOURCES),
    status.ENDPOINT,
    changes.ENDPOINT,
    *openapi.ENDPOINTS,
]
ENDPOINTS = [root.endpoint(_ENDPOINTS), *_ENDPOINTS]
