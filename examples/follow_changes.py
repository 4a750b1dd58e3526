"""Keep a local copy of a demoserv catalogue in step: every record's detail record, in
one JSON file. The first run downloads the snapshot (``/api/v1/snapshot/``: a gzip file
of every record's detail record a resource), or, from a mirror that writes none for its
address, fetches every list and every record; each later run (once a day, say) fetches
only what the changes feed names since the copy's version, and starts over when the
mirror no longer holds that version (410).

    python follow_changes.py http://localhost:8000/api/v1/ copy.json

Every answer carries the catalogue version it was read from (``X-Catalogue-Version``);
a run that sees two versions (a load happened meanwhile) starts again, so that the copy
always equals one version of the catalogue. The snapshot's files are of the manifest's
version by their address; a download that is cut resumes where it stopped (``Range``),
and each file's size and SHA-256 are checked against the manifest.
"""

import gzip
import hashlib
import json
import sys
import tempfile
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
    """Every record of every resource, and their version: from the snapshot, else
    (none written for this address) by every list and every record."""
    return fetch_snapshot(api_root) or fetch_lists(api_root)


def fetch_lists(api_root):
    """Every record of every resource the API root lists, and their version."""
    session = Session()
    records = {}
    for resource, url in session.get(api_root).items():
        for record in session.pages(url):
            records[f"{resource}/{record['id']}"] = session.get(record["url"])
    return {"version": session.version, "records": records}


def fetch_snapshot(api_root):
    """Every record of the snapshot, and its version; None if the mirror has none for
    this address (404)."""
    try:
        manifest = Session().get(f"{api_root}snapshot/")
    except urllib.error.HTTPError as error:
        if error.code == 404:
            return None
        raise
    records = {}
    with tempfile.TemporaryDirectory() as folder:
        for resource, file in manifest["resources"].items():
            path = download(file, Path(folder) / f"{resource}.ndjson.gz")
            with gzip.open(path) as lines:
                for line in lines:
                    record = json.loads(line)
                    records[f"{resource}/{record['id']}"] = record
    return {"version": manifest["version"], "records": records}


def download(file, path):
    """The file of a manifest entry (``url``, ``bytes``, ``sha256``) saved at ``path``: a
    cut download resumes from the bytes it has (``Range``); checked whole."""
    for attempt in range(1, ATTEMPTS + 1):
        have = path.stat().st_size if path.exists() else 0
        headers = {"Range": f"bytes={have}-"} if have else {}
        try:
            if have < file["bytes"]:
                request = urllib.request.Request(file["url"], headers=headers)
                with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                    with open(path, "ab" if response.status == 206 else "wb") as out:
                        while chunk := response.read(1 << 20):
                            out.write(chunk)
            with open(path, "rb") as saved:
                digest = hashlib.file_digest(saved, "sha256").hexdigest()
            if path.stat().st_size == file["bytes"] and digest == file["sha256"]:
                return path
            path.unlink()  # other bytes than the manifest's: the whole file again
        except urllib.error.HTTPError as error:
            error.close()
            if error.code == 404:  # loads since removed that version's files
                raise Moved(file["url"]) from None
            if error.code < 500 or attempt == ATTEMPTS:
                raise
        except OSError:  # no connection, a reset, a timeout: resumed
            if attempt == ATTEMPTS:
                raise
        time.sleep(PAUSE * attempt)
    raise OSError(f"{file['url']}: not the bytes its manifest names")


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
