"""Every response the test clients receive is checked against the OpenAPI document."""

import gzip
import json
import re

import brotli
import jsonschema_rs
from flask.testing import FlaskClient

from demoserv.web.views.endpoints import EXTENSION
from demoserv.web.views.openapi import build, renamed
from demoserv.web.views.table import ENDPOINTS

SPEC = build(ENDPOINTS)  # its paths; a page's maxItems follows the page sizes in force
TEMPLATES = [
    (re.compile("^" + "[^/]+".join(map(re.escape, re.split(r"\{[^}]+\}", path))) + "$"), path)
    for path in SPEC["paths"]
]
ERROR = "#/components/schemas/Error"
DECODE = {"gzip": gzip.decompress, "br": brotli.decompress}
Invalid = jsonschema_rs.ValidationError

_validators = {}


def _validators_of(field_name, endpoints):
    """Every schema of the document, compiled (JSON Schema 2020-12, by jsonschema-rs: a
    few microseconds an answer), as a server with this page-address field name and this
    table of endpoints (its page sizes) serves it; an app's table is one of a few, kept."""
    key = (field_name, id(endpoints))
    if key not in _validators:
        document = renamed(build(endpoints), "service_url", field_name)
        # The table is kept with its validators, so that its id is not another's later.
        _validators[key] = (endpoints, jsonschema_rs.validator_map_for(document))
    return _validators[key][1]


def _pointer(*parts):
    return "#/" + "/".join(p.replace("~", "~0").replace("/", "~1") for p in parts)


def expected_schema(method, path, status, content_type="application/json"):
    """The pointer to the schema the document gives for this answer (None: a body that
    is not JSON, of a type the document gives it)."""
    template = next((t for pattern, t in TEMPLATES if pattern.match(path)), None)
    operation = SPEC["paths"].get(template, {}).get(method.lower()) if template else None
    if operation is None:
        assert status >= 300, f"{method} {path} answered {status} but is not documented"
        return None if content_type == "text/html" else ERROR
    responses = operation["responses"]
    if status == 500:
        return ERROR  # a bug (tests cause one on purpose): undocumented, in the error shape
    assert str(status) in responses, f"{method} {template}: status {status} is not documented"
    content = responses[str(status)].get("content", {})
    if content_type == "text/html":  # the browsable page of a JSON answer
        assert "text/html" in content, f"{method} {template}: HTML {status} is not documented"
        return None
    if "application/json" not in content:
        return None
    return _pointer(
        "paths",
        template,
        method.lower(),
        "responses",
        str(status),
        "content",
        "application/json",
        "schema",
    )


def check(method, path, response, field_name="service_url", endpoints=ENDPOINTS):
    if method == "HEAD" or response.status_code == 304:
        assert response.data == b""
        if method != "HEAD":
            expected_schema(method, path, 304)  # declared
        return
    content_type = response.headers.get("Content-Type", "application/json").split(";")[0]
    schema = expected_schema(method, path, response.status_code, content_type)
    if schema is None:
        return
    body = response.get_data()
    encoding = response.headers.get("Content-Encoding")
    if encoding:
        body = DECODE[encoding](body)
    if response.headers.get("Content-Type", "").startswith(
        "application/javascript"
    ):  # JSONP: callback(<the JSON>);
        assert re.fullmatch(rb"[A-Za-z0-9_$.]+\(.*\);", body, re.DOTALL), body[:100]
        body = body[body.index(b"(") + 1 : -2]
    _validators_of(field_name, endpoints)[schema].validate(json.loads(body))


def routed_by(app):
    return app.extensions[EXTENSION]


class ValidatingClient(FlaskClient):
    """A test client that checks each answer against the OpenAPI document."""

    def open(self, *args, **kwargs):
        response = super().open(*args, **kwargs)
        request = response.request
        check(
            request.method,
            request.path,
            response,
            self.application.config.get("SERVICE_URL_FIELD", "service_url"),
            routed_by(self.application).endpoints,
        )
        return response
