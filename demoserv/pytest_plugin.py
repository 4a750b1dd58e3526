"""pytest fixtures for client projects: a real ``demoserv serve`` on a free loopback port.

Installed with the package (entry point ``pytest11``); a project that lists demoserv
among its test dependencies has them with nothing to configure::

    def test_a_party(demoserv_url):
        answer = urllib.request.urlopen(f"{demoserv_url}/api/v1/parties/2029/")

``demoserv_url`` is the server's base URL (``http://127.0.0.1:PORT``), ``demoserv_server``
the server itself (``url``, ``pid``, ``database``, ``log``). It serves the seed catalogue,
the package's sample catalogue (``sample``: about 2,350 productions with credits, links,
screenshots, competitions and memberships), or the catalogue folder or upstream export
file (``.sql.gz``) named by

- the ini option ``demoserv_catalogue`` (relative to the ini file), or
- the ``demoserv_catalogue`` fixture: override it in a ``conftest.py``, or parametrize it
  indirectly (``@pytest.mark.parametrize("demoserv_catalogue", [path], indirect=True)``).

One server per catalogue per session, with a database of its own in pytest's temporary
folder, started once it is first asked for and stopped by its process id when the
session ends. A catalogue that cannot be served stops the session with one line.
"""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .settings import packaged_catalogue

START_TIMEOUT = 60  # seconds for a named catalogue to load, and again for the server to start
STOP_TIMEOUT = 30  # seconds the server has to exit once told to
READY_CHECK_INTERVAL = 0.005  # seconds between looks for the ready file


class DemoservServer:
    """``demoserv serve`` in a process of its own on a free 127.0.0.1 port, with its
    database, ready file and log in ``folder``; serves ``catalogue`` (a catalogue folder
    or an export file), or the seed catalogue when it is None."""

    def __init__(self, folder, catalogue=None, timeout=START_TIMEOUT):
        self.folder = Path(folder)
        self.catalogue = None if catalogue is None else Path(catalogue)
        self.timeout = timeout
        self.database = self.folder / "demoserv.sqlite3"
        self.ready_file = self.folder / "ready"
        self.log = self.folder / "demoserv.log"
        self.process = None
        self.url = None

    @property
    def pid(self):
        return self.process.pid

    def start(self):
        environment = dict(os.environ)
        if self.catalogue is None:
            environment.pop("DEMOSERV_SEED_DIR", None)  # the seed shipped with the package
        else:
            environment["DEMOSERV_SEED_DIR"] = ""
            self._load(environment)
        command = [
            sys.executable,
            "-m",
            "demoserv",
            "serve",
            "--listen=127.0.0.1:0",
            f"--database={self.database}",
            f"--ready-file={self.ready_file}",
        ]
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                command, env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        try:
            self.url = self._wait_until_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def _load(self, environment):
        if not self.catalogue.exists():
            raise DemoservError(f"demoserv_catalogue: {self.catalogue} does not exist")
        loaded = subprocess.run(
            [sys.executable, "-m", "demoserv", "load", "--database", self.database, self.catalogue],
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=self.timeout,
        )
        if loaded.returncode != 0:
            raise DemoservError(
                f"demoserv could not load {self.catalogue}: {loaded.stderr or loaded.stdout}"
            )

    def _wait_until_ready(self):
        """The base URL from the ready file, which the server writes (whole, by a rename)
        once it listens and its catalogue is ready."""
        deadline = time.monotonic() + self.timeout
        while not self.ready_file.exists():
            if self.process.poll() is not None:
                raise DemoservError(
                    f"demoserv serve stopped (exit {self.process.returncode}) before it was "
                    f"ready:\n{self._log_tail()}"
                )
            if time.monotonic() > deadline:
                raise DemoservError(
                    f"demoserv serve was not ready within {self.timeout} s:\n{self._log_tail()}"
                )
            time.sleep(READY_CHECK_INTERVAL)
        return self.ready_file.read_text(encoding="utf-8").splitlines()[0]

    def _log_tail(self, lines=20):
        return "\n".join(
            self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:]
        )

    def stop(self):
        """Stop the server by its process id and wait for it to exit."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


class DemoservError(Exception):
    """The server could not be started: the message says why, with its log's end."""


def pytest_addoption(parser):
    parser.addini(
        "demoserv_catalogue",
        "catalogue for the demoserv fixtures to serve: seed (the default), sample, or a "
        "catalogue folder or upstream export file (.sql.gz) relative to the ini file",
        default="",
    )


@pytest.fixture(scope="session")
def demoserv_catalogue(request):
    """The catalogue the demoserv server serves: a catalogue folder or export file, or
    None for the seed; ``sample`` is the package's sample catalogue. An indirect
    parameter wins (relative to the rootdir), then the ini option
    ``demoserv_catalogue``; override this fixture to choose otherwise."""
    config = request.config
    if hasattr(request, "param"):
        value, base = request.param, config.rootpath
    else:
        value = config.getini("demoserv_catalogue")
        base = config.inipath.parent if config.inipath else config.rootpath
    if value in (None, "", "seed"):
        return None
    if value == "sample":
        return packaged_catalogue("sample")
    return base / Path(value)


@pytest.fixture(scope="session")
def demoserv_server(demoserv_catalogue, tmp_path_factory):
    """A running ``demoserv serve`` serving ``demoserv_catalogue``; stopped at session end.
    If it cannot start, the session stops: every test would fail for the same reason."""
    server = DemoservServer(tmp_path_factory.mktemp("demoserv"), demoserv_catalogue)
    try:
        server.start()
    except DemoservError as error:
        pytest.exit(str(error), returncode=pytest.ExitCode.TESTS_FAILED)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def demoserv_url(demoserv_server):
    """The base URL of the running server, ``http://127.0.0.1:PORT`` (no trailing slash)."""
    return demoserv_server.url
