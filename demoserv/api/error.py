"""The error a request is answered with, raised wherever a request is checked (parameters,
pages, orderings) or turned away (the listings' guard): a status, its ``detail`` and
headers. ``web/error_handlers.py`` answers it in the service's one JSON shape; this
module imports nothing of Flask, so that the declarations that parse parameters can be
read by the build."""

# Wording of Django REST Framework, which API clients of the upstream catalogue know.
DETAILS = {
    400: "Bad request.",
    404: "Not found.",
    406: "Could not satisfy the request Accept header.",
    413: "Request entity too large.",
    414: "Request URI too long.",
    431: "Request header fields too large.",
    500: "A server error occurred.",
    503: "Service temporarily unavailable, try again later.",
}


class APIError(Exception):
    """An error answered to the client as ``status`` with ``{"detail": detail}`` and
    ``headers`` (such as ``Retry-After``)."""

    def __init__(self, status, detail=None, headers=None):
        super().__init__(detail)
        self.status = status
        self.detail = detail or DETAILS.get(status, "Error.")
        self.headers = headers or {}
