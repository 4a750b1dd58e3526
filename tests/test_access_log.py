"""The log (demoserv/web/access_log.py): JSON lines or text, as LOG_FORMAT chooses, text
by default on a terminal only; each format's lines, access lines included."""

import io
import json
import logging
import re
import sys
import urllib.request

from demoserv.server import launcher
from demoserv.web.access_log import TALLIED, AccessLog, JSONLines, TextLines, formatter

from .installed import BIN, environment, run_installed
from .terminal import OnATerminal

TIME = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z"
ACCESS = {
    "client": "127.0.0.1",
    "method": "GET",
    "path": "/api/v1/platforms/",
    "query": "page=2",
    "status": 200,
    "bytes": 7993,
    "ms": 7.16,
    "user_agent": "curl/8.5.0",
}


def record(message, name="demoserv.web.db", level=logging.INFO, access=None, exc_info=None):
    made = logging.LogRecord(name, level, __file__, 1, message, (), exc_info)
    made.created = 1795601944.296  # 2026-11-25T10:19:04.296Z
    if access is not None:
        made.access = access
    return made


def test_a_text_line_has_time_level_logger_and_message():
    line = TextLines().format(record("serving catalogue 4a1f loaded at 2026-11-25T10:00:00Z"))
    assert line == (
        "2026-11-25T10:19:04.296Z INFO demoserv.web.db: "
        "serving catalogue 4a1f loaded at 2026-11-25T10:00:00Z"
    )


def test_a_text_access_line_has_what_the_json_line_has():
    line = TextLines().format(record("{}", name="demoserv.access", access=ACCESS))
    assert line == (
        "2026-11-25T10:19:04.296Z 127.0.0.1 GET /api/v1/platforms/?page=2 200 7993 bytes "
        '7.16 ms "curl/8.5.0"'
    )
    no_query = TextLines().format(record("{}", access={**ACCESS, "query": "", "status": None}))
    assert " GET /api/v1/platforms/ - 7993 bytes " in no_query
    as_json = json.loads(JSONLines().format(record("{}", name="demoserv.access", access=ACCESS)))
    assert as_json == {
        "time": "2026-11-25T10:19:04.296Z",
        "level": "INFO",
        "logger": "demoserv.access",
        **ACCESS,
    }


def test_text_from_a_client_can_neither_move_the_cursor_nor_split_a_line():
    sent = {**ACCESS, "path": "/api/v1/\x1b[2J", "user_agent": "evil\r\nINFO forged"}
    line = TextLines().format(record("{}", access=sent))
    assert "\n" not in line and "\x1b" not in line and "\r" not in line
    assert line.endswith('/api/v1/\\x1b[2J?page=2 200 7993 bytes 7.16 ms "evil\\r\\nINFO forged"')
    said = TextLines().format(record("cannot serve: a\nb\x1b"))
    assert said.endswith("cannot serve: a\\nb\\x1b")


def test_a_traceback_follows_its_text_line_indented():
    try:
        raise ValueError("broken")
    except ValueError:
        failed = record("Exception on /api/v1/", level=logging.ERROR, exc_info=sys.exc_info())
    first, *rest = TextLines().format(failed).split("\n")
    assert first == "2026-11-25T10:19:04.296Z ERROR demoserv.web.db: Exception on /api/v1/"
    assert rest[0] == "  Traceback (most recent call last):"
    assert rest[-1] == "  ValueError: broken"
    assert all(line.startswith("  ") for line in rest)


class Stream(io.StringIO):
    def __init__(self, terminal):
        super().__init__()
        self.terminal = terminal

    def isatty(self):
        return self.terminal


def test_auto_is_text_on_a_terminal_only_and_a_choice_holds_anywhere():
    for terminal in (True, False):
        stream = Stream(terminal)
        assert type(formatter("auto", stream)) is (TextLines if terminal else JSONLines)
        assert type(formatter("json", stream)) is JSONLines
        assert type(formatter("text", stream)) is TextLines


def started_on_a_terminal(database, **settings):
    """The line ``demoserv serve`` writes on a terminal once it serves ``database``."""
    command = [BIN / "demoserv", "serve", "--listen=127.0.0.1:0", f"--database={database}"]
    with OnATerminal(command, environment(**settings)) as server:
        return server.line_with(b"Serving on ")


def test_on_a_terminal_the_log_is_text_unless_json_is_chosen(loaded_database):
    text = started_on_a_terminal(loaded_database)
    assert re.fullmatch(
        rf"{TIME} INFO demoserv\.server\.serving: Serving on http://127\.0\.0\.1:[0-9]+: "
        rf"catalogue version [0-9a-f]+, database {re.escape(str(loaded_database))}.*",
        text,
    ), text
    chosen = json.loads(started_on_a_terminal(loaded_database, DEMOSERV_LOG_FORMAT="json"))
    assert (chosen["level"], chosen["logger"]) == ("INFO", "demoserv.server.serving")


def test_a_server_logs_text_when_told(tmp_path, loaded_database):
    command = [BIN / "demoserv", "serve"]
    server = launcher.Demoserv(
        f"--database={loaded_database}",
        command=command,
        folder=tmp_path,
        cwd=tmp_path,
        env=environment(DEMOSERV_LOG_FORMAT="text"),
    )
    with server:
        request = urllib.request.Request(
            f"{server.url}/api/v1/platforms/?page=1", headers={"User-Agent": "client/1.0"}
        )
        with urllib.request.urlopen(request, timeout=30) as answer:
            size = len(answer.read())
        server.wait_until(lambda: '"client/1.0"' in server.log_text())
    lines = server.log_text().splitlines()
    started = [line for line in lines if " demoserv.server.serving: Serving on " in line]
    assert len(started) == 1 and re.match(rf"{TIME} INFO ", started[0]), lines
    (access,) = [line for line in lines if line.endswith('"client/1.0"')]
    assert re.fullmatch(
        rf"{TIME} 127\.0\.0\.1 GET /api/v1/platforms/\?page=1 200 {size} bytes "
        r'[0-9.]+ ms "client/1\.0"',
        access,
    ), access
    assert not [line for line in lines if line.startswith("{")]


def test_a_log_format_that_is_not_one_is_named(tmp_path):
    result = run_installed(
        "demoserv", "serve", "--listen=127.0.0.1:0", cwd=tmp_path, DEMOSERV_LOG_FORMAT="colour"
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert result.stderr == (
        "DEMOSERV_LOG_FORMAT is 'colour': expected one of auto, json, text; change or remove it\n"
    )


def test_a_path_and_user_agent_in_utf_8_are_logged_as_sent(app, caplog):
    """WSGI hands over the bytes sent as Latin-1: the access line reads them as UTF-8."""
    caplog.set_level(logging.INFO, logger="demoserv.access")
    agent = "Lecteur/1 (élan)".encode().decode("latin-1")  # its UTF-8 bytes, as WSGI has them
    app.test_client().get("/api/v1/café/", headers={"User-Agent": agent})
    (line,) = [r.access for r in caplog.records if r.name == "demoserv.access"]
    assert line["path"] == "/api/v1/café/"
    assert line["user_agent"] == "Lecteur/1 (élan)"


def test_refusals_of_a_flood_are_counted_in_a_line_a_second(caplog):
    """Requests marked TALLIED (admission's refusals while the guard is full) get no line
    each: the first request a second after the first of them says how many there were,
    from how many addresses; every other request keeps its own line."""
    caplog.set_level(logging.INFO, logger="demoserv.access")
    now = [100.0]

    def inner(environ, start_response):
        environ[TALLIED] = environ["PATH_INFO"] == "/refused"
        start_response("503 SERVICE UNAVAILABLE" if environ[TALLIED] else "200 OK", [])
        return [b"{}"]

    logged = AccessLog(inner, clock=lambda: now[0])

    def get(path, client):
        body = logged({"PATH_INFO": path, "REMOTE_ADDR": client}, lambda *args: None)
        b"".join(body)
        getattr(body, "close", lambda: None)()

    for number in range(5):
        get("/refused", f"127.0.0.{2 + number % 2}")
        now[0] += 0.1
    get("/api/v1/platforms/", "127.0.0.1")
    assert [r.access["path"] for r in caplog.records] == ["/api/v1/platforms/"]
    now[0] += 0.6  # a second since the first refusal
    get("/refused", "127.0.0.4")
    (tally,) = [r for r in caplog.records if not hasattr(r, "access")]
    assert tally.tally == {"refused": 6, "clients": 3, "seconds": 1.1}
    assert json.loads(JSONLines().format(tally))["refused"] == 6
    assert "6 requests for new listings refused at once" in tally.getMessage()
    get("/api/v1/platforms/", "127.0.0.1")
    assert len(caplog.records) == 3  # nothing counted since: no second line
