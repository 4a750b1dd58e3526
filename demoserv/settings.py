"""Every setting of the service: its default, what it takes and what it does, said once.

A setting is given as ``DEMOSERV_<NAME>`` in the environment or ``<NAME>`` in the
instance folder's ``config.py`` (the environment wins). ``check`` turns each given value
into its kind, and stops a bad one with a line that names it as it was set."""

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from .loader.fetch import Settings as FetchSettings
from .loader.history import KEEP_DAYS
from .store.values import SERVICE_URL_FIELDS

PREFIX = "DEMOSERV_"
PACKAGE = Path(__file__).resolve().parent
# The catalogues that come with the package, by name.
PACKAGED = {
    "seed": "a few records of each resource",
    "sample": "the upstream's sample export: about 2,350 productions with nested records",
}


def packaged_catalogue(name):
    """The folder of the packaged catalogue ``name``: in a built package beside this
    module (pyproject.toml maps seed/ and sample/ there), in a checkout at the top."""
    installed = PACKAGE / name
    return installed if installed.is_dir() else PACKAGE.parent / name


class SettingError(ValueError):
    """A setting whose value cannot be used: the message names it as it was set."""


def text(value):
    if not isinstance(value, str):
        raise ValueError("expected text")
    return value


def optional_text(value):
    return None if value in (None, "") else text(value)


def whole_number(value):
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError("expected a whole number of 0 or more")
    try:
        number = int(value)
    except ValueError:
        raise ValueError("expected a whole number of 0 or more") from None
    if number < 0:
        raise ValueError("expected a whole number of 0 or more")
    return number


def seconds(value):
    if isinstance(value, bool):
        raise ValueError("expected a number of seconds")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError("expected a number of seconds") from None
    if number < 0:
        raise ValueError("expected a number of seconds of 0 or more")
    return number


def host_names(value):
    """A list of host names; from the environment, a JSON list or one name."""
    if value in (None, "", []):
        return None
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(name, str) and name for name in value):
        return value
    raise ValueError('expected a list of host names, such as ["api.example.org"]')


def base_urls(value):
    """Base addresses (``scheme://host[:port][/path]``); from the environment, a JSON
    list or one address. Scheme and host in lower case, no trailing slash."""
    if value in (None, ""):
        return []
    values = [value] if isinstance(value, str) else value
    expected = 'expected a list of http(s) addresses, such as ["https://api.example.org"]'
    if not isinstance(values, list):
        raise ValueError(expected)
    urls = []
    for url in values:
        parts = urlsplit(url) if isinstance(url, str) else None
        if (
            parts is None
            or parts.scheme.lower() not in ("http", "https")
            or not parts.hostname
            or parts.query
            or parts.fragment
            or parts.username
        ):
            raise ValueError(expected)
        try:
            parts.port  # noqa: B018 (a port that is not a number raises)
        except ValueError:
            raise ValueError(expected) from None
        urls.append(f"{parts.scheme.lower()}://{parts.netloc.lower()}{parts.path.rstrip('/')}")
    return urls


def service_url_field(value):
    if value not in SERVICE_URL_FIELDS:
        raise ValueError("expected one of " + ", ".join(SERVICE_URL_FIELDS))
    return value


LOG_FORMATS = ("auto", "json", "text")


def log_format(value):
    if value not in LOG_FORMATS:
        raise ValueError("expected one of " + ", ".join(LOG_FORMATS))
    return value


@dataclass(frozen=True)
class Setting:
    name: str
    default: object
    parse: object  # value as given -> value used; raises ValueError saying what is expected
    help: str


SETTINGS = (
    Setting(
        "DATABASE",
        None,
        optional_text,
        "The SQLite file served and loaded (as --database). A relative path is taken from "
        "the current folder; none: demoserv.sqlite3 in the instance folder. A server "
        "refuses to start on a file named here that does not exist.",
    ),
    Setting(
        "SITE_URL",
        "https://demozoo.org",
        text,
        "Base of every service_url: the public site whose pages the records mirror.",
    ),
    Setting(
        "SEED_DIR",
        str(packaged_catalogue("seed")),
        optional_text,
        "Catalogue folder the default database (in the instance folder) is built from "
        "when `demoserv serve` starts and it does not exist yet; empty: none (the server "
        "answers 503 until a load).",
    ),
    Setting(
        "TRUSTED_PROXIES",
        0,
        whole_number,
        "Number of proxies in front whose X-Forwarded-For, -Proto, -Host, -Port and "
        "-Prefix headers are trusted.",
    ),
    Setting(
        "TRUSTED_HOSTS",
        None,
        host_names,
        'Host names served, as a JSON list (["api.example.org"]); other Host headers get '
        "a 400. None: any Host is served. Set it when serving beyond loopback.",
    ),
    Setting(
        "CACHE_MAX_AGE",
        300,
        whole_number,
        "Seconds that clients and caches may reuse an answer (Cache-Control max-age).",
    ),
    Setting(
        "ANSWER_CACHE_BYTES",
        32 * 1024 * 1024,
        whole_number,
        "Bytes of answers kept whole for repeated requests, per server process "
        "(docs/caching.md); 0: none kept.",
    ),
    Setting(
        "LISTING_CACHE_BYTES",
        32 * 1024 * 1024,
        whole_number,
        "Bytes of listings found (filtered, or in an order on several keys) kept as ids, "
        "per server process, so that their later pages cost a slice (docs/caching.md); "
        "0: none kept.",
    ),
    Setting(
        "SERVICE_URL_FIELD",
        "service_url",
        service_url_field,
        "Name of the field holding a record's public page: service_url, or the "
        "upstream's own demozoo_url for programs written for the upstream API.",
    ),
    Setting(
        "SNAPSHOT_URLS",
        ["http://127.0.0.1:8080"],
        base_urls,
        "The addresses clients reach the service at, as a JSON list "
        '(["https://api.example.org"]): a load writes the snapshot (/api/v1/snapshot/) '
        "for each, since its records' url fields are absolute. Another address asking "
        "for it gets a 404. Empty: no snapshot is written.",
    ),
    Setting(
        "LOG_FORMAT",
        "auto",
        log_format,
        "The server's log on standard error: json (JSON lines), text (a line for a person "
        "to read) or auto (text when standard error is a terminal, JSON lines otherwise).",
    ),
    Setting(
        "CHANGES_KEPT_DAYS",
        KEEP_DAYS,
        whole_number,
        "Days of loads that the history of changes (/api/v1/changes/) keeps; a load drops "
        "older ones, but never the served catalogue's last load.",
    ),
) + tuple(
    Setting(
        f"FETCH_{name.upper()}",
        getattr(FetchSettings, name),
        whole_number if kind is int else seconds,
        help,
    )
    for name, kind, help in (
        ("connect_timeout", float, "Seconds a download may take to connect."),
        ("read_timeout", float, "Seconds a download may go without a byte from the server."),
        ("retries", int, "Further attempts after a failed download attempt."),
        ("backoff", float, "Seconds before the first retry, doubled for each next one."),
        ("max_backoff", float, "Longest wait in seconds between two download attempts."),
        ("max_retry_after", float, "Longest wait in seconds a server's Retry-After obtains."),
        ("retry_seconds", float, "All the waits between download attempts, in seconds."),
        ("max_redirects", int, "Redirects a download follows."),
    )
)

DEFAULTS = {setting.name: setting.default for setting in SETTINGS}


# DEMOSERV_ variables that are not settings of the service: the update unit's export
# (deploy/systemd), a client's CI's server (docs/testing-clients.md), the test suite's
# and the benchmarks' own.
OTHER_VARIABLES = ("EXPORT_URL", "URL", "PID", "TEST_SEED", "FUZZ_EXAMPLES", "FLOOR_ANSWERS")


def unknown_variables(environ):
    """A warning for each ``DEMOSERV_*`` variable of ``environ`` that is no setting (a
    misspelt one would otherwise be ignored without a word), naming the closest."""
    names = [PREFIX + setting.name for setting in SETTINGS]
    warnings = []
    for variable in sorted(environ):
        if not variable.startswith(PREFIX) or variable in names:
            continue
        if variable.removeprefix(PREFIX) in OTHER_VARIABLES:
            continue
        name = variable.removeprefix(PREFIX)
        close = difflib.get_close_matches(name, [s.name for s in SETTINGS], n=1, cutoff=0.6)
        hint = f": did you mean {PREFIX}{close[0]}?" if close else " (see demoserv settings)"
        warnings.append(f"{variable} is not a setting of demoserv, and is ignored{hint}")
    return warnings


def check(config, config_file):
    """Turn each setting in ``config`` into its kind, in place; a bad one raises
    SettingError naming it as set: ``DEMOSERV_<NAME>`` or ``<NAME>`` in ``config_file``
    (None: a test configuration)."""
    for setting in SETTINGS:
        value = config.get(setting.name)
        try:
            config[setting.name] = setting.parse(value)
        except ValueError as error:
            if config_file is None:  # a test configuration
                where = f"the {setting.name} setting"
            elif PREFIX + setting.name in os.environ:
                where = PREFIX + setting.name
            else:
                where = f"{setting.name} in {config_file}"
            raise SettingError(f"{where} is {value!r}: {error}; change or remove it") from None
