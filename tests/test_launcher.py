"""The one way to start a server: started on a free loopback port, its address known,
stopped by its process id; a server that cannot listen, or is not ready in time, is
stopped and said with its log's end."""

import json
import os
import socket
import sys
import urllib.request

import pytest

from demoserv.server import launcher

from .test_server import environment


def gone(pid):
    """Whether the process ``pid`` no longer exists (waited for, not merely dying)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_server_is_started_its_address_known_and_stopped(tmp_path, loaded_database):
    server = launcher.Demoserv(f"--database={loaded_database}", folder=tmp_path, env=environment())
    with server:
        assert server.url.startswith("http://127.0.0.1:")
        assert server.url == server.ready_file.read_text().strip()
        with urllib.request.urlopen(f"{server.url}/api/v1/platforms/", timeout=30) as answer:
            assert json.load(answer)["count"] > 0
        pid = server.pid
        assert not gone(pid)
    assert server.process.returncode is not None and gone(pid)
    assert "Serving on " in (tmp_path / "log").read_text()
    server.stop()  # a second stop: nothing to do


def test_a_server_that_cannot_listen_is_said_with_its_log(tmp_path, loaded_database):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = launcher.Demoserv(
            f"--database={loaded_database}", listen=f"127.0.0.1:{port}", folder=tmp_path
        )
        with pytest.raises(launcher.NotReady) as stopped:
            server.start()
    assert stopped.value.exit_status == 1
    message = str(stopped.value)
    assert message.startswith("demoserv serve stopped (exit 1) before it was ready:\n")
    assert f"cannot listen on 127.0.0.1:{port}: the address is in use" in message
    assert server.url is None


def test_a_server_not_ready_by_its_deadline_is_stopped(tmp_path):
    """A command that never writes its ready file: stopped by its PID once the
    deadline has passed, the end of its log said."""
    command = [sys.executable, "-c", "import time; print('waiting', flush=True); time.sleep(60)"]
    server = launcher.ReadyFileServer(command, folder=tmp_path, timeout=0.5, name="sleeper")
    with pytest.raises(launcher.NotReady) as late:
        server.start()
    assert late.value.exit_status is None
    assert str(late.value) == "sleeper was not ready within 0.5 s:\nwaiting"
    assert server.process.returncode is not None and gone(server.pid)


def test_other_servers_are_ready_when_they_say_or_answer(tmp_path):
    """A server of another program: ready when its log names its address, or when an
    address chosen beforehand answers."""
    program = (
        "import http.server, sys\n"
        "server = http.server.HTTPServer(('127.0.0.1', 0), http.server.BaseHTTPRequestHandler)\n"
        "print(f'Listening at http://127.0.0.1:{server.server_port}', flush=True)\n"
        "server.serve_forever()\n"
    )
    pattern = r"Listening at (http://127\.0\.0\.1:[0-9]+)"
    said = launcher.Server([sys.executable, "-c", program], launcher.announced(pattern))
    with said:
        assert said.url.startswith("http://127.0.0.1:")
        assert launcher.answers(said.url)  # its 501 is an answer
        answering = launcher.Server(
            [sys.executable, "-c", "import time; time.sleep(60)"],
            launcher.answering(said.url),
            folder=tmp_path,
            log=None,
        )
        with answering:
            assert answering.url == said.url
    assert gone(said.pid) and gone(answering.pid)
    assert not launcher.answers(said.url)
