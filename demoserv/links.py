"""Absolute addresses of records: inside the API (``url``) and on the public site
(``service_url``). The only code that builds either."""
from flask import current_app, g, request

from .rendering import API_PREFIX, response_format


def _api_root():
    # Computed once per request: a page of productions builds several hundred URLs.
    root = g.get("api_root")
    if root is None:
        root = g.api_root = request.url_root.rstrip("/") + API_PREFIX + "/"
        fmt = response_format()
        g.url_suffix = f"?format={fmt}" if fmt else ""
    return root


def api_url(resource, record_id=None):
    """``{base}/api/v1/<resource>/[<id>/]``, with ``?format=`` kept from the request."""
    root = _api_root()
    if record_id is None:
        return f"{root}{resource}/{g.url_suffix}"
    return f"{root}{resource}/{record_id}/{g.url_suffix}"


def site_url(path):
    """The public web page at ``path`` (which starts and ends with ``/``)."""
    return current_app.config["SITE_URL"].rstrip("/") + path
