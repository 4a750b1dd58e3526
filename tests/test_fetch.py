"""``flask load URL`` against a real HTTP server on 127.0.0.1 serving the sample export
with ETag, Last-Modified and Range, and injecting each fault a download can meet. After
each: the exit status and the one line, the served catalogue unchanged (bytes and
version), and no temporary file left."""

import contextlib
import gzip
import hashlib
import io
import os
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from demoserv.loader import fetch, provenance
from demoserv.loader.reporting import DOWNLOAD, Retrying, StageAdvanced, StageFinished, StageStarted
from demoserv.loader.sources import load_catalogue
from demoserv.store import facts

from .conftest import refusing_url, suite_app
from .terminal import run_on_a_terminal

SAMPLE = Path(__file__).parent / "data" / "upstream" / "demozoo-export-sample.sql.gz"
ETAG = '"export-1"'
LAST_MODIFIED = "Sun, 22 Nov 2026 02:41:07 GMT"
# Fast and patient enough for a server on the same machine; no real backoff.
FETCH_CONFIG = {
    "FETCH_CONNECT_TIMEOUT": 5,
    "FETCH_READ_TIMEOUT": 0.5,
    "FETCH_RETRIES": 2,
    "FETCH_BACKOFF": 0.001,
    "FETCH_MAX_BACKOFF": 0.001,
    "FETCH_MAX_RETRY_AFTER": 0.001,
    "FETCH_MAX_REDIRECTS": 3,
}
# What a load leaves beside the served file: nothing of a download.
KEPT = {"db.sqlite3", ".db.sqlite3.lock", "db.sqlite3.previous", "db.sqlite3.snapshot"}


class ExportServer(ThreadingHTTPServer):
    """Serves ``body`` at any path (``/loop`` redirects to itself), answering conditional
    and range requests while ``validators`` and ``ranges`` are on; ``faults`` are used
    up one a request. ``log`` holds (request headers, status, body bytes sent)."""

    daemon_threads = True

    def __init__(self):
        super().__init__(("127.0.0.1", 0), ExportHandler)
        self.release = threading.Event()  # ends stalled answers
        self.reset()

    def reset(self):
        self.body = SAMPLE.read_bytes()
        self.etag, self.last_modified = ETAG, LAST_MODIFIED
        self.validators = self.conditional = self.ranges = True
        self.faults = deque()
        self.log = []
        self.on_stall = lambda: None  # called once a stalled answer has sent its start

    def handle_error(self, request, client_address):
        """A client that hangs up mid-body (as the loader does once it has seen the
        validators) is expected; a traceback on standard error would land in the output
        of whichever command runs then."""

    @property
    def url(self):
        return f"http://127.0.0.1:{self.server_address[1]}/demozoo-export.sql.gz"


class ExportHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", headers=(), send=None):
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        if not any(name == "Content-Length" for name, _ in headers):
            self.send_header("Content-Length", str(len(body)))
        sent = body if send is None else send
        # Logged before the client can have its answer: the test reads the log then.
        self.server.log.append((dict(self.headers), status, len(sent)))
        self.end_headers()
        self.wfile.write(sent)
        self.wfile.flush()

    def drop(self):
        self.close_connection = True
        self.connection.shutdown(socket.SHUT_RDWR)

    def do_GET(self):
        server = self.server
        fault = server.faults.popleft() if server.faults else None
        if self.path == "/loop":
            return self.answer(302, headers=[("Location", "/loop")])
        if fault in (404, 500):
            return self.answer(fault, b"<html>no</html>", [("Content-Type", "text/html")])
        if fault == 429:
            return self.answer(429, headers=[("Retry-After", "7")])
        if fault == "html":
            page = b"<!DOCTYPE html><html><body>Export moved</body></html>"
            return self.answer(200, page, [("Content-Type", "text/html; charset=utf-8")])
        if fault == "html-as-bytes":
            page = b"\n<!DOCTYPE html><html><body>Maintenance</body></html>"
            return self.answer(200, page, [("Content-Type", "application/octet-stream")])
        body = server.body
        headers = [("Content-Type", "application/gzip")]
        if server.validators:
            headers += [("ETag", server.etag)] if server.etag else []
            headers.append(("Last-Modified", server.last_modified))
        if server.ranges:
            headers.append(("Accept-Ranges", "bytes"))
        if server.validators and server.conditional and self._not_modified():
            return self.answer(304, headers=headers[1:])
        wanted = self.headers.get("Range")
        if_range = self.headers.get("If-Range")
        if (
            server.ranges
            and wanted
            and (if_range is None or if_range in (server.etag, server.last_modified))
        ):
            start = int(wanted.removeprefix("bytes=").split("-")[0])
            part = body[start:]
            headers.append(("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}"))
            return self.answer(206, part, headers)
        if fault == "drop":  # the promised length, half the body, then the connection closes
            self.answer(200, body, headers, send=body[: len(body) // 2])
            return self.drop()
        if fault == "stall":
            self.answer(200, body, headers, send=body[:1000])
            server.on_stall()
            server.release.wait(30)
            return self.drop()
        self.answer(200, body, headers)

    def _not_modified(self):
        tags = self.headers.get("If-None-Match")
        if tags is not None:
            return self.server.etag in [tag.strip() for tag in tags.split(",")]
        return self.headers.get("If-Modified-Since") == self.server.last_modified


@pytest.fixture(scope="module")
def server():
    server = ExportServer()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.release.set()
    server.shutdown()
    server.server_close()
    thread.join()


@pytest.fixture(autouse=True)
def fresh_server(server):
    server.reset()
    yield
    server.release.set()
    server.release = threading.Event()


@pytest.fixture(scope="module")
def from_file(tmp_path_factory):
    """A catalogue file imported from the sample export, loaded as a file."""
    path = tmp_path_factory.mktemp("from_file") / "db.sqlite3"
    load_catalogue(SAMPLE, path)
    return path


@pytest.fixture(scope="module")
def from_url(tmp_path_factory, server):
    """A catalogue file loaded from the server's address: its first load."""
    path = tmp_path_factory.mktemp("from_url") / "db.sqlite3"
    result = run(path, server.url)
    assert result.exit_code == 0, result.output
    return path, result.output


def run(database, *arguments, **config):
    app = suite_app(database, **{**FETCH_CONFIG, **config})
    return app.test_cli_runner().invoke(args=["load", *arguments])


def served_copy(tmp_path, source):
    target = tmp_path / "served" / "db.sqlite3"
    target.parent.mkdir()
    shutil.copy2(source, target)
    return target


def fingerprint(path):
    info = facts.version_and_time(path)
    stat = os.stat(path)
    return hashlib.sha256(path.read_bytes()).hexdigest(), info, stat.st_ino, stat.st_mtime_ns


RETRY = re.compile(r"Attempt [0-9]+ of [0-9]+ failed: .*; next in [0-9.]+ s")


def failure(result):
    """The line a failed load ends with, after one line per retry."""
    *retries, line = result.stderr.splitlines()
    assert all(RETRY.fullmatch(retry) for retry in retries), retries
    return line


def assert_failed(result, line, target, before):
    assert result.exit_code == 1, result.output
    assert result.stdout == "" and failure(result) == line
    assert fingerprint(target) == before
    assert {path.name for path in target.parent.iterdir()} <= KEPT


def test_the_first_load_from_an_address_records_its_source(from_url, server):
    path, output = from_url
    lines = output.splitlines()
    assert lines[0].startswith(f"Downloaded {server.url}: 342.8 kB in ")
    assert lines[1].startswith(f"Loaded {server.url}: 250 party_series, ")
    assert "2,350 productions" in lines[1] and len(lines) == 2
    source = facts.provenance(path)
    assert source["kind"] == "url" and source["source"] == server.url
    assert (source["etag"], source["last_modified"]) == (ETAG, LAST_MODIFIED)
    assert source["size"] == str(SAMPLE.stat().st_size)
    assert source["sha256"] == hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    assert "export_date" not in source  # the sample states no date of its own
    assert {p.name for p in path.parent.iterdir()} <= KEPT


def test_an_unchanged_export_is_neither_downloaded_nor_rebuilt(from_url, server, tmp_path):
    target = served_copy(tmp_path, from_url[0])
    before = fingerprint(target)
    result = run(target, server.url)
    assert result.exit_code == 0, result.output
    assert result.output == (
        f"Unchanged: {target} already serves {server.url}: 304 Not Modified; "
        f"nothing loaded (version {before[1][0]}).\n"
    )
    [(headers, status, sent)] = server.log
    assert (headers["If-None-Match"], headers["If-Modified-Since"]) == (ETAG, LAST_MODIFIED)
    assert (status, sent) == (304, 0)
    assert fingerprint(target) == before
    assert {p.name for p in target.parent.iterdir()} <= KEPT


def test_the_same_validators_without_a_304_end_the_download(from_url, server, tmp_path):
    server.conditional = False  # answers 200 whatever the request holds
    target = served_copy(tmp_path, from_url[0])
    before = fingerprint(target)
    result = run(target, server.url)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Unchanged: {target} already serves {server.url}: same ETag")
    assert fingerprint(target) == before


def test_a_server_without_validators_is_compared_by_digest(from_file, server, tmp_path):
    server.validators = False
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url)
    assert result.exit_code == 0, result.output
    downloaded, unchanged = result.stdout.splitlines()
    assert downloaded.startswith(f"Downloaded {server.url}: 342.8 kB")
    assert unchanged.startswith(f"Unchanged: {target} already serves {server.url}: the same bytes")
    assert "If-None-Match" not in server.log[0][0]  # the served export came from a file
    assert fingerprint(target) == before


def test_a_file_with_the_bytes_served_is_not_loaded_again(from_file, tmp_path):
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, str(SAMPLE))
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Unchanged: {target} already serves {SAMPLE.name}: the same")
    assert fingerprint(target) == before


def test_a_changed_export_is_loaded_and_force_loads_the_same(from_url, server, tmp_path):
    target = served_copy(tmp_path, from_url[0])
    version = facts.version_and_time(target).version
    previous = target.with_name("db.sqlite3.previous")
    kept = previous.read_bytes() if previous.exists() else None
    # The same records in other bytes, as a new export: loaded, and said to be the same.
    server.body = gzip.compress(gzip.decompress(SAMPLE.read_bytes()), compresslevel=1, mtime=0)
    server.etag = '"export-2"'
    result = run(target, server.url)
    assert result.exit_code == 0, result.output
    loaded = result.output.splitlines()[-1]
    assert loaded.startswith(f"Loaded {server.url}: party_series 250 → 250, ")
    assert loaded.endswith(f"(the same records as before, version {version}).")
    assert server.log[0][0]["If-None-Match"] == ETAG and server.log[0][1] == 200
    assert facts.provenance(target)["etag"] == '"export-2"'
    # The same records: the catalogue before them stays the one a rollback serves.
    assert (previous.read_bytes() if previous.exists() else None) == kept
    # --force: no validators sent, loaded although it is the export served.
    server.log.clear()
    result = run(target, "--force", server.url)
    assert result.exit_code == 0 and result.output.splitlines()[-1].startswith("Loaded ")
    assert "If-None-Match" not in server.log[0][0]
    assert {p.name for p in target.parent.iterdir()} <= KEPT


@pytest.mark.parametrize(
    "faults, line",
    [
        ([404], "{url}: HTTP 404 Not Found"),
        (
            [500, 500, 500],
            "{url}: HTTP 500 Internal Server Error (gave up after 3 attempts)",
        ),
        (["html"], "{url}: an HTML page (text/html; charset=utf-8), not a database export"),
        (["html-as-bytes"], "{url}: an HTML page, not a database export"),
    ],
)
def test_refusals(from_file, server, tmp_path, faults, line):
    server.faults.extend(faults)
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url)
    assert_failed(result, line.format(url=server.url), target, before)
    assert len(server.log) == len(faults)


def test_a_redirect_loop(from_file, server, tmp_path):
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    url = server.url.replace("/demozoo-export.sql.gz", "/loop")
    result = run(target, url)
    assert_failed(result, f"{url}: more than 3 redirects", target, before)
    assert len(server.log) == 4


def test_a_truncated_gzip_is_refused_before_any_import(from_file, server, tmp_path):
    server.body = SAMPLE.read_bytes()[:100_000]  # an honest length, a cut stream
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url)
    line = f"{server.url}: truncated: the gzip stream ends early (after 100,000 bytes received)"
    assert_failed(result, line, target, before)


def test_a_crc_error_is_refused(from_file, server, tmp_path):
    body = bytearray(SAMPLE.read_bytes())
    body[-8] ^= 0xFF  # the trailer's CRC-32
    server.body = bytes(body)
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url)
    line = f"{server.url}: corrupt: not a valid gzip stream (Error -3 while decompressing data: incorrect data check)"  # noqa: E501
    assert_failed(result, line, target, before)


def test_a_stalled_body_times_out(from_file, server, tmp_path):
    server.ranges = False
    server.faults.extend(["stall", "stall"])
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url, FETCH_RETRIES=1, FETCH_READ_TIMEOUT=0.2)
    line = f"{server.url}: no data for 0.2 s after 1,000 bytes (read timeout) (gave up after 2 attempts)"  # noqa: E501
    assert_failed(result, line, target, before)


def test_a_stalled_body_is_resumed(from_file, server, tmp_path):
    server.faults.append("stall")
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url, FETCH_READ_TIMEOUT=0.2)
    assert result.exit_code == 0, result.output
    assert "resumed 1×" in result.output and "the same bytes" in result.output
    # The second attempt asked for the rest only.
    assert server.log[1][0]["Range"] == "bytes=1000-" and server.log[1][0]["If-Range"] == ETAG
    assert server.log[1][1] == 206
    assert fingerprint(target) == before


def test_a_dropped_connection_gives_up_after_the_retries(from_file, server, tmp_path):
    server.ranges = False
    server.faults.extend(["drop", "drop", "drop"])
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url)
    half = len(SAMPLE.read_bytes()) // 2
    line = failure(result)
    assert line.startswith(f"{server.url}: the connection was lost after {half:,} of ")
    assert_failed(result, line, target, before)
    assert line.endswith("(gave up after 3 attempts)")
    assert len(result.stderr.splitlines()) == 3  # a line per retry, then the failure


@pytest.mark.parametrize("ranges", [True, False])
def test_a_dropped_connection_is_resumed_or_started_again(from_url, server, tmp_path, ranges):
    server.ranges = ranges
    server.faults.append("drop")
    target = served_copy(tmp_path, from_url[0])
    before = fingerprint(target)
    # Another address of the same export: no validators sent, the body downloaded, and
    # the digest then shows the export served (so no rebuild).
    result = run(target, server.url.replace("demozoo-export", "other"))
    assert result.exit_code == 0, result.output
    downloaded, unchanged = result.stdout.splitlines()
    assert "the same bytes as the export served" in unchanged
    size = len(SAMPLE.read_bytes())
    (first, status1, sent1), (second, status2, sent2) = server.log
    assert (status1, sent1) == (200, size // 2)
    if ranges:
        assert (second["Range"], second["If-Range"]) == (f"bytes={size // 2}-", ETAG)
        assert (status2, sent2) == (206, size - size // 2)
        assert "resumed 1×" in downloaded
    else:
        assert (status2, sent2) == (200, size)
        assert "restarted 1×" in downloaded
    assert fingerprint(target) == before
    assert {p.name for p in target.parent.iterdir()} <= KEPT


def test_500_then_success_and_429_waits_as_asked(from_file, server, tmp_path):
    server.faults.extend([500, 429])
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    result = run(target, server.url)
    assert result.exit_code == 0, result.output
    assert "3 attempts" in result.output and "the same bytes" in result.output
    assert [status for _, status, _ in server.log] == [500, 429, 200]
    assert fingerprint(target) == before


def test_retry_after_is_honoured_and_capped(server):
    """The waits between attempts: the server's Retry-After (capped), else backoff."""
    server.faults.extend([429, 500, 429])
    waits = []
    settings = fetch.Settings(retries=3, backoff=0.5, max_backoff=0.75, max_retry_after=7)
    download = fetch.fetch(server.url, io.BytesIO(), settings=settings, sleep=waits.append)
    assert download.changed and download.attempts == 4
    assert waits == [7, 0.75, 7]  # 429: Retry-After 7; 500: backoff 0.5 × 2**1, capped
    waits.clear()
    server.faults.extend([429])
    settings = fetch.Settings(retries=1, max_retry_after=2)
    fetch.fetch(server.url, io.BytesIO(), settings=settings, sleep=waits.append)
    assert waits == [2]


def test_the_waits_between_attempts_are_bounded_in_all(server):
    """A retry whose wait would take the waits past ``retry_seconds`` is not made: with
    the defaults, waits of 2, 4, 8 and 16 s (30 s), then one line (no 32 s more)."""
    server.faults.extend([500] * 6)
    waits = []
    with pytest.raises(fetch.FetchError) as error:
        fetch.fetch(server.url, io.BytesIO(), settings=fetch.Settings(), sleep=waits.append)
    assert waits == [2, 4, 8, 16]
    assert str(error.value) == (
        f"{server.url}: HTTP 500 Internal Server Error (gave up after 5 attempts: another "
        "wait of 32 s would pass the 30 s of waits allowed, FETCH_RETRY_SECONDS)"
    )
    server.faults.clear()
    server.faults.append(429)  # its Retry-After of 7 s, past the 5 s of waits allowed
    with pytest.raises(fetch.FetchError, match="another wait of 7 s would pass the 5 s"):
        fetch.fetch(server.url, io.BytesIO(), settings=fetch.Settings(retry_seconds=5))


@contextlib.contextmanager
def loading(url, target, **settings):
    """``demoserv load url`` into ``target`` in a process of its own, with ``settings``
    (``DEMOSERV_*``) and no others; killed when the block ends if it still runs."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("DEMOSERV_")}
    env.update(DEMOSERV_DATABASE=str(target), DEMOSERV_SEED_DIR="", **settings)
    process = subprocess.Popen(
        [sys.executable, "-m", "demoserv", "load", url],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_ctrl_c_ends_a_wait_between_attempts_at_once(tmp_path):
    """Each retry is one line as it happens; SIGINT during the wait after it ends the
    load at once, with one line and 130."""
    with refusing_url("/export.sql.gz") as url:
        with loading(url, tmp_path / "db.sqlite3", DEMOSERV_FETCH_BACKOFF="25") as process:
            retry = process.stderr.readline()
            assert retry.startswith("Attempt 1 of 6 failed: connection failed"), retry
            assert retry.endswith("; next in 25.0 s\n")
            started = time.monotonic()
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=20)
    assert time.monotonic() - started < 20  # not the 25 s wait
    assert process.returncode == 128 + signal.SIGINT
    assert err.strip().endswith("load interrupted by SIGINT; the served catalogue is unchanged")


def test_each_attempt_is_a_download_stage_and_each_retry_is_reported(server):
    """A body cut halfway, then resumed: a DOWNLOAD stage an attempt, the second from
    where the first stopped, and a Retrying between them."""
    server.faults.append("drop")
    events = []
    settings = fetch.Settings(retries=1, backoff=0)
    fetch.fetch(server.url, io.BytesIO(), settings=settings, report=events.append)
    size, half = len(server.body), len(server.body) // 2
    stages = [event for event in events if not isinstance(event, StageAdvanced)]
    cause = stages[2].cause
    assert cause.startswith(f"the connection was lost after {half:,} of {size:,} bytes")
    assert stages == [
        StageStarted(DOWNLOAD, server.url, size),
        StageFinished(DOWNLOAD, server.url),
        Retrying(1, 2, cause, 0.0),
        StageStarted(DOWNLOAD, server.url, size, half),
        StageFinished(DOWNLOAD, server.url),
    ]
    second = events.index(stages[3])
    assert sum(event.size for event in events[1 : second - 2]) == half
    assert sum(event.size for event in events[second + 1 : -1]) == size - half


def test_the_download_file_of_a_killed_load_is_removed_by_the_next(from_url, server, tmp_path):
    target = served_copy(tmp_path, from_url[0])
    leftover = target.with_name(".db.sqlite3.0123abcd.loading.download")
    leftover.write_bytes(b"x" * 1000)
    result = run(target, server.url)
    assert result.exit_code == 0 and result.stdout.startswith("Unchanged")
    assert result.stderr == f"removed {leftover} (1,000 bytes) left by an interrupted load\n"
    assert not leftover.exists()


def test_an_unreachable_server(from_file, tmp_path):
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    with refusing_url("/export.sql.gz") as url:
        result = run(target, url, FETCH_RETRIES=0)
    line = (
        f"{url}: connection failed (Failed to establish a new connection: [Errno 111] "
        "Connection refused) (gave up after 1 attempt)"
    )
    assert_failed(result, line, target, before)


def test_status_says_what_is_served_and_what_rollback_would_serve(
    from_url, from_file, server, tmp_path, make_app
):
    target = served_copy(tmp_path, from_url[0])
    shutil.copy2(from_file, target.with_name("db.sqlite3.previous"))
    version = facts.version_and_time(target).version
    app = make_app(target)
    result = app.test_cli_runner().invoke(args=["status"])
    assert result.exit_code == 0, result.output
    text = result.output
    assert text.startswith(
        f"Served catalogue: {target}\n  database from: the DATABASE setting\n"
        f"  source:        {server.url}, an address\n"
    )
    assert f"  ETag:          {ETAG}\n  Last-Modified: {LAST_MODIFIED}\n" in text
    assert "  export's date: not stated in the export\n" in text
    assert f"  version:       {version} (these records since " in text
    # Each resource's count, in the registry's order (another resource may stand between).
    records = text.split("\n  records:       ", 1)[1].split("\n", 1)[0].split(", ")
    counted = ["250 party_series", "90 platforms", "350 bbses", "450 parties", "2,350 productions"]
    assert [count for count in records if count in counted] == counted
    previous = text.split("\n\n")[1]
    assert previous.startswith(f"Previous catalogue (for demoserv rollback): {target}.previous\n")
    assert f"  source:        {SAMPLE.name} ({SAMPLE.resolve()}), an export file\n" in previous

    answer = app.test_client().get("/api/v1/status/")  # checked against the OpenAPI document
    assert answer.status_code == 200 and answer.headers["Cache-Control"] == "no-cache"
    answered = answer.json
    assert answered["version"] == version and answered["counts"]["productions"] == 2350
    assert answered["source"] == {
        "kind": "url",
        "source": server.url,
        "etag": ETAG,
        "last_modified": LAST_MODIFIED,
        "size": SAMPLE.stat().st_size,
        "sha256": hashlib.sha256(SAMPLE.read_bytes()).hexdigest(),
        "export_date": None,
    }
    assert answered["previous"]["source"]["source"] == SAMPLE.name
    assert str(tmp_path) not in answer.get_data(as_text=True)  # no file system path
    assert str(SAMPLE.parent) not in answer.get_data(as_text=True)
    options = app.test_client().options("/api/v1/status/")
    assert options.status_code == 200 and options.json["name"] == "Status"
    assert app.test_client().post("/api/v1/status/").status_code == 405
    head = app.test_client().head("/api/v1/status/")
    assert head.status_code == 200 and head.data == b""
    suffixed = app.test_client().get("/api/v1/status.json")  # like every API path
    assert suffixed.status_code == 200 and suffixed.json == answered
    jsonp = app.test_client().get("/api/v1/status/?format=jsonp&callback=seen")
    assert jsonp.data == b"seen(" + answer.data + b");"


def test_status_without_a_catalogue(tmp_path, make_app):
    app = make_app(tmp_path / "none.sqlite3")
    result = app.test_cli_runner().invoke(args=["status"])
    assert result.exit_code == 1
    assert result.output == (
        f"{tmp_path / 'none.sqlite3'} does not exist (database from the DATABASE setting): "
        "name another with --database, or load a catalogue into it with demoserv load\n"
    )
    assert not (tmp_path / "none.sqlite3").exists()
    answer = app.test_client().get("/api/v1/status/")
    assert answer.status_code == 503 and answer.json["detail"]


def test_the_export_date_a_dump_states_and_addresses_without_passwords():
    head = b"--\n-- PostgreSQL database dump\n--\n\n-- Started on 2026-11-22 02:30:01 UTC\n"
    assert provenance.export_date(head) == "2026-11-22 02:30:01 UTC"
    assert provenance.export_date(gzip.compress(head)) == "2026-11-22 02:30:01 UTC"
    assert provenance.export_date(gzip.decompress(SAMPLE.read_bytes())[:65536]) is None
    address = "https://mirror:secret@example.org:8443/demozoo-export.sql.gz"
    assert provenance.public_address(address) == "https://example.org:8443/demozoo-export.sql.gz"


def test_a_full_disk_during_the_download(server, tmp_path):
    from .test_install import mount_tmpfs

    small = tmp_path / "small"
    mount_tmpfs(small, "2m")
    try:
        server.body = gzip.compress(os.urandom(3_000_000), mtime=0)  # more than fits
        target = small / "db.sqlite3"
        result = run(target, server.url)
        assert result.exit_code == 1
        assert result.output == (
            f"{server.url}: cannot be saved: {small}: No space left on device\n"
        )
        assert {path.name for path in small.iterdir()} <= {".db.sqlite3.lock"}
    finally:
        subprocess.run(["umount", str(small)], check=True)


def test_a_signal_during_the_download_leaves_nothing(from_file, server, tmp_path):
    """SIGTERM while the body stalls: the load stops at once with one line and 143, and
    neither the download nor the build file remains."""
    stalled = threading.Event()
    server.faults.append("stall")
    server.on_stall = stalled.set
    target = served_copy(tmp_path, from_file)
    before = fingerprint(target)
    with loading(server.url, target, DEMOSERV_FETCH_READ_TIMEOUT="60") as process:
        assert stalled.wait(60), "the download never started"
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 128 + signal.SIGTERM
    assert err == f"{target}: load interrupted by SIGTERM; the served catalogue is unchanged\n"
    assert fingerprint(target) == before
    assert {path.name for path in target.parent.iterdir()} <= KEPT


def test_the_status_answer_shows_no_query_string(from_url, tmp_path):
    from demoserv.loader.status_facts import status

    target = served_copy(tmp_path, from_url[0])
    connection = sqlite3.connect(target)
    with connection:
        connection.execute(
            "UPDATE catalogue_source SET value = value || '?token=secret' WHERE key = 'source'"
        )
    connection.close()
    assert status(target)["source"]["source"].endswith("?token=secret")  # flask status
    assert "?" not in status(target, paths=False)["source"]["source"]  # over HTTP
    assert "path" not in status(target, paths=False)["source"]


def test_a_download_on_a_terminal_draws_a_bar(from_url, server, tmp_path):
    """On a pseudo-terminal: the bar (bytes of the total, rate, time left), then the
    summary lines."""
    target = served_copy(tmp_path, from_url[0])
    env = dict(os.environ, DEMOSERV_DATABASE=str(target), DEMOSERV_SEED_DIR="")
    # Another address of the export served: downloaded, then found the same.
    url = server.url.replace("demozoo-export", "copy")
    status, output = run_on_a_terminal(
        [sys.executable, "-m", "flask", "--app", "demoserv", "load", url], env
    )
    assert status == 0, output
    text = output.decode()
    assert "[##############################] 342.8 kB of 342.8 kB, " in text
    assert "/s, 0:00 left" in text
    lines = text.replace("\r\n", "\n").rstrip().split("\n")
    assert lines[-2].startswith(f"Downloaded {url}: 342.8 kB in ")
    assert lines[-1].startswith("Unchanged: ")


def test_without_etags_the_same_last_modified_and_size_end_the_download(from_url, server, tmp_path):
    server.etag, server.conditional = None, False  # Last-Modified only, never a 304
    target = served_copy(tmp_path, from_url[0])
    connection = sqlite3.connect(target)
    with connection:
        connection.execute("DELETE FROM catalogue_source WHERE key = 'etag'")
    connection.close()
    before = fingerprint(target)
    result = run(target, server.url)
    assert result.exit_code == 0, result.output
    assert result.output.startswith(
        f"Unchanged: {target} already serves {server.url}: same Last-Modified and size;"
    )
    assert server.log[0][0]["If-Modified-Since"] == LAST_MODIFIED
    assert "If-None-Match" not in server.log[0][0]
    assert fingerprint(target) == before
