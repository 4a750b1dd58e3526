"""Keep a local copy of a demoserv catalogue in step: every record's detail record, in
one JSON file. The first run fetches every list and every record; each later run (once a
day, say) fetches only what the changes feed names since the copy's version, and starts
over when the mirror no longer holds that version (410).

    python follow_changes.py http://localhost:8000/api/v1/ copy.json

Every answer carries the catalogue version it was read from (``X-Catalogue-Version``);
a run that sees two versions (a load happened meanwhile) starts again, so that the copy
always equals one version of the catalogue.
"""

import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

TIMEOUT = 30  # seconds per request
ATTEMPTS = 3  # per request, for a failed connection, a timeout or a 5xx answer
PAUSE = 1.0  # seconds before the second attempt, twice that before the third
RUNS = 3  # a run that sees the catalogue change under it is tried again, this often


class Gone(Exception):
    """The mirror's history does not hold the copy's version (410)."""


class Moved(Exception):
    """An answer came from another catalogue version than the run's first."""


class Session:
    """GET requests of one run, all from one catalogue version."""

    def __init__(self):
        self.version = None

    def get(self, url):
        for attempt in range(1, ATTEMPTS + 1):
            try:
                with urllib.request.urlopen(url, timeout=TIMEOUT) as response:
                    version = response.headers["X-Catalogue-Version"]
                    body = json.load(response)
                break
            except urllib.error.HTTPError as error:
                error.close()
                if error.code == 410:
                    raise Gone(url) from None
                if error.code < 500 or attempt == ATTEMPTS:
                    raise
            except OSError:  # no connection, a reset, a timeout
                if attempt == ATTEMPTS:
                    raise
            time.sleep(PAUSE * attempt)
        if self.version is None:
            self.version = version
        elif version != self.version:
            raise Moved(url)
        return body

    def pages(self, url):
        while url:
            page = self.get(url)
            yield from page["results"]
            url = page["next"]


def fetch_everything(api_root):
    """Every record of every resource the API root lists, and their version."""
    session = Session()
    records = {}
    for resource, url in session.get(api_root).items():
        for record in session.pages(url):
            records[f"{resource}/{record['id']}"] = session.get(record["url"])
    return {"version": session.version, "records": records}


def apply_changes(api_root, copy):
    """``copy`` brought to the version served, from the changes since its version."""
    session = Session()
    records = dict(copy["records"])
    url = f"{api_root}changes/?since={copy['version']}"
    for change in session.pages(url):
        key = f"{change['resource']}/{change['id']}"
        if change["change"] == "removed":
            records.pop(key, None)
        else:
            records[key] = session.get(change["url"])
    return {"version": session.version or copy["version"], "records": records}


def follow(api_root, path):
    """Bring the copy at ``path`` in step with the catalogue served at ``api_root``."""
    path = Path(path)
    copy = json.loads(path.read_text()) if path.exists() else None
    for _ in range(RUNS):
        try:
            copy = fetch_everything(api_root) if copy is None else apply_changes(api_root, copy)
            break
        except Gone:
            copy = None  # start over: fetch everything
        except Moved:
            pass  # a load happened meanwhile: the same again
    else:
        sys.exit("the catalogue kept changing during the run; try again later")
    path.write_text(json.dumps(copy))
    return copy


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(f"usage: {sys.argv[0]} API_ROOT COPY.json")
    follow(sys.argv[1].rstrip("/") + "/", sys.argv[2])
