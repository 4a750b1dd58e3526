"""``demoserv-serve``: waitress with requests of ambiguous length refused, and with
settings under which slow and idle clients cannot keep others out."""

import json
import re
import shlex
import socket
import time
import urllib.request
from http import HTTPStatus
from pathlib import Path

import pytest
from waitress.adjustments import Adjustments

from demoserv import create_app
from demoserv.cli.commands import serve_main
from demoserv.server import launcher, serving
from demoserv.settings import packaged_catalogue

from .conftest import SITE_URL
from .test_server import Checked, environment

DEADLINE = 30  # seconds any awaited event may take


class Serve(Checked, launcher.Demoserv):
    """``demoserv serve`` (``python -m demoserv serve``) on a free loopback port."""

    def __init__(self, database, threads=4, options=()):
        super().__init__(
            f"--database={database}", f"--threads={threads}", *options, env=environment()
        )

    @property
    def address(self):
        host, port = self.url.removeprefix("http://").split(":")
        return host, int(port)

    def connect(self):
        connection = socket.create_connection(self.address, timeout=DEADLINE)
        return connection


@pytest.fixture(scope="module")
def server(tmp_path_factory, loaded_database):
    with Serve(loaded_database, options=["--request-timeout=1"]) as running:
        yield running


def read_until_closed(connection):
    """Everything the server sends until it closes the connection; fails if it keeps
    the connection open past the deadline."""
    connection.settimeout(DEADLINE)
    data = b""
    while True:
        try:
            chunk = connection.recv(65536)
        except TimeoutError:
            pytest.fail(f"the connection is still open after {DEADLINE} s: {data[:300]!r}")
        except ConnectionResetError:
            return data
        if not chunk:
            return data
        data += chunk


def responses(data):
    """(status, headers, body) of each response in ``data``, which holds whole ones."""
    found = []
    while data:
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", 0))
        found.append((int(lines[0].split()[1]), headers, rest[:length]))
        data = rest[length:]
    return found


SMUGGLED = b"GET /api/v1/platforms/?smuggled=1 HTTP/1.1\r\nHost: localhost\r\n\r\n"


@pytest.mark.parametrize(
    "head",
    [
        "GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n"
        "Transfer-Encoding: chunked\r\n",
        "GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\ntransfer-encoding: chunked\r\n"
        "content-length: 48\r\n",
        "POST /api/v1/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n"
        "Content-Length: 0\r\n",
        "GET /api/v1/ HTTP/1.0\r\nHost: localhost\r\nConnection: keep-alive\r\n"
        "Transfer-Encoding: chunked\r\n",
    ],
)
def test_a_request_of_ambiguous_length_is_refused_and_the_connection_closed(server, head):
    with server.connect() as connection:
        connection.sendall(head.encode() + b"\r\n" + b"0\r\n\r\n" + SMUGGLED)
        answers = responses(read_until_closed(connection))
    assert len(answers) == 1, answers  # the bytes after the headers were never a request
    status, headers, body = answers[0]
    assert status == 400
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert "ambiguous" in json.loads(body)["detail"]


def test_a_chunked_request_alone_is_answered_and_the_connection_kept(server):
    """Its body is read to its end (a POST may carry a small one: it is then a 405),
    and what follows is the next request."""
    with server.connect() as connection:
        connection.sendall(
            b"POST /api/v1/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"3\r\nabc\r\n0\r\n\r\n" + SMUGGLED + b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n"
            b"Connection: close\r\n\r\n"
        )
        answers = responses(read_until_closed(connection))
    assert [status for status, _, _ in answers] == [405, 200, 200]
    assert json.loads(answers[1][2])["results"]  # the platforms


BODIES = [
    # (request head, body sent after it, status, what the detail says)
    ("GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 5\r\n", b"hello", 400, "GET"),
    ("HEAD /api/v1/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n", b"x", 400, "HEAD"),
    (
        "OPTIONS /api/v1/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 1\r\n",
        b"x",
        400,
        "An OPTIONS request takes no body",
    ),
    ("GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n", b"", 400, "GET"),
    (
        "POST /api/v1/ HTTP/1.1\r\nHost: localhost\r\nContent-Length: 300000000\r\n",
        b"x" * 65536,
        413,
        "too large",
    ),
    (
        "POST /api/v1/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n",
        b"10000\r\n" + b"x" * 65536,
        413,
        "too large",
    ),
]


@pytest.mark.parametrize("head, body, status, detail", BODIES)
def test_request_bodies_are_refused_before_they_are_read(server, head, body, status, detail):
    """A 300 MB body is refused from its headers: its bytes are never read (the
    connection closes after the answer, so they are not taken for a request either)."""
    with server.connect() as connection:
        connection.sendall(head.encode() + b"\r\n")
        try:
            connection.sendall(body + SMUGGLED)
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed already: nothing of the body was wanted
        answered = read_until_closed(connection)
    answers = responses(answered)
    assert len(answers) == 1, answers
    got, headers, text = answers[0]
    assert got == status
    assert answered.startswith(f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n".encode())
    assert headers["content-type"] == "application/json"
    assert headers["x-content-type-options"] == "nosniff"
    assert detail in json.loads(text)["detail"]


@pytest.mark.parametrize(
    "request_bytes, status",
    [
        # waitress's own refusals, answered in the service's error shape
        (
            b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            400,
        ),
        (b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\nBad Header: 1\r\n\r\n", 400),
        (b"G(T /api/v1/ HTTP/1.1\r\nHost: x\r\n\r\n", 400),
        (b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n", 501),
        (b"GET /api/v1/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"y" * 300_000 + b"\r\n\r\n", 431),
    ],
)
def test_the_servers_own_errors_are_in_the_one_error_shape(server, request_bytes, status):
    with server.connect() as connection:
        connection.sendall(request_bytes)
        answers = responses(read_until_closed(connection))
    got, headers, body = answers[0]
    assert got == status
    assert headers["content-type"] == "application/json"
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["access-control-allow-origin"] == "*"
    detail = json.loads(body)["detail"]
    assert detail and "waitress" not in detail


def test_http_1_1_without_host_is_a_400(server):
    with server.connect() as connection:
        connection.sendall(b"GET /api/v1/ HTTP/1.1\r\nConnection: close\r\n\r\n")
        ((status, headers, body),) = responses(read_until_closed(connection))
    assert status == 400 and "Host" in json.loads(body)["detail"]
    assert "waitress.invalid" not in body.decode()


def test_a_304_keeps_the_connection_and_answers_what_follows(server):
    with server.connect() as connection:
        connection.sendall(
            b"GET /api/v1/platforms/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        ((_, headers, _),) = responses(read_until_closed(connection))
    revalidation = (
        f"GET /api/v1/platforms/ HTTP/1.1\r\nHost: localhost\r\n"
        f"If-None-Match: {headers['etag']}\r\n\r\n"
    ).encode()
    with server.connect() as connection:
        connection.sendall(
            revalidation
            + revalidation
            + SMUGGLED.replace(b"\r\n\r\n", b"\r\nConnection: close\r\n\r\n")
        )
        answers = responses(read_until_closed(connection))
    assert [status for status, _, _ in answers] == [304, 304, 200]
    assert "connection" not in answers[0][1]


def test_pipelined_requests_are_all_answered_in_order(server):
    names = ["platforms", "productions", "parties", "releasers", "bbses", "party_series"] * 3
    paths = [f"/api/v1/{name}/" for name in names]
    requests = b"".join(
        f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode() for path in paths
    )
    with server.connect() as connection:
        connection.sendall(
            b"\r\n"
            + requests
            + b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        answers = responses(read_until_closed(connection))
    assert [status for status, _, _ in answers] == [200] * (len(paths) + 1)
    for name, (_, _, body) in zip(names, answers):
        assert f"/api/v1/{name}/" in json.loads(body)["results"][0]["url"]


def answered(server, path):
    """How many answers to ``path`` the server has logged so far."""
    return server.log_text().count(f'"path": "{path}"')


def wait_until_steady(count, what):
    """Wait until ``count()`` has not changed for a second: the server has done all it
    will do for what was sent."""
    deadline = time.monotonic() + DEADLINE
    last, since = count(), time.monotonic()
    while time.monotonic() - since < 1:
        assert time.monotonic() < deadline, f"{what} still growing after {DEADLINE} s"
        time.sleep(0.05)
        if count() != last:
            last, since = count(), time.monotonic()
    return last


def test_clients_that_never_read_do_not_lock_out_a_reader(loaded_database):
    """16 clients (as many as the server has threads) each send 170 pipelined requests
    for the largest answer and never read. waitress alone served each connection's
    requests until its unread answers passed its 16 MB high-water mark, then held the
    worker for as long as the connection stayed open: all 16 workers, and no reader was
    answered. Now each connection gets only what the sockets' buffers take."""
    path = "/api/v1/openapi.json"
    request = f"GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode()
    attackers = []
    with Serve(loaded_database, threads=16) as running:
        try:
            for _ in range(16):
                connection = running.connect()
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                connection.sendall(request * 170)
                attackers.append(connection)
            served = wait_until_steady(lambda: answered(running, path), "answers to attackers")
            assert served < 16 * 170 / 2  # far fewer than were asked for
            on_time = 0
            for _ in range(10):
                started = time.monotonic()
                try:
                    with urllib.request.urlopen(running.url + "/api/v1/platforms/", timeout=3):
                        on_time += time.monotonic() - started < 3
                except OSError:
                    pass
            assert on_time >= 9
            assert answered(running, path) == served  # nothing more for clients that never read
        finally:
            for connection in attackers:
                connection.close()


def wait_closed(connection, trickle=None):
    """Seconds until the server closes ``connection``; while waiting, send ``trickle``
    one byte at a time, a byte every 0.1 s, if given."""
    started = time.monotonic()
    connection.settimeout(0.1)
    sent = 0
    while time.monotonic() - started < DEADLINE:
        try:
            if connection.recv(65536) == b"":
                return time.monotonic() - started
        except TimeoutError:
            pass
        except ConnectionResetError:
            return time.monotonic() - started
        if trickle and sent < len(trickle):
            try:
                connection.send(trickle[sent : sent + 1])
            except (BrokenPipeError, ConnectionResetError):
                return time.monotonic() - started
            sent += 1
    pytest.fail(f"the connection is still open after {DEADLINE} s")


def test_a_request_that_trickles_in_is_cut_off(server):
    """waitress alone keeps such a connection as long as bytes keep coming."""
    header = b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n" + b"X-Slow: a\r\n" * 1000
    with server.connect() as connection:
        wait_closed(connection, trickle=header)
    # Others are still served.
    assert server.get("/api/v1/")[0] == 200


def test_idle_connections_are_closed(loaded_database):
    with Serve(loaded_database, options=["--channel-timeout=1", "--cleanup-interval=1"]) as running:
        with running.connect() as connection:
            connection.sendall(b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n\r\n")
            connection.settimeout(DEADLINE)
            assert connection.recv(65536).startswith(b"HTTP/1.1 200 ")
            wait_closed(connection)


def still_open(connection):
    connection.setblocking(False)
    try:
        return connection.recv(1) != b""
    except BlockingIOError:
        return True
    except ConnectionError:
        return False


def test_more_slow_clients_than_waitress_allows_do_not_keep_others_out(loaded_database):
    """waitress's own limit is 100 connections; 300 clients sending headers slowly
    leave room for a normal one, without being cut off to make it."""
    slow = []
    with Serve(loaded_database, options=["--request-timeout=60"]) as running:
        try:
            for _ in range(300):
                connection = running.connect()
                connection.sendall(b"GET /api/v1/ HTTP/1.1\r\nHost: local")
                slow.append(connection)
            status, _, body = running.get("/api/v1/platforms/")
            assert status == 200 and body["results"]
            assert all(still_open(connection) for connection in slow)
        finally:
            for connection in slow:
                connection.close()


def test_the_chosen_settings_are_applied(loaded_database):
    app = create_app({"DATABASE": str(loaded_database), "SITE_URL": SITE_URL, "SEED_DIR": ""})
    server = serving.make_server(app, request_timeout=3, listen="127.0.0.1:0", threads=2)
    try:
        assert server.adj.threads == 2
        assert server.adj.connection_limit == serving.DEFAULTS["connection_limit"] > 100
        assert server.adj.channel_timeout == serving.DEFAULTS["channel_timeout"] < 120
        assert server.adj.asyncore_use_poll is True
        assert issubclass(server.channel_class, serving.Channel)
        assert server.channel_class.request_timeout == 3
    finally:
        server.task_dispatcher.shutdown()
        server.close()


@pytest.mark.parametrize(
    "arguments",
    [["--threads=0"], ["--channel-timeout=x"], ["--trusted-proxy-headers=x-forwarded-for"]],
)
def test_bad_arguments_stop_with_a_message(arguments, capsys):
    with pytest.raises(SystemExit) as stopped:
        serve_main(arguments)
    assert stopped.value.code == 2
    assert capsys.readouterr().err.startswith("demoserv")


def wait_for(condition, what):
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


def test_the_ready_file_means_it_answers_even_on_the_first_start(tmp_path):
    first_start = launcher.Demoserv(
        "--database=first.sqlite3",
        "--catalogue=seed",
        folder=tmp_path,
        cwd=tmp_path,
        env=environment(),
    )
    with first_start:
        text = first_start.ready_file.read_text()
        assert re.fullmatch(r"http://127\.0\.0\.1:[0-9]+\n", text)
        # The database was built from the seed before the file was written: no 503.
        with urllib.request.urlopen(f"{text.strip()}/api/v1/productions/", timeout=30) as answer:
            assert answer.status == 200
            seed = packaged_catalogue("seed") / "productions.jsonl"
            assert json.load(answer)["count"] == len(seed.read_text().splitlines())
        assert (tmp_path / "first.sqlite3").is_file()  # --database: relative to the current folder


def test_a_server_that_cannot_listen_leaves_no_ready_file(tmp_path, loaded_database):
    """Not even the one of an earlier run, which it removes at its start."""
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    ready = tmp_path / "ready"
    ready.write_text("stale\n")
    port = taken.getsockname()[1]
    command = [
        *launcher.DEMOSERV_SERVE,
        f"--listen=127.0.0.1:{port}",
        f"--database={loaded_database}",
        f"--ready-file={ready}",
    ]
    never_ready = launcher.Server(command, lambda server: None, folder=tmp_path, env=environment())
    with taken, pytest.raises(launcher.NotReady) as stopped:
        never_ready.start()
    assert stopped.value.exit_status == 1
    assert not ready.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["log"]  # no temporary file left


def test_help_says_where_the_database_is(capsys):
    with pytest.raises(SystemExit) as stopped:
        serve_main(["--help"])
    assert stopped.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "--database PATH" in text and "--ready-file PATH" in text and "--version" in text
    assert "A relative path is taken from the current folder" in text
    assert "Default: demoserv.sqlite3 in the instance folder" in text


def test_the_docs_waitress_serve_command_sets_what_demoserv_serve_sets():
    """docs/running.md's waitress-serve command, as written, gives waitress the settings
    of demoserv serve (DEFAULTS), the body limit among them."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "running.md").read_text()
    block = re.search(
        r"```sh\n(waitress-serve --listen=127\.0\.0\.1:8080 --threads.*?)```", text, re.S
    )
    words = shlex.split(block[1].replace("\\\n", " "))
    assert words[0] == "waitress-serve" and words[-2:] == ["--call", "demoserv:serving_app"]
    given, _ = Adjustments.parse_args(words[1:])
    given = {k: v for k, v in given.items() if k not in ("help", "call", "listen")}
    adjusted = Adjustments(**given)
    for name, value in serving.DEFAULTS.items():
        assert getattr(adjusted, name) == value, name
