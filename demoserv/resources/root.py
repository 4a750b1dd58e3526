"""``/api/v1/``: the address of every resource's listing."""

from flask import Blueprint, current_app, redirect, request, url_for

from ..links import api_url
from ..parameters import CALLBACK, FORMAT
from ..rendering import JSON_TYPE
from .base import suffixed

bp = Blueprint("root", __name__)


def api_root():
    if request.method == "OPTIONS":
        return {
            "name": "Api Root",
            "description": "The demoscene catalogue: the address of each resource's listing.",
            "renders": [JSON_TYPE],
            "parses": [],
            "parameters": {"format": FORMAT, "callback": CALLBACK},
        }
    return {name: api_url(name) for name in current_app.extensions["demoserv.resources"]}


def api_root_suffixed(format_suffix):
    return api_root()


api_root.provide_automatic_options = False
api_root_suffixed.provide_automatic_options = False
bp.add_url_rule("/api/v1/", "api_root", api_root, methods=["GET", "OPTIONS"])
bp.add_url_rule(
    suffixed("/api/v1/"), "api_root_suffixed", api_root_suffixed, methods=["GET", "OPTIONS"]
)


@bp.route("/")
def index():
    """The site root points at the API root."""
    return redirect(url_for("root.api_root"))
