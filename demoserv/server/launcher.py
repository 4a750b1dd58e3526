"""One way to start a server process and know its address, wait for it with a deadline,
and stop it by its process id.

``Demoserv`` is ``demoserv serve`` on a free loopback port, whose address is read
from the file ``--ready-file`` writes once the server listens and its catalogue is
ready: the pytest plugin, the tests and the benchmarks start every demoserv server
with it (but for the deployment's test, which runs the replicas with their systemd
unit's own command line). Servers of other programs are a ``Server`` with a
readiness of their own: ``answering`` (an address chosen beforehand answers HTTP:
nginx) or ``announced`` (a line of their log names the address: gunicorn, flask run,
and ``WaitressServe``, the app served by ``waitress-serve``, which has no ready file).
Imports nothing of the package and nothing beyond the standard library."""

import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from pathlib import Path

START_TIMEOUT = 60  # seconds a server may take to be ready
STOP_TIMEOUT = 30  # seconds a server has to exit once told to, before it is killed
CHECK_INTERVAL = 0.005  # seconds between two looks at whether a server is ready
LOOPBACK = "127.0.0.1:0"  # a free port on loopback, which the system chooses
DEMOSERV_SERVE = (sys.executable, "-m", "demoserv", "serve")
LOG_TAIL = 20  # lines of a server's log that a failure to start quotes
WAITRESS_SERVE = (sys.executable, "-m", "waitress")
SERVING_APP = ("--call", "demoserv:serving_app")
WAITRESS_SERVING_ON = r"Serving on (http://[^\s\"]+)"  # waitress-serve's line once it listens


class NotReady(Exception):
    """The server stopped before it was ready (``exit_status`` its exit status), or was
    not ready within its deadline (``exit_status`` None); the message says which, with
    the end of its log."""

    def __init__(self, message, exit_status=None):
        super().__init__(message)
        self.exit_status = exit_status


class Server:
    """``command`` in a process of its own, ready once ``ready(server)`` gives its base
    URL. Its files are in ``folder`` (if None, a temporary folder, removed with the
    server object): its output appended to the file ``log`` there (None: this
    process's own output) and ``ready_file``, the name for a command that writes one.
    ``name`` is what failures call it."""

    POPEN_OPTIONS = {}  # more of subprocess.Popen's, for a kind of server that needs them

    def __init__(
        self,
        command,
        ready,
        *,
        folder=None,
        log="log",
        ready_file="ready",
        env=None,
        cwd=None,
        timeout=START_TIMEOUT,
        name=None,
    ):
        if folder is None:
            folder = tempfile.mkdtemp(prefix="server-")
            weakref.finalize(self, shutil.rmtree, folder, ignore_errors=True)
        self.folder = Path(folder)
        self.log = None if log is None else self.folder / log
        self.ready_file = self.folder / ready_file
        self.command = [str(part) for part in command]
        self.ready, self.env, self.cwd, self.timeout = ready, env, cwd, timeout
        self.name = name or Path(self.command[0]).name
        self.process = None
        self.url = None

    @property
    def pid(self):
        return self.process.pid

    def launch(self):
        """Start the process without waiting for it (``wait`` does); returns the server."""
        if self.log is None:
            self.process = self._popen(None)
        else:
            with open(self.log, "ab") as output:
                self.process = self._popen(output)
        return self

    def _popen(self, output):
        return subprocess.Popen(
            self.command,
            env=self.env,
            cwd=self.cwd,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=output,
            **self.POPEN_OPTIONS,
        )

    def wait(self):
        """Wait until the server is ready, and note its base URL; stops it and raises
        NotReady if it stops before or is not ready within ``timeout`` seconds."""
        try:
            self.url = self.wait_until(lambda: self.ready(self))
        except BaseException:
            self.stop()
            raise
        return self

    def start(self):
        """Start the server and wait until it is ready; returns the server."""
        return self.launch().wait()

    def wait_until(self, condition):
        """What ``condition()`` gives once true; NotReady if the process stops first or
        ``timeout`` seconds pass."""
        deadline = time.monotonic() + self.timeout
        while not (found := condition()):
            exit_status = self.process.poll()
            if exit_status is not None:
                raise NotReady(
                    f"{self.name} stopped (exit {exit_status}) before it was ready{self._tail()}",
                    exit_status,
                )
            if time.monotonic() > deadline:
                raise NotReady(f"{self.name} was not ready within {self.timeout} s{self._tail()}")
            time.sleep(CHECK_INTERVAL)
        return found

    def log_text(self):
        """Everything the server has written so far ("" when its output is not kept)."""
        if self.log is None or not self.log.exists():
            return ""
        return self.log.read_text(encoding="utf-8", errors="replace")

    def _tail(self):
        lines = self.log_text().splitlines()[-LOG_TAIL:]
        return ":\n" + "\n".join(lines) if lines else ""

    def stop(self, timeout=STOP_TIMEOUT):
        """Stop the server by its process id and wait for it to exit (killed if it has
        not within ``timeout`` seconds)."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def __enter__(self):
        return self if self.process is not None else self.start()

    def __exit__(self, *exc):
        self.stop()


def read_ready_file(server):
    """The first line of the server's ready file, once written (whole, by a rename)."""
    try:
        text = server.ready_file.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return text.splitlines()[0] if text else None


def answering(url):
    """Readiness of a server on an address chosen beforehand: ``url`` once it answers."""
    return lambda server: url if answers(url) else None


def announced(pattern):
    """Readiness of a server that names its address in its log: the first group of the
    first match of ``pattern``."""

    def ready(server):
        match = re.search(pattern, server.log_text())
        return match and match.group(1)

    return ready


def answers(url):
    """Whether an HTTP server answers at ``url`` (any status: a 503 is an answer)."""
    try:
        with urllib.request.urlopen(url, timeout=5):
            return True
    except urllib.error.HTTPError:
        return True
    except OSError:
        return False


class ReadyFileServer(Server):
    """A ``Server`` of ``command``, one that takes ``--ready-file PATH`` and writes its
    base URL there once ready; a ready file of an earlier run is removed at launch."""

    def __init__(self, command, **options):
        super().__init__(command, read_ready_file, **options)
        self.command.append(f"--ready-file={self.ready_file}")

    def launch(self):
        self.ready_file.unlink(missing_ok=True)  # a file of an earlier run must not count
        return super().launch()


class Demoserv(ReadyFileServer):
    """``demoserv serve ARGUMENTS`` listening on ``listen`` (a free loopback port unless
    given); ``command`` is how to run ``demoserv serve`` (this Python's by default).
    ``options``: those of ``Server``."""

    def __init__(self, *arguments, command=DEMOSERV_SERVE, listen=LOOPBACK, **options):
        options.setdefault("name", "demoserv serve")
        super().__init__([*command, f"--listen={listen}", *arguments], **options)


class WaitressServe(Server):
    """``waitress-serve ARGUMENTS --call demoserv:serving_app`` (or the WSGI app that
    ``app`` names) listening on ``listen`` (a free loopback port unless given): ready
    once its log says where it serves. ``options``: those of ``Server``."""

    def __init__(self, *arguments, app=SERVING_APP, listen=LOOPBACK, **options):
        options.setdefault("name", "waitress-serve")
        command = [*WAITRESS_SERVE, f"--listen={listen}", *arguments, *app]
        super().__init__(command, announced(WAITRESS_SERVING_ON), **options)
