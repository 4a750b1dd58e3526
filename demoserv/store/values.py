"""Values the catalogue loader and the server share: the id range, supertypes, partial
dates, timestamps, sort keys, and how a catalogue file is opened read-only. Neither
side's modules are imported here."""

import datetime
import re
import sqlite3
import unicodedata
from urllib.parse import quote

# What an SQLite INTEGER holds (PostgreSQL's bigint too); a larger id cannot name a record.
INTEGER_RANGE = (-(2**63), 2**63 - 1)
MAX_ID = INTEGER_RANGE[1]
MAX_TEXT = 1_000_000  # characters in one text field, of a catalogue file or the export
# A catalogue file's facts as a build writes them (catalogue_info, catalogue_loads): its
# version and its history's digest in hexadecimal, times in UTC to the second. They reach
# headers (ETag, X-Catalogue-Version, Last-Modified) and terminals only in these forms.
DIGEST_DIGITS = 32
TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_DIGEST = re.compile(f"[0-9a-f]{{{DIGEST_DIGITS}}}")
_TIME = re.compile("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z")
# The days a date can name, and the moments a timestamp can (Python's datetime, in UTC).
DATE_RANGE = "from 0001-01-01 to 9999-12-31"
TIMESTAMP_RANGE = "from 0001-01-01T00:00:00Z to 9999-12-31T23:59:59.999999Z in UTC"
ID_PATTERN = "[0-9]{1,19}"


def _at_most(largest):
    """A regular expression of the numbers from 1 to ``largest`` written in at most as
    many decimal digits as ``largest``, leading zeros allowed (``007``)."""
    digits = str(largest)
    width = len(digits)
    # Fewer significant digits than largest (so smaller), after k leading zeros.
    shorter = ["0" * k + f"[1-9][0-9]{{0,{min(width - 1, width - k) - 1}}}" for k in range(width)]
    # As many: below largest from its i-th digit on, or largest itself.
    as_many = [
        f"{digits[:i]}[{1 if i == 0 else 0}-{int(digit) - 1}][0-9]{{{width - 1 - i}}}"
        for i, digit in enumerate(digits)
        if int(digit) > (1 if i == 0 else 0)
    ]
    return "(" + "|".join([*shorter, *as_many, digits]) + ")"


# Exactly the ids a filter takes (ID_PATTERN, from 1 to MAX_ID): the OpenAPI document's.
RECORD_ID_PATTERN = _at_most(MAX_ID)
# Exactly the dates partial_date_error accepts, as regular expressions (the OpenAPI
# document's): years 0001 to 9999, real months and days, 29 February in leap years.
_YEAR = "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})"
_MONTH = "(0[1-9]|1[0-2])"
_MONTH_DAY = (
    "((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])"
    "|(0[469]|11)-(0[1-9]|[12][0-9]|30)"
    "|02-(0[1-9]|1[0-9]|2[0-8]))"
)
# Divisible by 4 but not by 100 (two last digits), or by 400 (two first, then 00).
_LEAP_YEAR = "([0-9]{2}(0[48]|[2468][048]|[13579][26])|(0[48]|[2468][048]|[13579][26])00)"
FULL_DATE_PATTERN = f"({_YEAR}-{_MONTH_DAY}|{_LEAP_YEAR}-02-29)"
PARTIAL_DATE_PATTERN = f"({_YEAR}|{_YEAR}-{_MONTH}|{FULL_DATE_PATTERN})"
SUPERTYPES = ("production", "music", "graphics")
# The public site's section of a production's page, by supertype.
SECTIONS = {"production": "productions", "music": "music", "graphics": "graphics"}
# Names of the field that holds a record's public page: ours, and the upstream's own.
SERVICE_URL_FIELDS = ("service_url", "demozoo_url")
# The upstream's /api/adhoc/ answers, built at load and stored by path (under
# /api/adhoc/) and month ("" for an answer of no month, and a month list's empty one);
# in a stored answer, a NUL byte stands for the configured site's host.
ADHOC_MONTH_PATHS = ("klubi/demoshow-prods/", "scenesat/monthly-releases/")
ADHOC_SITE_HOST = "\x00"

_PARTIAL_DATE = re.compile(r"([0-9]{4})(?:-([0-9]{2})(?:-([0-9]{2}))?)?")
_DIGIT_RUN = re.compile(r"[0-9]+")
_SPACE_RUN = re.compile(r"\s+")
_ARTICLES = ("the ", "a ", "an ")
_FIRST_DAY_SUFFIX = {4: "-01-01", 7: "-01", 10: ""}


def partial_date_error(value):
    """What is wrong with ``value`` as a partial date (``YYYY``, ``YYYY-MM`` or
    ``YYYY-MM-DD`` naming a real month or day), or None."""
    match = _PARTIAL_DATE.fullmatch(value)
    if not match:
        return f'"{value}" is not a date of the form YYYY, YYYY-MM or YYYY-MM-DD.'
    year, month, day = (int(part) if part else 1 for part in match.groups())
    try:
        datetime.date(year, month, day)
    except ValueError:
        return f'"{value}" is not a real date.'
    return None


def date_key(partial_date):
    """A partial date as its first day: ``1993`` → ``1993-01-01``; None stays None."""
    if partial_date is None:
        return None
    return partial_date + _FIRST_DAY_SUFFIX[len(partial_date)]


def timestamp_key(value):
    """A date or date-time as a UTC ``YYYY-MM-DDTHH:MM:SS.ffffffZ`` string, which sorts in
    time order; a date is its midnight UTC, a date-time without offset is UTC. Raises
    ValueError for anything else, and for a moment its offset puts outside
    ``TIMESTAMP_RANGE`` (``9999-12-31T23:59:59-01:00`` is in the year 10000 in UTC)."""
    # 42: the longest form fromisoformat reads, time and offset to the microsecond.
    if not isinstance(value, str) or len(value) < 10 or len(value) > 42:
        raise ValueError(value)
    moment = datetime.datetime.fromisoformat(value.replace("Z", "+00:00").replace(" ", "T"))
    if moment.tzinfo is not None:
        try:
            moment = moment.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        except OverflowError:
            raise ValueError(value) from None
    # isoformat, not strftime: "%Y" does not pad the years before 1000 to four digits.
    return moment.isoformat(timespec="microseconds") + "Z"


def shown(value, limit=40):
    """A value as a one-line message quotes it: its repr (control characters, line breaks
    and bidirectional marks escaped), cut short."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        return repr(value[:limit]) + "..."
    return repr(value)


def digest_error(value):
    """What is wrong with ``value`` as a catalogue version or history digest, or None."""
    if isinstance(value, str) and _DIGEST.fullmatch(value):
        return None
    return f"{shown(value)} is not {DIGEST_DIGITS} hexadecimal digits"


def time_error(value):
    """What is wrong with ``value`` as a time a build writes (TIME_FORMAT), or None."""
    try:
        if isinstance(value, str) and _TIME.fullmatch(value):
            datetime.datetime.strptime(value, TIME_FORMAT)
            return None
    except ValueError:
        pass
    return f"{shown(value)} is not a time (YYYY-MM-DDTHH:MM:SSZ)"


def facts_error(version, loaded_at, history):
    """What is wrong with a catalogue file's version, load time and history digest as
    its ``catalogue_info`` holds them (``history`` may be None), or None."""
    for name, error in (
        ("version", digest_error(version)),
        ("loaded_at", time_error(loaded_at)),
        ("history", history and digest_error(history)),
    ):
        if error:
            return f"{name}: {error}"
    return None


def sortable_title(title):
    """The upstream's sort key of a title: accents dropped (letters that do not
    decompose stay), ``$`` → ``s``, punctuation → spaces, spaces collapsed and trimmed,
    lower case, digit runs zero-padded to 9, a leading article moved to the end."""
    decomposed = unicodedata.normalize("NFD", title)
    text = "".join(char for char in decomposed if not unicodedata.combining(char))
    text = text.replace("$", "s")
    text = "".join(" " if unicodedata.category(char).startswith("P") else char for char in text)
    text = _SPACE_RUN.sub(" ", text).strip().lower()
    text = _DIGIT_RUN.sub(lambda match: match.group().zfill(9), text)
    for article in _ARTICLES:
        if text.startswith(article):
            return f"{text[len(article) :]} {article.strip()}"
    return text


def search_fold(text):
    """Text as the ``search`` filter compares it: decomposed (NFD), combining marks
    dropped (letters that do not decompose, such as ``ø``, stay), lower-cased
    (``str.lower``); nothing else changes (punctuation and ``$`` stay)."""
    if text.isascii():
        return text.lower()
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).lower()


def name_key(name):
    """Case-insensitive, with names that start with punctuation, symbols or spaces
    first, then names that start with a digit, then the rest (letters)."""
    category = unicodedata.category(name[0]) if name else ""
    group = "2" if category.startswith("L") else "1" if category == "Nd" else "0"
    return group + name.lower()


def read_only_uri(path):
    """The URI that opens the catalogue file at ``path`` to read only: files are never
    changed once built, so SQLite may skip locking and change checks (immutable)."""
    return f"file:{quote(str(path))}?mode=ro&immutable=1"


def connect_read_only(path, **options):
    """A sqlite3 connection that can only read the catalogue file at ``path``."""
    return sqlite3.connect(read_only_uri(path), uri=True, **options)
