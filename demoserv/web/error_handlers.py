"""One JSON error shape, ``{"detail": "..."}``, for every error the service answers."""

import logging

from flask import current_app, request
from werkzeug.exceptions import HTTPException, MethodNotAllowed, SecurityError

from ..api.error import DETAILS, APIError

log = logging.getLogger(__name__)

READ_METHODS = ("GET", "HEAD", "OPTIONS")
# In the WSGI environ of a request answered with an APIError: that error (web/admission.py
# keeps the listings' guard's refusals).
ANSWERED_ERROR = "demoserv.answered_error"


def json_error(status, detail):
    return current_app.json.response({"detail": detail}), status


def _handle_api_error(error):
    request.environ[ANSWERED_ERROR] = error
    response, status = json_error(error.status, error.detail)
    response.headers.update(error.headers)
    return response, status


def _exists_with_slash():
    """Whether the path, with a trailing slash, names a resource (GET would redirect)."""
    adapter = current_app.url_map.bind_to_environ(request.environ)
    try:
        adapter.match(request.path.rstrip("/") + "/", method="GET")
    except HTTPException:
        return False
    return True


def _handle_http_exception(error):
    if error.code == 404 and request.method not in READ_METHODS and _exists_with_slash():
        # Werkzeug redirects a path without its trailing slash only for methods the
        # route allows; any other method on it is as unsupported as with the slash.
        error = MethodNotAllowed(valid_methods=list(READ_METHODS))
    if error.code == 405:
        detail = f'Method "{request.method}" not allowed.'
    elif isinstance(error, SecurityError):
        detail = "Host not allowed: this server does not answer for that host name."
    else:
        detail = DETAILS.get(error.code) or error.description or error.name
    response, status = json_error(error.code, detail)
    # Keep headers such as Retry-After that the exception carries (not its HTML type).
    for name, value in error.get_headers():
        if name.lower() != "content-type":
            response.headers[name] = value
    return response, status


def _handle_unexpected(error):
    log.exception("unhandled error on %s %s", request.method, request.path)
    return json_error(500, DETAILS[500])


def init_app(app):
    app.register_error_handler(APIError, _handle_api_error)
    app.register_error_handler(HTTPException, _handle_http_exception)
    app.register_error_handler(Exception, _handle_unexpected)
