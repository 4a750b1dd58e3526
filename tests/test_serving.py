"""``demoserv-serve``: waitress with requests of ambiguous length refused, and with
settings under which slow and idle clients cannot keep others out."""

import json
import socket
import sys
import time

import pytest

from demoserv import create_app, serving

from .conftest import SITE_URL
from .test_server import Server

DEADLINE = 30  # seconds any awaited event may take


class Serve(Server):
    """``demoserv-serve`` (``python -m demoserv.serving``) on a free loopback port."""

    def command(self):
        return [
            sys.executable,
            "-m",
            "demoserv.serving",
            "--listen=127.0.0.1:0",
            f"--threads={self.threads}",
            *self.options,
        ]

    @property
    def address(self):
        host, port = self.base.removeprefix("http://").split(":")
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
    with server.connect() as connection:
        connection.sendall(
            b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"0\r\n\r\n" + SMUGGLED + b"GET /api/v1/ HTTP/1.1\r\nHost: localhost\r\n"
            b"Connection: close\r\n\r\n"
        )
        answers = responses(read_until_closed(connection))
    assert [status for status, _, _ in answers] == [200, 200, 200]
    assert json.loads(answers[1][2])["results"]  # the platforms


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
    settings, timeout = serving.parse_arguments(["--listen=127.0.0.1:0", "--threads=2"])
    assert timeout == serving.REQUEST_TIMEOUT
    server = serving.make_server(app, request_timeout=3, **settings)
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
        serving.main(arguments)
    message = str(stopped.value.code) + capsys.readouterr().err
    assert "demoserv-serve" in message
