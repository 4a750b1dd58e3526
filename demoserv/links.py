"""Absolute addresses of records: inside the API (``url``) and on the public site
(``service_url``). The only code that builds either."""

from contextvars import ContextVar

from flask import current_app, request

from .rendering import API_PREFIX, is_api_request, response_format

# (API root, url suffix, site root) of the request being served: a page of productions
# builds several hundred URLs, and reading them from the request each time costs more
# than building them.
_bound = ContextVar("demoserv_links", default=None)


def _for_request():
    fmt = response_format()
    return (
        request.url_root.rstrip("/") + API_PREFIX + "/",
        f"?format={fmt}" if fmt else "",
        current_app.config["SITE_URL"].rstrip("/"),
    )


def _bind():
    if is_api_request():
        request.environ["demoserv.links"] = _bound.set(_for_request())


def _unbind(exception=None):
    token = request.environ.pop("demoserv.links", None)
    if token is not None:
        _bound.reset(token)


def api_url(resource, record_id=None):
    """``{base}/api/v1/<resource>/[<id>/]``, with ``?format=`` kept from the request."""
    root, suffix, _ = _bound.get() or _for_request()
    if record_id is None:
        return f"{root}{resource}/{suffix}"
    return f"{root}{resource}/{record_id}/{suffix}"


def site_url(path):
    """The public web page at ``path`` (which starts and ends with ``/``)."""
    return (_bound.get() or _for_request())[2] + path


def init_app(app):
    # After rendering's hook, which validates the format these addresses carry.
    app.before_request(_bind)
    app.teardown_request(_unbind)
