"""Absolute addresses of records: inside the API (``url``) and on the public site
(``service_url``). The only code that builds either."""
from flask import current_app, request

from .rendering import API_PREFIX, response_format


def _api_root():
    """(API root address, url suffix) of this request, computed once per request: a
    page of productions builds several hundred URLs."""
    cached = request.environ.get("demoserv.api_root")
    if cached is None:
        fmt = response_format()
        cached = request.environ["demoserv.api_root"] = (
            request.url_root.rstrip("/") + API_PREFIX + "/",
            f"?format={fmt}" if fmt else "",
        )
    return cached


def api_url(resource, record_id=None):
    """``{base}/api/v1/<resource>/[<id>/]``, with ``?format=`` kept from the request."""
    root, suffix = _api_root()
    if record_id is None:
        return f"{root}{resource}/{suffix}"
    return f"{root}{resource}/{record_id}/{suffix}"


def site_url(path):
    """The public web page at ``path`` (which starts and ends with ``/``)."""
    return current_app.config["SITE_URL"].rstrip("/") + path
