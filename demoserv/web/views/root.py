"""``/api/v1/``: the address of every resource's listing (the endpoints that list one),
and the site root, which points at it."""

from flask import Blueprint, redirect, url_for

from ...store.addresses import api_url
from ..address_style import request_style
from . import openapi
from .endpoints import Endpoint, options_body


def endpoint(endpoints):
    """The API root of ``endpoints``: the address of each listing among them."""
    listed = [each.lists for each in endpoints if each.lists]

    def api_root():
        style = request_style()
        return {name: api_url(name, style=style) for name in listed}

    return Endpoint("/", "api_root", api_root, _operations(listed), describe)


def describe():
    return options_body(
        "Api Root", "The demoscene catalogue: the address of each resource's listing."
    )


def _operations(listed):
    def operations(spec):
        return {
            "get": {
                "summary": "The address of every listing",
                "responses": {
                    "200": openapi.json_or_jsonp(
                        {
                            "type": "object",
                            "additionalProperties": False,
                            "required": listed,
                            "properties": {
                                name: {"type": "string", "format": "uri"} for name in listed
                            },
                        },
                        "Listing addresses by resource name.",
                    ),
                    **openapi.errors("400", "404", "406"),
                },
            },
            "options": openapi.options("the API root"),
        }

    return operations


site = Blueprint("site", __name__)


@site.route("/")
def index():
    """The site root points at the API root."""
    return redirect(url_for("api.api_root"))
