"""The least any app could do against the attack of ``clients.py --attack``: a WSGI app
that answers the single reader's pages with the bytes the real server gave for them
(read from the JSON file named by ``DEMOSERV_FLOOR_ANSWERS``: path and query to body and
content type) and every other request, each attacker's never-seen listing, with a 503
at once. ``repeated.py`` serves its pages with it: a bare waitress app.
Served by the same server as the real app (``clients.py --attack --floor``), it shows
how far the server itself lets the reader's p99 grow under the flood, whatever the app
does."""

import json
import os
from pathlib import Path

ANSWERS = {
    path: (body.encode(), content_type)
    for path, (body, content_type) in json.loads(
        Path(os.environ["DEMOSERV_FLOOR_ANSWERS"]).read_text()
    ).items()
}
BUSY = json.dumps(
    {"detail": "New listings are being found for other clients; try again in a second."}
).encode()


def app(environ, start_response):
    query = environ.get("QUERY_STRING")
    answer = ANSWERS.get(environ["PATH_INFO"] + (f"?{query}" if query else ""))
    if answer is None:
        headers = [("Content-Type", "application/json"), ("Retry-After", "1")]
        start_response("503 Service Unavailable", [*headers, ("Content-Length", str(len(BUSY)))])
        return [BUSY]
    body, content_type = answer
    start_response("200 OK", [("Content-Type", content_type), ("Content-Length", str(len(body)))])
    return [body]
