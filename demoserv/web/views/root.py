"""``/api/v1/``: the address of every resource's listing."""

from flask import Blueprint, redirect, url_for

from ...store.addresses import api_url
from ..address_style import request_style
from ..negotiation import API_PREFIX
from .resources import add_view, options_body


def blueprint(resource_names):
    """The API root, listing ``resource_names`` (the registry's), and the site root."""
    bp = Blueprint("root", __name__)

    def api_root():
        style = request_style()
        return {name: api_url(name, style=style) for name in resource_names}

    add_view(bp, f"{API_PREFIX}/", api_root, describe)
    bp.add_url_rule("/", "index", index)
    return bp


def describe():
    return options_body(
        "Api Root", "The demoscene catalogue: the address of each resource's listing."
    )


def index():
    """The site root points at the API root."""
    return redirect(url_for("root.api_root"))
