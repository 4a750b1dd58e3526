"""Downloading the upstream's export from an ``http(s)`` address into a file, with
requests (over urllib3): the body streamed to disk as it arrives, connect and read
timeouts, bounded retries with exponential backoff on connection errors, 5xx and 429
(``Retry-After`` honoured, capped), bounded redirects, and an interrupted transfer
resumed with ``Range``/``If-Range`` when the server allows it (``206``), started again
when it does not (``200``).

A download that is not a whole export is refused before anything reads it: a body
shorter than its ``Content-Length``, a gzip stream that ends early or fails its CRC
(checked as the bytes arrive), an HTML page sent with ``200``.

Conditional requests: given the validators of the export served, the request carries
``If-None-Match``/``If-Modified-Since``; a ``304``, or a ``200`` whose validators show the
same export, ends the download before any body is read.
"""

import email.utils
import hashlib
import re
import time
import zlib
from dataclasses import dataclass, field

from . import provenance
from .reporting import DOWNLOAD, Retrying, StageAdvanced, StageFinished, StageStarted, silent

CHUNK = 1 << 16
GZIP_MAGIC = b"\x1f\x8b"
USER_AGENT = "demoserv (catalogue mirror)"
_CONNECTION_PREFIX = re.compile(r"^(<[^>]*>|\w*Connection\([^)]*\)): ")
RETRIED_STATUSES = frozenset({429, 500, 502, 503, 504}) | frozenset(range(505, 600))


class FetchError(Exception):
    """A download that failed: one line naming the address and the cause."""

    exit_status = 1


@dataclass
class Settings:
    """How patient a download is. Every value is configurable (``FETCH_*`` settings)."""

    connect_timeout: float = 10.0  # seconds to connect
    read_timeout: float = 60.0  # seconds without a byte from the server
    retries: int = 5  # further attempts after a failed one
    backoff: float = 2.0  # seconds before the first retry, doubled for each next one
    max_backoff: float = 120.0  # longest wait between attempts
    max_retry_after: float = 600.0  # longest wait a server's Retry-After obtains
    retry_seconds: float = 30.0  # all the waits between attempts, at the most
    max_redirects: int = 10

    KEYS = {
        "connect_timeout": float,
        "read_timeout": float,
        "retries": int,
        "backoff": float,
        "max_backoff": float,
        "max_retry_after": float,
        "retry_seconds": float,
        "max_redirects": int,
    }

    @classmethod
    def from_config(cls, config):
        """From the ``FETCH_<NAME>`` entries of a Flask config (e.g. the environment
        variable ``DEMOSERV_FETCH_READ_TIMEOUT=30``)."""
        values = {}
        for name, kind in cls.KEYS.items():
            value = config.get(f"FETCH_{name.upper()}")
            if value is not None:
                values[name] = kind(value)
        return cls(**values)

    def wait_before(self, attempt):
        """Seconds to wait before the ``attempt``-th retry (1, 2, ...)."""
        return min(self.backoff * 2 ** (attempt - 1), self.max_backoff)


@dataclass
class Download:
    """What a fetch found: ``changed`` False when the served export is the same (no body
    read); else the export's facts and how the transfer went."""

    changed: bool
    facts: dict = field(default_factory=dict)
    received: int = 0  # bytes received, over every attempt
    attempts: int = 1
    resumed: int = 0  # transfers continued with Range
    restarted: int = 0  # transfers started again from the first byte
    elapsed: float = 0.0
    why: str = ""  # why it is unchanged: "304 Not Modified", "same ETag", ...


class _GzipCheck:
    """Inflates a gzip stream as it arrives, discarding the text, to find a stream that
    ends early or fails its CRC before anything reads it."""

    def __init__(self):
        self.inflater = zlib.decompressobj(wbits=31)
        self.between_members = False

    def feed(self, data):
        while data:
            self.between_members = False
            self.inflater.decompress(data, 1 << 20)
            if self.inflater.eof:
                data = self.inflater.unused_data
                self.inflater = zlib.decompressobj(wbits=31)
                self.between_members = True
            else:
                data = self.inflater.unconsumed_tail

    def finish(self):
        """True if the stream ended where a gzip member ends."""
        if self.between_members:
            return True
        self.inflater.flush()
        return self.inflater.eof


class _Body:
    """The file being written, its digest and its checks, as a transfer goes on."""

    def __init__(self, file):
        self.file = file
        self.reset()

    def reset(self):
        self.file.seek(0)
        self.file.truncate()
        self.size = 0
        self.digest = hashlib.sha256()
        self.head = b""
        self.gzip = None

    def write(self, chunk):
        if len(self.head) < provenance.HEAD:
            self.head += chunk[: provenance.HEAD - len(self.head)]
            if self.size == 0 and chunk[:2] == GZIP_MAGIC:
                self.gzip = _GzipCheck()
        if self.gzip is not None:
            self.gzip.feed(chunk)
        self.digest.update(chunk)
        self.file.write(chunk)
        self.size += len(chunk)


def _looks_like_html(head, content_type):
    if content_type.split(";")[0].strip().lower() in ("text/html", "application/xhtml+xml"):
        return True
    return head.lstrip()[:1] == b"<"


def _retry_after(response, settings):
    """Seconds the server asks to wait (``Retry-After``, in seconds or as a date), capped
    at ``settings.max_retry_after``; None if it does not say."""
    value = response.headers.get("Retry-After", "").strip()
    if not value:
        return None
    if value.isdigit():
        seconds = float(value)
    else:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return min(max(seconds, 0.0), settings.max_retry_after)


def _content_range_start(response):
    """(first byte, total or None) of a 206's ``Content-Range``; None if unreadable."""
    value = response.headers.get("Content-Range", "")
    try:
        unit, spec = value.split(" ", 1)
        span, total = spec.split("/", 1)
        start = int(span.split("-", 1)[0])
    except ValueError:
        return None
    if unit.strip().lower() != "bytes":
        return None
    return start, (int(total) if total.strip().isdigit() else None)


def _length(response):
    value = response.headers.get("Content-Length", "")
    return int(value) if value.strip().isdigit() else None


def _strong(etag):
    return etag if etag and not etag.startswith("W/") else None


def _same_export(response, known):
    """Why a 200's validators show the export ``known`` (the served one's facts), or ""."""
    etag = response.headers.get("ETag")
    if etag and _strong(etag) and etag == known.get("etag"):
        return "same ETag"
    modified = response.headers.get("Last-Modified")
    length = _length(response)
    if (
        not etag
        and not known.get("etag")
        and modified
        and modified == known.get("last_modified")
        and length is not None
        and str(length) == known.get("size")
    ):
        return "same Last-Modified and size"
    return ""


class _Retry(Exception):
    """An attempt that failed in a way worth another: ``cause`` says how; ``wait``, if
    set, is how long the server asked to wait."""

    def __init__(self, cause, wait=None):
        super().__init__(cause)
        self.cause = cause
        self.wait = wait


def fetch(url, file, *, known=None, settings=None, report=silent, sleep=time.sleep, session=None):
    """Download the export at ``url`` into ``file`` (a binary file open for writing and
    reading). ``known``: the facts of the served export if it came from ``url`` (its
    validators are sent, and a response showing the same export ends the fetch), or None.
    Each body received is a DOWNLOAD stage, each further attempt a Retrying, reported to
    ``report``. Returns a Download; raises FetchError in one line naming the address and
    the cause."""
    settings = settings or Settings()
    shown = provenance.public_address(url)
    own_session = session is None
    if own_session:
        import requests  # here, not at the top: see _Fetcher

        session = requests.Session()
    session.max_redirects = settings.max_redirects
    fetcher = _Fetcher(url, shown, file, known, settings, report, session)
    started = time.monotonic()
    waited = 0.0
    try:
        attempt = 0
        while True:
            attempt += 1
            try:
                download = fetcher.attempt()
                break
            except _Retry as failure:
                wait = failure.wait if failure.wait is not None else settings.wait_before(attempt)
                tries = "attempt" if attempt == 1 else "attempts"
                if attempt > settings.retries:
                    raise FetchError(
                        f"{shown}: {failure.cause} (gave up after {attempt} {tries})"
                    ) from None
                if waited + wait > settings.retry_seconds:
                    raise FetchError(
                        f"{shown}: {failure.cause} (gave up after {attempt} {tries}: "
                        f"another wait of {wait:g} s would pass the {settings.retry_seconds:g} s "
                        "of waits allowed, FETCH_RETRY_SECONDS)"
                    ) from None
                report(Retrying(attempt, settings.retries + 1, failure.cause, wait))
                sleep(wait)
                waited += wait
    finally:
        if own_session:
            session.close()
    download.attempts = attempt
    download.received = fetcher.received
    download.resumed, download.restarted = fetcher.resumed, fetcher.restarted
    download.elapsed = time.monotonic() - started
    return download


class _Fetcher:
    # requests and urllib3 (ssl with them, about 16 MB) are imported where a download
    # happens: a server imports this module for the FETCH_* settings' defaults alone.

    def __init__(self, url, shown, file, known, settings, report, session):
        self.url, self.shown = url, shown
        self.known = known or {}
        self.settings, self.report, self.session = settings, report, session
        self.body = _Body(file)
        self.total = None  # bytes of the whole export, once a response says
        self.validator = None  # what If-Range sends when resuming: a strong ETag or a date
        self.response_facts = {}
        self.received = self.resumed = self.restarted = 0

    def fail(self, cause):
        return FetchError(f"{self.shown}: {cause}")

    def headers(self):
        headers = {"User-Agent": USER_AGENT, "Accept-Encoding": "identity"}
        if self.body.size and self.validator:
            headers["Range"] = f"bytes={self.body.size}-"
            headers["If-Range"] = self.validator
        elif not self.body.size:
            if self.known.get("etag"):
                headers["If-None-Match"] = self.known["etag"]
            if self.known.get("last_modified"):
                headers["If-Modified-Since"] = self.known["last_modified"]
        return headers

    def attempt(self):
        if self.body.size and not self.validator:
            self.restart()  # nothing to resume safely with
        import requests

        timeout = (self.settings.connect_timeout, self.settings.read_timeout)
        try:
            response = self.session.get(
                self.url, headers=self.headers(), stream=True, timeout=timeout
            )
        except requests.TooManyRedirects:
            raise self.fail(f"more than {self.settings.max_redirects} redirects") from None
        except requests.ConnectTimeout:
            raise _Retry(f"no connection within {self.settings.connect_timeout:g} s") from None
        except requests.ReadTimeout:
            raise _Retry(f"no answer within {self.settings.read_timeout:g} s") from None
        except requests.ConnectionError as error:
            raise _Retry(f"connection failed ({_reason(error)})") from None
        except requests.RequestException as error:
            raise self.fail(_reason(error)) from None
        with response:
            return self.receive(response)

    def restart(self):
        if self.body.size:
            self.restarted += 1
        self.body.reset()

    def receive(self, response):
        status = response.status_code
        what = f"HTTP {status} {response.reason or ''}".strip()
        if status == 304 and self.known and not self.body.size:
            return Download(changed=False, why="304 Not Modified")
        if status in RETRIED_STATUSES:
            raise _Retry(what, _retry_after(response, self.settings))
        if status == 206 and self.body.size:
            span = _content_range_start(response)
            if span is None or span[0] != self.body.size:
                self.restart()
                raise _Retry(f"{what} with an unexpected Content-Range", 0.0)
            self.resumed += 1
            if span[1] is not None:
                self.total = span[1]
        elif status == 200:
            self.restart()
            if self.known:
                why = _same_export(response, self.known)
                if why:
                    return Download(changed=False, why=why)
            self.first_response(response)
        elif status == 416 and self.body.size:
            self.restart()
            raise _Retry(f"{what} when resuming", 0.0)
        else:
            raise self.fail(what)
        self.stream(response)
        return self.finish()

    def first_response(self, response):
        content_type = response.headers.get("Content-Type", "")
        if _looks_like_html(b"", content_type):
            raise self.fail(f"an HTML page ({content_type}), not a database export")
        self.total = _length(response)
        etag = response.headers.get("ETag")
        modified = response.headers.get("Last-Modified")
        self.validator = _strong(etag) or modified
        self.response_facts = {"etag": etag, "last_modified": modified}

    def stream(self, response):
        import requests
        import urllib3.exceptions

        self.report(StageStarted(DOWNLOAD, self.shown, self.total, self.body.size))
        try:
            while True:
                try:
                    # What has arrived, at most CHUNK bytes: a stalled body leaves on
                    # disk every byte received before it stalled.
                    chunk = response.raw.read1(CHUNK, decode_content=False)
                except urllib3.exceptions.ReadTimeoutError:
                    raise _Retry(
                        f"no data for {self.settings.read_timeout:g} s after "
                        f"{self.body.size:,} bytes (read timeout)"
                    ) from None
                except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as error:
                    if self.total is not None and self.body.size < self.total:
                        # The body ended before its Content-Length.
                        raise _Retry(
                            f"the connection was lost after {self.body.size:,} of "
                            f"{self.total:,} bytes"
                        ) from None
                    raise _Retry(
                        f"the connection was lost after {self.body.size:,} bytes ({_reason(error)})"
                    ) from None
                if not chunk:
                    break
                first = self.body.size == 0
                self.received += len(chunk)
                try:
                    self.body.write(chunk)
                except zlib.error as error:
                    raise self.fail(f"corrupt: not a valid gzip stream ({error})") from None
                if first and _looks_like_html(self.body.head, ""):
                    raise self.fail("an HTML page, not a database export")
                self.report(StageAdvanced(len(chunk)))
        finally:
            self.report(StageFinished(DOWNLOAD, self.shown))

    def finish(self):
        size = self.body.size
        if self.total is not None and size != self.total:
            raise _Retry(
                f"the body is shorter than its Content-Length ({size:,} of {self.total:,})"
            )
        if size == 0:
            raise self.fail("an empty answer, not a database export")
        if self.body.gzip is not None and not self.body.gzip.finish():
            raise self.fail(
                f"truncated: the gzip stream ends early (after {size:,} bytes received)"
            )
        if _looks_like_html(self.body.head, ""):
            raise self.fail("an HTML page, not a database export")
        self.body.file.flush()
        facts = {
            "kind": "url",
            "source": self.shown,
            **{key: value for key, value in self.response_facts.items() if value},
            "size": str(size),
            "sha256": self.body.digest.hexdigest(),
        }
        date = provenance.export_date(self.body.head)
        if date:
            facts["export_date"] = date
        return Download(changed=True, facts=facts)


def _reason(error):
    """The innermost cause of a requests or urllib3 error, in a few words."""
    while True:
        inner = error.args[0] if error.args and isinstance(error.args[0], Exception) else None
        inner = getattr(error, "reason", None) or inner
        if not isinstance(inner, Exception) or inner is error:
            break
        error = inner
    text = str(error)
    # urllib3 puts the connection first: "HTTPConnection(host=..., port=...): Failed..."
    text = _CONNECTION_PREFIX.sub("", text)
    return text or type(error).__name__
