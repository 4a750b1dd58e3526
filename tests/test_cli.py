"""The installed ``demoserv`` command: its subcommands, the one rule for where the
database is, and every mistake an operator or a developer makes told in one line naming
the cause and the fix, with a non-zero exit and never a traceback."""

import errno
import json
import os
import re
import select
import shlex
import socket
import subprocess
import sys
import types
import urllib.request
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from demoserv.cli.commands import COMMANDS, checked_source, main
from demoserv.loader.sources import load_catalogue
from demoserv.server import launcher, serving
from demoserv.settings import SETTINGS, packaged_catalogue
from demoserv.web import factory

from . import docs_blocks
from .conftest import refusing_url
from .installed import BIN, environment, run_installed

SUBCOMMANDS = ("serve", "load", "status", "rollback", "export", "settings", "version")


def one_line(result, exit_status=1):
    """The one line a mistake printed on standard error (nothing else), checked."""
    assert result.returncode == exit_status, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_every_subcommand_has_help_for_users_and_the_database_option():
    result = run_installed("demoserv", "--help")
    assert result.returncode == 0 and "Commands:" in result.stdout
    assert set(main.commands) == set(SUBCOMMANDS)
    for name in SUBCOMMANDS:
        command = main.commands[name]
        text = command.get_help(click.Context(command, info_name=f"demoserv {name}"))
        assert "``" not in text and ":class:" not in text, name
        assert "flask" not in text.lower(), name
        if name != "version":
            assert "--database PATH" in text, name


def test_the_commands_import_numpy_with_one_blas_thread():
    """The entry points (``demoserv``, ``demoserv-serve``, ``python -m demoserv``) set
    OpenBLAS to one thread before the commands import numpy, unless it is set: its
    threads, one a core, spin as it starts."""
    report = (
        "import atexit, os, sys; atexit.register(lambda: print("
        "os.environ.get('OPENBLAS_NUM_THREADS'), 'numpy' in sys.modules)); "
        "sys.argv = ['demoserv', '--version']; from demoserv.cli import main; main()"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    ran = subprocess.run([sys.executable, "-c", report], env=env, capture_output=True, text=True)
    assert ran.stdout.split()[-2:] == ["1", "True"], ran
    given = subprocess.run(
        [sys.executable, "-c", report],
        env={**env, "OPENBLAS_NUM_THREADS": "3"},
        capture_output=True,
        text=True,
    )
    assert given.stdout.split()[-2:] == ["3", "True"], given


def test_no_subcommand_shows_the_help():
    result = CliRunner().invoke(main, [])
    assert result.exit_code == 0, result.output
    assert result.stderr == ""
    assert result.stdout.startswith("Usage: ")
    assert 'Start with "demoserv serve"' in result.stdout


@pytest.mark.parametrize(
    "number, cause",
    [
        (errno.EACCES, "permission denied (ports below 1024 need privileges): choose a port"),
        (errno.EADDRNOTAVAIL, "no such address on this machine: choose one of its addresses"),
        (errno.EMFILE, os.strerror(errno.EMFILE)),
    ],
)
def test_a_server_that_cannot_listen_says_why(monkeypatch, number, cause):
    def cannot_listen(*arguments, **options):
        raise OSError(number, os.strerror(number))

    monkeypatch.setattr(serving, "Listener", cannot_listen)
    result = CliRunner().invoke(main, ["serve", "--listen=127.0.0.1:0"])
    assert result.exit_code == 1
    assert result.stderr.startswith(f"demoserv serve: cannot listen on 127.0.0.1:0: {cause}")
    assert result.stderr.count("\n") == 1


def test_serve_gives_the_app_its_database_and_catalogue_as_arguments(monkeypatch, tmp_path):
    """--database and --catalogue reach the app as arguments: the command leaves the
    process's environment as it found it; it listens before the app is started."""
    made, steps = [], []
    create_app = factory.create_app
    monkeypatch.setattr(
        factory, "create_app", lambda **options: made.append(options) or create_app(**options)
    )
    monkeypatch.setattr(
        factory, "start_serving", lambda app, folder, urls: steps.append(("start", folder, urls))
    )
    listening = types.SimpleNamespace(urls=["http://127.0.0.1:1"])
    monkeypatch.setattr(
        serving, "Listener", lambda settings, **options: steps.append("listen") or listening
    )
    monkeypatch.setattr(serving, "serve", lambda listener, app, **options: steps.append("serve"))
    monkeypatch.chdir(tmp_path)
    environment = dict(os.environ)
    arguments = ["serve", "--listen=127.0.0.1:0", "--database=x.sqlite3", "--catalogue=sample"]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    assert made == [{"database": "x.sqlite3"}]
    assert steps == ["listen", ("start", packaged_catalogue("sample"), listening.urls), "serve"]
    assert dict(os.environ) == environment
    assert list(tmp_path.iterdir()) == []


def test_the_flask_commands_are_the_same_commands(app):
    for command in COMMANDS:
        assert app.cli.get_command(None, command.name) is command


def test_one_rule_for_the_database_which_status_prints(tmp_path, catalogue_dir):
    loaded = run_installed(
        "demoserv", "load", "--database", "my.sqlite3", catalogue_dir, cwd=tmp_path
    )
    assert loaded.returncode == 0, loaded.stderr
    assert (tmp_path / "my.sqlite3").is_file()
    by_setting = run_installed("demoserv", "status", cwd=tmp_path, DEMOSERV_DATABASE="my.sqlite3")
    by_option = run_installed("demoserv", "status", "--database", "my.sqlite3", cwd=tmp_path)
    for result, origin in ((by_setting, "DEMOSERV_DATABASE"), (by_option, "--database")):
        assert result.returncode == 0, result.stderr
        lines = result.stdout.splitlines()
        assert lines[0] == f"Served catalogue: {tmp_path / 'my.sqlite3'}"
        assert lines[1] == f"  database from: {origin}"


@pytest.mark.parametrize("command", [["status"], ["export", "out"], ["rollback"]])
def test_a_command_never_creates_a_database_it_reads(tmp_path, command):
    result = run_installed("demoserv", *command, "--database", "typo.sqlite3", cwd=tmp_path)
    line = one_line(result)
    assert line.startswith(f"{tmp_path / 'typo.sqlite3'} does not exist (database from --database)")
    assert "demoserv load" in line
    assert list(tmp_path.iterdir()) == []


def test_a_bad_setting_is_named_as_set(tmp_path):
    for command in (["status"], ["serve", "--listen=127.0.0.1:0"]):
        result = run_installed("demoserv", *command, cwd=tmp_path, DEMOSERV_TRUSTED_PROXIES="many")
        assert one_line(result) == (
            "DEMOSERV_TRUSTED_PROXIES is 'many': expected a whole number of 0 or more; "
            "change or remove it"
        )


def test_every_setting_is_listed_by_the_settings_command(tmp_path):
    result = run_installed("demoserv", "settings", cwd=tmp_path, DEMOSERV_CACHE_MAX_AGE="60")
    assert result.returncode == 0, result.stderr
    for setting in SETTINGS:
        assert f"\nDEMOSERV_{setting.name} = " in result.stdout
    assert "\nDEMOSERV_CACHE_MAX_AGE = 60\n" in result.stdout


def test_a_busy_port(tmp_path, loaded_database):
    """Said at once, before a catalogue is built or opened: with --catalogue, the
    database it would build is never made."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        runs = [
            ["serve", f"--database={loaded_database}"],
            ["serve", "--database=new.sqlite3", "--catalogue=seed"],
            [f"--database={loaded_database}"],  # demoserv-serve
        ]
        for arguments in runs:
            command = "demoserv" if arguments[0] == "serve" else "demoserv-serve"
            result = run_installed(command, *arguments, f"--listen=127.0.0.1:{port}", cwd=tmp_path)
            assert one_line(result) == (
                f"demoserv serve: cannot listen on 127.0.0.1:{port}: the address is in use by "
                "another program: stop it, or choose another port with --listen HOST:PORT"
            )
    assert list(tmp_path.iterdir()) == []


def test_a_named_database_that_does_not_exist_is_refused(tmp_path):
    """Only the default database is built from the seed: a path mistyped in --database or
    DEMOSERV_DATABASE is said, and nothing is made, not even its folder."""
    typo = tmp_path / "typo" / "x.sqlite3"
    for arguments, settings, origin in (
        (["--database=typo/x.sqlite3"], {}, "--database"),
        ([], {"DEMOSERV_DATABASE": "typo/x.sqlite3"}, "DEMOSERV_DATABASE"),
    ):
        result = run_installed(
            "demoserv", "serve", "--listen=127.0.0.1:0", *arguments, cwd=tmp_path, **settings
        )
        assert one_line(result, 2) == (
            f"demoserv serve: {typo} does not exist (database from {origin}), and only the "
            f"default database is built from the seed: create it with demoserv load seed "
            f"--database {typo} (or load another catalogue), or serve it with --catalogue seed"
        )
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option, message",
    [
        (
            "--listen=127.0.0.1:99999",
            "Invalid value for '--listen': '127.0.0.1:99999' is not HOST:PORT with a port "
            "from 0 to 65535",
        ),
        ("--listen=no.such.host.invalid:8080", "--listen no.such.host.invalid:8080: no such host"),
        ("--threads=0", "Invalid value for '--threads': 0 is not in the range x>=1"),
        ("--trusted-proxy-headers=x-forwarded-for", "--trusted-proxy-headers has no meaning"),
    ],
)
def test_a_bad_serve_option(tmp_path, option, message):
    line = one_line(run_installed("demoserv", "serve", option, cwd=tmp_path), 2)
    assert line.startswith(f"demoserv serve: {message}")
    assert line.endswith("(see demoserv serve --help)")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_source(tmp_path):
    result = run_installed("demoserv", "load", "export.sql.gz", cwd=tmp_path)
    assert one_line(result, 2).startswith("export.sql.gz does not exist: give a catalogue folder")


def test_an_unsupported_address_scheme_is_named_with_the_address_as_given(tmp_path):
    result = run_installed("demoserv", "load", "ftp://127.0.0.1/x.sql.gz", cwd=tmp_path)
    assert one_line(result, 2) == (
        "ftp://127.0.0.1/x.sql.gz: the address scheme ftp:// is not supported: give an "
        "http:// or https:// address, a file or a folder"
    )


def test_a_file_that_is_not_gzip_or_not_a_dump(tmp_path):
    (tmp_path / "export.sql.gz").write_text("id,title\n")
    (tmp_path / "export.sql").write_text("id,title\n")
    database = ("--database", "db.sqlite3")
    gz = run_installed("demoserv", "load", *database, "export.sql.gz", cwd=tmp_path)
    assert one_line(gz, 2).startswith("export.sql.gz is not gzip-compressed")
    plain = run_installed("demoserv", "load", *database, "export.sql", cwd=tmp_path)
    assert one_line(plain) == (
        "export.sql: not a plain-SQL pg_dump (no COPY block in it): give the upstream's "
        "database export"
    )
    assert not (tmp_path / "db.sqlite3").exists()


def test_an_unreachable_upstream_shows_each_retry_and_the_wait(tmp_path):
    with refusing_url("/export.sql.gz") as url:
        result = run_installed(
            "demoserv",
            "load",
            "--database=db.sqlite3",
            url,
            cwd=tmp_path,
            DEMOSERV_FETCH_RETRIES="2",
            DEMOSERV_FETCH_BACKOFF="0.1",
        )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 3, lines
    for number, (line, wait) in enumerate(zip(lines, ("0.1 s", "0.2 s")), start=1):
        assert re.fullmatch(
            rf"Attempt {number} of 3 failed: connection failed \(.*refused.*\); next in {wait}",
            line,
        ), line
    assert lines[2].startswith(f"{url}: connection failed (")
    assert lines[2].endswith("(gave up after 3 attempts)")


def test_leftovers_of_an_interrupted_load(tmp_path, catalogue_dir):
    """status names them; the next rollback, and the next load, remove them."""
    database = ("--database", "db.sqlite3")
    # Two catalogues of other records: a previous one, for the rollback.
    load_catalogue(Path(__file__).resolve().parent.parent / "seed", tmp_path / "db.sqlite3")
    load_catalogue(catalogue_dir, tmp_path / "db.sqlite3")
    leftover = tmp_path / ".db.sqlite3.0123abcd.loading"
    leftover.write_bytes(b"x" * 2000)
    status = run_installed("demoserv", "status", *database, cwd=tmp_path).stdout
    assert (
        "\nLeft by an interrupted load (the next load or rollback removes them):\n"
        f"  {leftover} (2.0 kB)\n"
    ) in status
    rolled_back = run_installed("demoserv", "rollback", *database, cwd=tmp_path)
    assert rolled_back.returncode == 0, rolled_back.stderr
    assert not leftover.exists()
    leftover.write_bytes(b"x")
    loaded = run_installed("demoserv", "load", "--force", *database, catalogue_dir, cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert not leftover.exists()
    assert "Left by" not in run_installed("demoserv", "status", *database, cwd=tmp_path).stdout


def test_the_log_is_json_lines_and_start_up_says_what_is_served(tmp_path, loaded_database):
    with installed_serve(tmp_path, f"--database={loaded_database}") as server:
        url = server.url
        request = urllib_request(f"{url}/api/v1/platforms/?page=1", {"User-Agent": "client/1.0"})
        server.wait_until(lambda: "demoserv.access" in server.log_text())
    assert request == 200
    lines = [json.loads(line) for line in server.log_text().splitlines()]
    assert all({"time", "level", "logger"} <= set(line) for line in lines)
    assert all(
        re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", line["time"]) for line in lines
    )
    started = [line["message"] for line in lines if line["logger"] == "demoserv.server.serving"]
    assert started and started[0].startswith(f"Serving on {url}: catalogue version ")
    assert started[0].endswith(
        f", database {loaded_database}; the API's docs at {url}/api/v1/docs/"
    )
    (access,) = [line for line in lines if line["logger"] == "demoserv.access"]
    assert {key: access[key] for key in ("client", "method", "path", "query", "status")} == {
        "client": "127.0.0.1",
        "method": "GET",
        "path": "/api/v1/platforms/",
        "query": "page=1",
        "status": 200,
    }
    assert access["user_agent"] == "client/1.0" and access["bytes"] > 0 and access["ms"] >= 0


def installed_serve(folder, *arguments):
    """The installed ``demoserv serve`` with ``arguments``, run in ``folder`` as a user
    runs it, its ready file and log there."""
    command = [BIN / "demoserv", "serve"]
    return launcher.Demoserv(
        *arguments, command=command, folder=folder, cwd=folder, env=environment()
    )


def urllib_request(url, headers):
    with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as answer:
        answer.read()
        return answer.status


def test_serving_beyond_loopback_without_trusted_hosts_is_warned():
    beyond = ["http://0.0.0.0:8080"]
    assert "DEMOSERV_TRUSTED_HOSTS" in serving.untrusted_hosts_warning(beyond, None)
    assert serving.untrusted_hosts_warning(beyond, ["api.example.org"]) is None
    assert (
        serving.untrusted_hosts_warning(["http://127.0.0.1:8080", "http://[::1]:8080"], None)
        is None
    )


def test_the_sample_is_served_with_one_option(tmp_path):
    """docs/command-line.md's two commands, as written: serve --catalogue sample serves
    it (loaded into the database), and load sample loads it by name."""
    (block,) = [b for b in docs_blocks.run_by("tests/test_cli.py") if "sample" in b.text]
    serve, load = [shlex.split(command, comments=True) for command in block.commands()]
    assert serve[:2] == ["demoserv", "serve"] and load[:2] == ["demoserv", "load"]
    with installed_serve(tmp_path, *serve[2:], "--database=db.sqlite3") as server:
        with urllib.request.urlopen(f"{server.url}/api/v1/productions/", timeout=30) as answer:
            assert json.load(answer)["count"] == 2350
        # The catalogue it builds has its snapshot for the server's own address too.
        with urllib.request.urlopen(f"{server.url}/api/v1/snapshot/", timeout=30) as answer:
            assert json.load(answer)["resources"]["productions"]["count"] == 2350
    status = run_installed("demoserv", "status", "--database=db.sqlite3", cwd=tmp_path).stdout
    assert "source:        sample (" in status
    assert f"\n  {server.url}/api/v1/ (service_url at " in status
    assert "    productions.ndjson.gz             2,350 records" in status
    loaded = run_installed(*load, "--database=db.sqlite3", cwd=tmp_path)
    assert loaded.returncode == 0 and loaded.stdout.startswith("Loaded sample: "), loaded


def test_the_packaged_catalogues_load_by_name_from_any_folder(tmp_path, monkeypatch):
    loaded = run_installed("demoserv", "load", "--database", "db.sqlite3", "seed", cwd=tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    assert "297 productions" in loaded.stdout
    monkeypatch.chdir(tmp_path)
    assert checked_source("sample") == str(packaged_catalogue("sample"))
    (tmp_path / "sample").mkdir()  # a folder of that name here is what the name means
    assert checked_source("sample") == "sample"


def documented_completion_commands():
    """The commands of docs/command-line.md, "Shell completion", in order."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "command-line.md").read_text()
    section = text.split("## Shell completion", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.DOTALL)
    return [line for block in blocks for line in block.splitlines() if not line.startswith("#")]


# After a bash start-up line: what bash offers for "demoserv se" and "demoserv serve --catalogue ".
OFFERED = (
    "complete -p demoserv; COMP_WORDS=(demoserv se); COMP_CWORD=1; _demoserv_completion demoserv; "
    'echo "${COMPREPLY[*]}"; COMP_WORDS=(demoserv serve --catalogue ""); COMP_CWORD=3; '
    'COMPREPLY=(); _demoserv_completion demoserv; echo "${COMPREPLY[*]}"'
)


def test_the_documented_shell_completion_commands_give_completion_scripts(tmp_path):
    """Each command as written, the bash ones in bash, with demoserv on the PATH: bash
    then completes the subcommands and the catalogues; zsh's and fish's scripts are
    written (this machine need not have those shells)."""
    commands = documented_completion_commands()
    assert len(commands) == 5, commands
    env = environment(HOME=str(tmp_path), PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")

    def bash(line):
        result = subprocess.run(
            ["bash", "-c", line], env=env, cwd=tmp_path, capture_output=True, text=True
        )
        assert result.returncode == 0 and result.stderr == "", (line, result.stderr)
        return result.stdout

    for line in commands:
        if "zsh_source" in line:
            script = bash(re.fullmatch(r'eval "\$\((.*)\)"', line)[1])
            assert script.startswith("#compdef demoserv\n")
            assert "compdef _demoserv_completion demoserv" in script
        elif line.startswith(("eval ", ". ")):
            assert bash(f"{line}; {OFFERED}").splitlines() == [
                "complete -o nosort -F _demoserv_completion demoserv",
                "serve settings",
                "sample seed",
            ], line
        else:
            bash(line)
    fish = tmp_path / ".config" / "fish" / "completions" / "demoserv.fish"
    assert 'complete --no-files --command demoserv --arguments "(_demoserv_completion)"' in (
        fish.read_text()
    )
    assert (tmp_path / ".demoserv-complete.bash").read_text().startswith("_demoserv_completion()")


def test_the_documented_ci_job_serves_the_seed(tmp_path):
    """docs/testing-clients.md's job, its "Start demoserv" and "Stop demoserv" steps as
    written, with this venv's commands where the job installs demoserv."""
    text = (Path(__file__).resolve().parent.parent / "docs" / "testing-clients.md").read_text()
    job = re.search(r"```yaml\n(.*?)```", text, re.DOTALL)[1]
    start = re.search(r"- name: Start demoserv\n\s+run: \|\n(.*?)\n  - ", job, re.DOTALL)[1]
    steps = [line for line in start.splitlines() if "-m venv" not in line and "install" not in line]
    stop = re.search(r"- name: Stop demoserv\n.*?\n\s+run: (.*)", job)[1]
    (tmp_path / "demoserv").mkdir()
    (tmp_path / "demoserv" / "bin").symlink_to(BIN)  # the installed demoserv
    github_env = tmp_path / "github_env"
    env = environment(RUNNER_TEMP=str(tmp_path), GITHUB_ENV=str(github_env))
    started = subprocess.run(
        ["bash", "-e", "-c", "\n".join(steps)], env=env, capture_output=True, text=True, timeout=90
    )
    values = dict(line.split("=", 1) for line in github_env.read_text().splitlines())
    pid = int(values["DEMOSERV_PID"])
    server = os.pidfd_open(pid)
    try:
        assert started.returncode == 0, (started.stderr, (tmp_path / "demoserv.log").read_text())
        url = values["DEMOSERV_URL"]
        with urllib.request.urlopen(f"{url}/api/v1/productions/", timeout=30) as answer:
            seed = packaged_catalogue("seed") / "productions.jsonl"
            assert json.load(answer)["count"] == len(seed.read_text().splitlines())
    finally:
        stopped = subprocess.run(
            ["bash", "-c", stop], env={**env, "DEMOSERV_PID": str(pid)}, capture_output=True
        )
        assert select.select([server], [], [], 30)[0], "the server did not stop"
        os.close(server)
    assert stopped.returncode == 0 and b"Serving on " in stopped.stdout
