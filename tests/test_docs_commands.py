"""Every command in README.md and docs/*.md runs here, or its block says why not and is
checked for syntax, or is run by .ci/run or by another test module, which takes it from
the page (the markers: tests/docs_blocks.py); a docs change that breaks a command fails
the suite.

How each language is run:

- ``sh``: each command (a line, with its continuation lines) in a shell of its own, from
  the sandbox below; it must exit 0. A command that serves (it ends in ``&``, or runs
  ``demoserv serve``, ``waitress-serve`` or ``http.server`` in the foreground) is
  started in the background, in a process group of its own, by
  demoserv/server/launcher.py, and the next commands wait until its address answers
  (with a deadline); a server on a port the group serves already replaces that one.
  A command that names a docs address no command has started a server at (a curl of
  127.0.0.1:8080) runs against ``demoserv serve`` started there for the test, serving
  the sandbox's database (two small catalogues loaded in turn if it has none yet, so
  that the history of changes holds a change), its snapshot written for the server's
  address (as a load does for DEMOSERV_SNAPSHOT_URLS naming it). A command that an
  earlier block of the group has run (its comment aside) is not run again: README and
  docs/index.md share the quick start, README and docs/mirror.md the local mirror.
- ``console``: each ``$`` command, whose output (standard output and error) must be
  the lines shown under it. These show the mistakes of an installation that has served
  already: the sandbox's database is in place (the two small catalogues), the addresses
  they name are held busy by the test, and the sandbox's path is shown as /srv.
- ``yaml``: the CI job's steps, as GitHub Actions runs them: each ``run`` script with
  ``bash -e``, RUNNER_TEMP and GITHUB_ENV in the sandbox, GITHUB_ENV's lines given to the
  later steps, an ``if: always()`` step run after a failure. Not run: the ``uses`` steps
  (the checkout is the sandbox, setup-python's python3 is this venv's) and the step that
  runs the client's own tests (npm, go, dotnet), which is replaced by a request of
  production 108 from the DEMOSERV_URL the job set. The install from the repository's
  git URL is the stand-in pip below: this venv is substituted for that one step. The
  server the job started must be gone after its last step.
- ``python``: compiled; the pytest plugin's examples, and the ini blocks that configure
  it, are run by tests/test_pytest_plugin.py with pytester (docs_blocks.plugin_examples).

The sandbox: each group of pages (``GROUPS``; any other page alone) runs in a folder of
its own, as a reader runs the commands from a clone: the checkout's files linked in
(none written), and
- ``.venv/`` a stand-in, and so is every ``python3 -m venv DIR``: DIR/bin holds links to
  this venv's commands (demoserv, demoserv-serve, waitress-serve, mkdocs) and Python, and
  a ``pip`` that accepts exactly the documented installs (``DOCUMENTED_INSTALLS``) and
  installs nothing. Installing is exercised by .ci/run (the suite's venv, the docs
  site's packages) and .ci/check-package (a wheel in a fresh venv, served from outside
  the checkout). The checkout's own .venv is never touched: the stand-in python3 makes
  venvs inside the test's own folder only.
- PATH starts with such a bin/ (``python3``, ``python``, ``demoserv``, ...);
- DEMOSERV_DATABASE is a file in the sandbox, not the checkout's instance/, built from
  the seed catalogue beforehand (a named database is never built by ``serve``: the
  default one's first start is exercised by .ci/check-package and tests/test_cli.py);
  no other DEMOSERV_* setting is passed on;
- the docs' placeholders are there: ``path/to/catalogue`` (a small catalogue folder),
  ``demozoo-export.sql.gz`` (a small export in the upstream's form, bench/generate_dump.py)
  and ``built.sqlite3`` (a catalogue file built from the small catalogue).

What the test changes in a command, and nothing else:
- a fixed port (127.0.0.1:8080, 0.0.0.0:8080, ``http.server 8000``) becomes a free
  port, the same one for the same docs port throughout the group, so that test workers
  never collide; ``demoserv serve`` without ``--listen`` has its default address,
  127.0.0.1:8080, written out first;
- a path under /tmp/ is put under the sandbox's tmp/;
- curl gets ``--fail --silent --show-error`` and says the answer's status, which must be
  2xx;
- ``since=`` an example catalogue version asks for the version the server's history
  starts at.
"""

import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from demoserv.loader import snapshot
from demoserv.loader.resources import FROM_UPSTREAM
from demoserv.loader.sources import load_catalogue
from demoserv.server import launcher
from demoserv.settings import DEFAULTS
from demoserv.store.snapshot import Address

from . import catalogue_factory, docs_blocks
from .docs_blocks import ROOT

BIN = Path(sys.executable).parent
# Pages whose commands share a sandbox, in this order: the quick start's server, then
# the local mirror tried against it and a browser's request of it; the operations on
# the placeholders.
GROUPS = [
    ("README.md", "docs/index.md", "docs/mirror.md", "docs/browsable.md"),
    ("docs/api.md", "docs/running.md"),
]
# The pip commands the docs show, as the stand-in pip sees its arguments.
DOCUMENTED_INSTALLS = (
    "install -e .",
    "install -e .[test]",
    "install -e .[docs]",
    "install git+https://example.org/demoserv.git",
)
LINKED_COMMANDS = ("demoserv", "demoserv-serve", "waitress-serve", "mkdocs", "flask")
COMMAND_TIMEOUT = 120  # seconds any one command may take
TRANSCRIPT_FOLDER = "/srv"  # the current folder, as the console transcripts show it
CLIENT_TESTS = re.compile(r"\b(npm|yarn|go|dotnet|cargo|mvn|gradle)\b")
# What stands for the client's own tests in the CI job: a request of the server it started.
CLIENT_TESTS_HERE = 'curl -fsS "$DEMOSERV_URL/api/v1/productions/108/" | grep -q "Second Reality"'

ADDRESS = re.compile(r"\b(127\.0\.0\.1|0\.0\.0\.0|localhost):(\d+)\b")
HTTP_SERVER_PORT = re.compile(r"\b(http\.server )(\d+)\b")
LISTEN = re.compile(r"--listen[= ]\S*:(\d+)")
BACKGROUND = re.compile(r"(?<!&)&\s*(#.*)?$")
SERVES = re.compile(r"\b(demoserv serve|demoserv-serve|waitress-serve|http\.server)\b")
EXAMPLE_VERSION = re.compile(r"\bsince=[0-9a-f]{32}\b")
CURL = re.compile(r"\bcurl ")
CURL_STATUS = re.compile(r"^curl: HTTP (\d{3})$", re.MULTILINE)


def groups():
    """Every group of pages with a block this test runs (sh, console, yaml)."""
    runs = {b.path for b in docs_blocks.all_blocks() if b.run_here and b.language != "python"}
    found = [tuple(p for p in group if p in runs) for group in GROUPS]
    grouped = {path for group in GROUPS for path in group}
    found += [(path,) for path in docs_blocks.pages() if path in runs and path not in grouped]
    return [group for group in found if group]


# Processes


def live_members(group):
    """The processes of process group ``group`` that have not exited."""
    members = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(int(stat.parent.name))
    return members


def stop_group(group, timeout=launcher.STOP_TIMEOUT):
    """Stop the process group of a process started here (``group``: its id) with all it
    started: SIGTERM, then SIGKILL for what remains after ``timeout`` seconds."""
    for sent in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(group, sent)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout
        while live_members(group):
            if time.monotonic() > deadline:
                break
            time.sleep(launcher.CHECK_INTERVAL)
        else:
            return


def run(command, *, cwd, env, timeout=COMMAND_TIMEOUT, leave=None):
    """``command`` to its end in a process group of its own: (exit status, or None if it
    timed out; its output). What it left running is stopped, unless ``leave`` (a list)
    is given: the group's id is added to it, to be stopped later."""
    process = subprocess.Popen(
        command,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        process_group=0,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
        status = process.returncode
    except subprocess.TimeoutExpired:
        stop_group(process.pid)
        output, _ = process.communicate()
        status = None
    if leave is None:
        stop_group(process.pid)
    else:
        leave.append(process.pid)
    return status, output


class LineServer(launcher.Server):
    """A docs command that serves, run by bash in a process group of its own: ready once
    ``url`` answers, stopped with everything it started."""

    POPEN_OPTIONS = {"process_group": 0}

    def __init__(self, command, url, **options):
        super().__init__(["bash", "-c", command], launcher.answering(url), **options)

    def stop(self, timeout=launcher.STOP_TIMEOUT):
        if self.process is not None:
            stop_group(self.process.pid, timeout)
            self.process.wait()


def without_comment(command):
    return re.sub(r"\s+#.*$", "", command)


def free_port():
    with socket.socket() as bound:
        bound.bind(("127.0.0.1", 0))
        return bound.getsockname()[1]


# The sandbox

PYTHON_STAND_IN = """#!/bin/bash
# python3 as the docs' commands get it here: "python3 -m venv DIR" gives DIR a bin/ of
# the stand-ins beside this one (nothing installed), inside the test's folder only;
# anything else is the test venv's Python.
if [ "$#" = 3 ] && [ "$1" = -m ] && [ "$2" = venv ]; then
    target=$(realpath -m -- "$3")
    case "$target/" in
        {sandbox}/*) mkdir -p "$target/bin" && cp -a {stand_ins}/. "$target/bin/";;
        *) echo "python3 stand-in: $3 is outside the test's folder: not made" >&2; exit 1;;
    esac
    exit
fi
exec {python} "$@"
"""
PIP_STAND_IN = """#!/bin/bash
# pip as the docs' commands get it here: a documented install is accepted, and nothing
# installed (this venv has it all); any other is refused.
case "$*" in
    {installs}) echo "pip stand-in: nothing to install for: pip $*";;
    *) echo "pip stand-in: not a documented install: pip $*" >&2; exit 1;;
esac
"""


def small_catalogue(folder, seed=3):
    """A small catalogue of the resources the upstream's export has: the docs load the
    export after it, and a load refuses to empty a resource."""
    catalogue = catalogue_factory.build(
        seed=seed, productions=5, parties=3, party_series=2, bbses=2, releasers=6, platforms=4
    )
    return catalogue_factory.write(
        {name: records for name, records in catalogue.items() if name in FROM_UPSTREAM}, folder
    )


def small_export(path, private):
    _bench_module("generate_dump").generate(path, productions=20, seed=3)


def built_file(path, private):
    load_catalogue(small_catalogue(private / "built-from"), path)


def _bench_module(name):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "bench" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# A placeholder is made when a command names it as a word of its own.
PLACEHOLDERS = {
    "path/to/catalogue": lambda path, private: small_catalogue(path),
    "demozoo-export.sql.gz": small_export,
    "built.sqlite3": built_file,
}


class Session:
    """The sandbox of one group of pages, the servers started in it, and the commands
    it has run."""

    def __init__(self, folder, private, commands):
        self.folder, self.private = folder, private
        self.folder.mkdir()
        self.private.mkdir()
        for entry in ROOT.iterdir():
            if not entry.name.startswith(".") and entry.name not in ("instance", "site"):
                (folder / entry.name).symlink_to(entry)
        self.stand_ins = self.private / "bin"
        self._make_stand_ins()
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DEMOSERV_")}
        self.env["PATH"] = f"{self.stand_ins}{os.pathsep}{self.env['PATH']}"
        self.database = folder / "demoserv.sqlite3"
        self.env["DEMOSERV_DATABASE"] = str(self.database)
        built = subprocess.run(
            [sys.executable, "-m", "demoserv", "load", "seed"],
            env=self.env,
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0, built.stderr
        result = subprocess.run(
            [self.stand_ins / "python3", "-m", "venv", ".venv"],
            cwd=folder,
            env=self.env,
            capture_output=True,
        )
        assert result.returncode == 0, result.stderr
        text = "\n".join(commands)
        for name, make in PLACEHOLDERS.items():
            if re.search(rf"(?<![\w/.-]){re.escape(name)}\b", text):
                (folder / name).parent.mkdir(parents=True, exist_ok=True)
                make(folder / name, self.private)
        self.ports = {}  # a docs port: the free port it stands for
        self.servers = {}  # a port: the server there
        self.ran = set()
        self.numbered = 0

    def _make_stand_ins(self):
        self.stand_ins.mkdir()
        python = self.stand_ins / "python3"
        python.write_text(
            PYTHON_STAND_IN.format(
                sandbox=shlex.quote(str(self.folder.parent.resolve())),
                stand_ins=shlex.quote(str(self.stand_ins)),
                python=shlex.quote(sys.executable),
            )
        )
        pip = self.stand_ins / "pip"
        installs = "|".join(shlex.quote(install) for install in DOCUMENTED_INSTALLS)
        pip.write_text(PIP_STAND_IN.format(installs=installs))
        for script in (python, pip):
            script.chmod(0o755)
        (self.stand_ins / "python").symlink_to("python3")
        for name in LINKED_COMMANDS:
            if (BIN / name).exists():
                (self.stand_ins / name).symlink_to(BIN / name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for server in reversed(self.servers.values()):
            server.stop()

    def folder_for(self, what):
        self.numbered += 1
        folder = self.private / f"{self.numbered}-{what}"
        folder.mkdir()
        return folder

    # What the test changes in a command

    def port(self, docs_port):
        if docs_port == "0":
            return docs_port
        if docs_port not in self.ports:
            self.ports[docs_port] = str(free_port())
        return self.ports[docs_port]

    def substitute(self, command):
        if re.search(r"\bdemoserv serve\b", command) and "--listen" not in command:
            command = re.sub(
                r"\bdemoserv serve\b", "demoserv serve --listen=127.0.0.1:8080", command, count=1
            )
        command = ADDRESS.sub(lambda m: f"{m[1]}:{self.port(m[2])}", command)
        command = HTTP_SERVER_PORT.sub(lambda m: f"{m[1]}{self.port(m[2])}", command)
        command = command.replace("/tmp/", f"{self.folder}/tmp/")
        return CURL.sub(
            lambda m: (
                "curl --fail --silent --show-error --write-out '\\ncurl: HTTP %{http_code}\\n' "
            ),
            command,
        )

    # Running

    def run_block(self, block):
        if block.language in ("sh", "bash"):
            ran_before = set(self.ran)
            for command in block.commands_run_here():
                if without_comment(command) not in ran_before:
                    self.ran.add(without_comment(command))
                    self.run_command(block, command)
        elif block.language == "console":
            self.run_transcript(block)
        elif block.language == "yaml":
            self.run_ci_job(block)

    def run_command(self, block, original):
        command = self.substitute(original)
        where = f"{block.where}: {original}"
        serves = SERVES.search(command) and not re.search(r"--(help|version)\b", command)
        if serves or BACKGROUND.search(command):
            self.serve(command, where)
            return
        for port in self._named_ports(command):
            if port not in self.servers:
                self.serve_for_the_test(port)
        command = EXAMPLE_VERSION.sub(lambda m: f"since={self.history_start(command)}", command)
        if CURL.search(original) and not shutil.which("curl", path=self.env["PATH"]):
            pytest.fail(f"{where}: the docs' commands use curl: install it (apt-get install curl)")
        status, output = run(["bash", "-c", command], cwd=self.folder, env=self.env)
        assert status == 0, f"{where}\nran as: {command}\nexit {status}:\n{output}"
        if CURL.search(original):
            statuses = CURL_STATUS.findall(output)
            assert statuses and all(s.startswith("2") for s in statuses), f"{where}\n{output}"

    def _named_ports(self, command):
        return [m[2] for m in ADDRESS.finditer(command) if m[2] in self.ports.values()]

    def serve(self, command, where):
        """Start a command that serves, and wait until its address answers."""
        listen = LISTEN.search(command)
        port = listen or HTTP_SERVER_PORT.search(command) or ADDRESS.search(command)
        assert port, f"{where}: serves, but names no address to wait for"
        port = port[1] if listen else port[2]
        if port in self.servers:
            self.servers.pop(port).stop()
        server = LineServer(
            BACKGROUND.sub(lambda m: m[1] or "", command),
            f"http://127.0.0.1:{port}/",
            folder=self.folder_for("server"),
            cwd=self.folder,
            env=self.env,
            name=where,
        )
        self.servers[port] = server
        server.start()

    def ensure_database(self):
        """The sandbox's database, if it has none yet: two small catalogues loaded in
        turn, so that the history of changes holds a change."""
        if not self.database.exists():
            for seed in (3, 4):
                load_catalogue(small_catalogue(self.folder_for("catalogue"), seed), self.database)

    def serve_for_the_test(self, port):
        """``demoserv serve`` on ``port``, serving the sandbox's database, its snapshot
        written for that address."""
        self.ensure_database()
        address = f"http://127.0.0.1:{port}/api/v1/"
        at = Address(address, DEFAULTS["SITE_URL"], DEFAULTS["SERVICE_URL_FIELD"])
        snapshot.write(self.database, self.database, [at])
        self.servers[port] = launcher.Demoserv(
            command=[BIN / "demoserv", "serve"],
            listen=f"127.0.0.1:{port}",
            folder=self.folder_for("server"),
            cwd=self.folder,
            env=self.env,
        ).start()

    def history_start(self, command):
        """The version the history of the server ``command`` names starts at."""
        (port,) = set(self._named_ports(command))
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/status/") as answer:
            return json.load(answer)["changes"]["since"]["version"]

    def run_transcript(self, block):
        self.ensure_database()
        for original, shown in docs_blocks.transcript(block.text):
            with ExitStack() as stack:
                busy = {}
                for match in ADDRESS.finditer(original):
                    taken = stack.enter_context(socket.socket())
                    taken.bind(("127.0.0.1", 0))
                    taken.listen()
                    busy[match[2]] = str(taken.getsockname()[1])

                def held(text):
                    return ADDRESS.sub(lambda m: f"{m[1]}:{busy.get(m[2], m[2])}", text)

                status, output = run(
                    ["bash", "-c", held(original)], cwd=self.folder, env=self.env, timeout=60
                )
            printed = output.replace(str(self.folder), TRANSCRIPT_FOLDER).splitlines()
            assert printed == [held(line) for line in shown], (
                f"{block.where}: $ {original}\nexit {status}, printed:\n{output}"
            )

    def run_ci_job(self, block):
        temp = self.folder_for("runner-temp")
        github_env = self.private / "github-env"
        github_env.touch()
        env = {**self.env, "RUNNER_TEMP": str(temp), "GITHUB_ENV": str(github_env)}
        failed, started = [], []
        try:
            for number, step in enumerate(yaml.safe_load(block.text)["steps"], start=1):
                if "uses" in step or (failed and step.get("if") != "always()"):
                    continue
                script = step["run"]
                if CLIENT_TESTS.search(script):
                    script = CLIENT_TESTS_HERE
                path = self.private / f"step-{number}.sh"
                path.write_text(script)
                status, output = run(["bash", "-e", path], cwd=self.folder, env=env, leave=started)
                if status != 0:
                    failed.append(
                        f"step {number}, {step.get('name', script)}: exit {status}\n{output}"
                    )
                for line in github_env.read_text().splitlines():
                    name, _, value = line.partition("=")
                    env[name] = value
            logs = [f"{log.name}:\n{log.read_text()}" for log in sorted(temp.glob("*.log"))]
            assert not failed, f"{block.where}: " + "\n".join(failed + logs)
            assert env.get("DEMOSERV_URL") and env.get("DEMOSERV_PID"), f"{block.where}: {env}"
            pid = int(env["DEMOSERV_PID"])
            deadline = time.monotonic() + launcher.STOP_TIMEOUT
            while is_running(pid):
                assert time.monotonic() < deadline, f"{block.where}: its server is still running"
                time.sleep(launcher.CHECK_INTERVAL)
        finally:
            for group in started:
                stop_group(group)


def is_running(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


# The tests


def test_every_block_says_its_language():
    """A block's tag says whether it is run: a command's language, or one that is not
    run (text, json, ini). An untagged block would be neither."""
    languages = (*docs_blocks.COMMANDS, *docs_blocks.NOT_COMMANDS)
    untold = [b.where for b in docs_blocks.all_blocks() if b.language not in languages]
    assert not untold, f"tag these blocks with one of {', '.join(languages)}: {untold}"


def test_every_marker_gives_a_reason_and_stands_before_a_block_of_commands():
    for path in docs_blocks.pages():
        assert not docs_blocks.stray_markers(path), (
            f"{path}: a marker must be on the line right before its block's fence"
        )
    for block in docs_blocks.all_blocks():
        if block.reason is None and block.runner is None:
            continue
        assert block.language in docs_blocks.COMMANDS, f"{block.where}: not a command block"
        assert block.runner or block.reason, f"{block.where}: say why it is not run here"
        if block.skipped is not None:
            assert any(block.skipped in c for c in block.commands()), (
                f"{block.where}: no line holds {block.skipped!r}"
            )


def test_blocks_run_elsewhere_are_run_there():
    """A block run by .ci/run is lines of it; one run by a test module is taken there
    with ``docs_blocks.run_by``."""
    lines = {" ".join(line.split()) for line in docs_blocks.CI_RUN.read_text().splitlines()}
    for block in docs_blocks.all_blocks():
        if block.runner == ".ci/run":
            for command in block.commands():
                assert " ".join(command.split()) in lines, (
                    f"{block.where}: {command!r} is not a line of .ci/run"
                )
        elif block.runner is not None:
            source = (ROOT / block.runner).read_text(encoding="utf-8")
            assert f'docs_blocks.run_by("{block.runner}")' in source, (
                f"{block.where}: {block.runner} does not run it"
            )


def test_every_shell_command_parses():
    """``bash -n`` on every shell command, those not run here too."""
    for block in docs_blocks.all_blocks():
        if block.language == "yaml":
            scripts = [step["run"] for step in yaml.safe_load(block.text)["steps"] if "run" in step]
        elif block.language in ("sh", "bash", "console"):
            scripts = ["\n".join(block.commands())]
        else:
            continue
        for script in scripts:
            checked = subprocess.run(["bash", "-n"], input=script, capture_output=True, text=True)
            assert checked.returncode == 0, f"{block.where}: {checked.stderr}"


def test_every_python_block_compiles():
    for block in docs_blocks.all_blocks():
        if block.language == "python":
            compile(block.text, block.where, "exec")


@pytest.mark.parametrize("group", groups(), ids="+".join)
def test_the_commands_run(group, tmp_path):
    blocks = [b for path in group for b in docs_blocks.blocks(path) if b.run_here]
    commands = [c for b in blocks if b.language != "yaml" for c in b.commands_run_here()]
    with Session(tmp_path / "clone", tmp_path / "test", commands) as session:
        for block in blocks:
            session.run_block(block)
