"""An endpoint of the API declared once: its rule under the prefix, its view, its OPTIONS
answer, its OpenAPI operations and what it keeps. ``blueprint`` routes a table of them
(``views/table.py``); ``openapi.build`` documents the same table, so that no address is
routed without its operation or the reverse."""

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

from flask import Blueprint, current_app, request
from werkzeug.routing import IntegerConverter

from ...api.parameters import RENDERING
from ...byte_cache import ByteCache
from ..negotiation import API_PREFIX, PATH_FORMAT, PATH_FORMAT_ARG, RENDERS, browsable

EXTENSION = "demoserv.web.views.endpoints"


class AsciiIntegerConverter(IntegerConverter):
    """Werkzeug's ``int``, of ASCII digits only: its ``\\d`` takes any Unicode digit
    (``٣``), where the upstream's Django routes and the OpenAPI document's integers do not."""

    regex = "[0-9]+"


# The app's converters in place of Werkzeug's, for every route (the upstream's too).
CONVERTERS = {"int": AsciiIntegerConverter}


@dataclass(frozen=True)
class Endpoint:
    rule: str  # under ``prefix``: "/", "/productions/<...:record_id>/", "/openapi.json"
    name: str  # the view's endpoint name, unique in the table
    view: Callable  # the GET answer, given the rule's variables
    operations: Callable  # (spec) -> the OpenAPI operations of its path, by method
    describe: Callable | None = None  # the OPTIONS body; None: Allow only, no suffixes
    path_parameters: tuple = ()  # OpenAPI parameters of the rule's variables
    lists: str | None = None  # the resource it lists: the API root names its address
    kept_bytes: int = 0  # the budget of a ByteCache of its own (``kept``); 0: none
    headers: Callable | None = None  # () -> headers its answers carry, 304s included
    # (args, catalogue, kept listings) -> whether the request asks for a listing that the
    # listings' guard must find (a list's: web/admission.py); None: it never does
    new_listing: Callable | None = None
    prefix: str = API_PREFIX  # "": the site root

    @property
    def path(self):
        return self.prefix + self.rule

    @property
    def document_path(self):
        """The path as the OpenAPI document writes it: a variable as ``{name}`` (a
        record's id as ``{id}``)."""
        return re.sub(
            r"<(?:[^:>]*:)?(\w+)>",
            lambda match: "{id}" if match[1] == "record_id" else f"{{{match[1]}}}",
            self.path,
        )

    @property
    def suffixed(self):
        """Whether the path is served with a format suffix too (every answer of the
        API's own, which OPTIONS describes)."""
        return self.describe is not None


def blueprint(endpoints):
    """The routes of ``endpoints``; each answers GET (and so HEAD) and OPTIONS, and an
    API answer also at its path with a format suffix in place of its trailing slash
    (``.../productions.json``: negotiation.negotiate reads the suffix)."""
    bp = Blueprint("api", __name__)
    for endpoint in endpoints:
        if endpoint.describe is None:
            bp.add_url_rule(endpoint.path, endpoint.name, endpoint.view)
            continue
        routed = _routed(endpoint.view, endpoint.describe)
        for rule in (endpoint.path, with_suffix(endpoint.path)):
            bp.add_url_rule(rule, endpoint.name, routed, methods=["GET", "OPTIONS"])
    headers = {f"{bp.name}.{each.name}": each.headers for each in endpoints if each.headers}

    @bp.after_request
    def _add_headers(response):
        add = headers.get(request.endpoint)
        if add is not None:
            response.headers.update(add())
        return response

    @bp.record_once
    def _keep(state):
        state.app.extensions[EXTENSION] = Routed(
            endpoints,
            {each.name: ByteCache(each.kept_bytes) for each in endpoints if each.kept_bytes},
            {f"{bp.name}.{each.name}": each.new_listing for each in endpoints if each.new_listing},
        )

    return bp


@dataclass(frozen=True)
class Routed:
    """What an app routes: its table of endpoints, their caches by name, and the
    ``new_listing`` checks of those that have one, by Flask endpoint."""

    endpoints: list
    caches: dict
    new_listings: dict


def routed():
    return current_app.extensions[EXTENSION]


def kept(name):
    """The cache of the endpoint ``name`` in this app."""
    return routed().caches[name]


def options_body(name, description, parameters=RENDERING):
    """The body of an OPTIONS answer (the upstream's, Django REST Framework's, metadata)."""
    return {
        "name": name,
        "description": description,
        "renders": list(RENDERS),
        "parses": [],
        "parameters": parameters,
    }


def _routed(view, describe):
    @functools.wraps(view)
    def answer(**kwargs):
        kwargs.pop(PATH_FORMAT_ARG, None)
        if request.method == "OPTIONS":
            return describe()
        return view(**kwargs)

    answer.provide_automatic_options = False
    return browsable(answer, describe)  # a browser gets its answers as HTML pages


def with_suffix(path):
    """``path`` with a format suffix in place of its trailing slash (the API root keeps
    its slash: ``/api/v1/.json``)."""
    return (path if path == f"{API_PREFIX}/" else path[:-1]) + "." + PATH_FORMAT
