"""Absolute addresses of records: inside the API (``url``) and on the public site
(``service_url``). The only code that builds either; the output schemas call it.

Records are built once, at load, in the style of markers (``stored.MARKERS``) that each
request resolves (``links.request_resolver``); the API root builds its addresses in the
request's own style (``links.request_style``). Imports nothing of Flask, so that the
build can dump records with the schemas that serve them."""

from contextvars import ContextVar

_style = ContextVar("demoserv_link_style", default=None)


def use_style(style):
    """Build addresses in ``style`` (a ``stored.LinkStyle``) until the returned token is
    reset."""
    return _style.set(style)


def reset_style(token):
    _style.reset(token)


def _current(style):
    style = style or _style.get()
    if style is None:
        raise RuntimeError("an address built outside use_style() and without a style")
    return style


def api_url(resource, record_id=None, style=None):
    """``{root}<resource>[/<id>]{suffix}`` (the suffix holds the trailing slash)."""
    style = _current(style)
    if record_id is None:
        return f"{style.api_root}{resource}{style.suffix}"
    return f"{style.api_root}{resource}/{record_id}{style.suffix}"


def site_url(path, style=None):
    """The public web page at ``path`` (which starts and ends with ``/``)."""
    return _current(style).site + path
