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
from pathlib import Path

import pytest

from .server import launcher
from .settings import packaged_catalogue

START_TIMEOUT = 60  # seconds for a named catalogue to load, and again for the server to start


class DemoservServer(launcher.Demoserv):
    """``demoserv serve`` in a process of its own on a free 127.0.0.1 port, started,
    waited for and stopped by ``launcher``, with its database, ready file and log in
    ``folder``; serves ``catalogue`` (a catalogue folder or an export file), or the seed
    catalogue when it is None."""

    def __init__(self, folder, catalogue=None, timeout=START_TIMEOUT):
        self.catalogue = None if catalogue is None else Path(catalogue)
        self.database = Path(folder) / "demoserv.sqlite3"
        # A database named that does not exist is built only when asked for: the seed
        # shipped with the package, or (once loaded, by start) the catalogue named.
        seed = ["--catalogue=seed"] if self.catalogue is None else []
        super().__init__(
            f"--database={self.database}",
            *seed,
            folder=folder,
            log="demoserv.log",
            env=dict(os.environ),
            timeout=timeout,
        )

    def start(self):
        if self.catalogue is not None:
            self._load()
        try:
            return super().start()
        except launcher.NotReady as error:
            raise DemoservError(str(error)) from None

    def _load(self):
        if not self.catalogue.exists():
            raise DemoservError(f"demoserv_catalogue: {self.catalogue} does not exist")
        loaded = subprocess.run(
            [sys.executable, "-m", "demoserv", "load", "--database", self.database, self.catalogue],
            env=self.env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=self.timeout,
        )
        if loaded.returncode != 0:
            raise DemoservError(
                f"demoserv could not load {self.catalogue}: {loaded.stderr or loaded.stdout}"
            )


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
