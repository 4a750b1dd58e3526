"""The served file's life cycle around a load: the lock, leftovers of killed loads,
signals, owner and mode, the previous file and rollback, and one-line failures."""

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from demoserv.loader.build import Builder
from demoserv.loader.install import InstallError, building, install, previous_path
from demoserv.loader.reporting import CatalogueError
from demoserv.loader.sources import load_catalogue
from demoserv.store import facts

from . import catalogue_factory

FLASK = [sys.executable, "-m", "flask", "--app", "demoserv"]
PAUSED_LOAD = [sys.executable, str(Path(__file__).with_name("paused_load.py"))]
DEADLINE = 60  # seconds any awaited event may take


def wait_for(condition, what):
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.fixture(scope="module")
def two_catalogues(tmp_path_factory):
    """Two catalogue folders whose production counts differ: 30 and 50."""
    folder = tmp_path_factory.mktemp("two")
    return tuple(
        catalogue_factory.write(
            catalogue_factory.build(seed=seed, productions=size), folder / str(size)
        )
        for seed, size in ((11, 30), (12, 50))
    )


def served_productions(database):
    return facts.counts(database).get("productions")


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".loading"))


class Load:
    """``flask load`` in a process of its own, optionally paused at a point."""

    def __init__(self, source, database, *options, pause_at=None):
        self.ready = database.parent / f"paused-{os.urandom(4).hex()}"
        env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")
        command = [*PAUSED_LOAD, pause_at, str(self.ready)] if pause_at else FLASK
        self.process = subprocess.Popen(
            [*command, "load", str(source), *options],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def paused(self):
        wait_for(lambda: self.ready.exists() or self.process.poll() is not None, "the pause")
        assert self.process.poll() is None, self.process.communicate()
        return self

    def resume(self):
        self.ready.unlink()

    def finish(self):
        out, err = self.process.communicate(timeout=DEADLINE)
        return self.process.returncode, out, err


# Lock and leftovers


def test_a_second_load_stops_with_a_clear_message_or_waits(tmp_path, two_catalogues):
    small, big = two_catalogues
    database = tmp_path / "served.sqlite3"
    load_catalogue(small, database)
    first = Load(big, database, pause_at="building").paused()
    second = Load(small, database).finish()
    assert second[0] == 1 and second[1] == ""
    assert second[2].strip() == (
        f"{database}: another load is running (it holds {database.parent}/.served.sqlite3.lock);"
        " wait for it to finish, or load with --wait"
    )
    # The running load's build file was left alone, and the load completes.
    assert len(leftovers(tmp_path)) == 1
    waiting = Load(small, database, "--wait")
    wait_for(lambda: first.ready.exists(), "the pause")
    # The waiting load says so on stderr before it blocks.
    assert "waiting for it to finish" in waiting.process.stderr.readline()
    first.resume()
    assert first.finish()[0] == 0
    code, out, err = waiting.finish()
    assert code == 0, err
    assert out.startswith("Loaded ") and served_productions(database) == 30
    assert leftovers(tmp_path) == []


def test_build_files_of_killed_loads_are_removed(tmp_path, two_catalogues):
    small, big = two_catalogues
    database = tmp_path / "served.sqlite3"
    load_catalogue(small, database)
    left = []
    for point in ("building", "installing"):
        killed = Load(big, database, pause_at=point).paused()
        killed.process.kill()
        killed.finish()
        left.append(leftovers(tmp_path))
    # Each killed load left its build file; the second removed the first one's.
    assert len(left[0]) == len(left[1]) == 1 and left[0] != left[1]
    assert served_productions(database) == 30
    code, out, err = Load(big, database).finish()
    assert code == 0, err
    assert leftovers(tmp_path) == [] and served_productions(database) == 50


# Signals


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("point", ["building", "installing"])
def test_a_signal_before_the_switch_aborts_cleanly(tmp_path, two_catalogues, signum, point):
    small, big = two_catalogues
    database = tmp_path / "served.sqlite3"
    load_catalogue(small, database)
    before = database.read_bytes()
    load = Load(big, database, pause_at=point).paused()
    load.process.send_signal(signum)
    code, out, err = load.finish()
    assert code == 128 + signum
    name = signal.Signals(signum).name
    assert err.strip() == (
        f"{database}: load interrupted by {name}; the served catalogue is unchanged"
    )
    assert "Traceback" not in err and "Aborted" not in err and out == ""
    assert database.read_bytes() == before and leftovers(tmp_path) == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_a_signal_after_the_switch_keeps_the_success(tmp_path, two_catalogues, signum):
    small, big = two_catalogues
    database = tmp_path / "served.sqlite3"
    load_catalogue(small, database)
    load = Load(big, database, pause_at="installed").paused()
    load.process.send_signal(signum)
    code, out, err = load.finish()
    assert code == 0, err
    assert out.startswith("Loaded ") and "productions 30 → 50" in out
    assert "Aborted" not in err and "Traceback" not in err
    assert served_productions(database) == 50 and leftovers(tmp_path) == []


# Owner and mode


def test_the_new_file_takes_the_mode_of_the_file_it_replaces(tmp_path, two_catalogues):
    small, big = two_catalogues
    folder = tmp_path / "db"
    folder.mkdir(mode=0o750)
    folder.chmod(0o750)
    database = folder / "served.sqlite3"
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")
    load = f"umask 077; exec {' '.join(FLASK)} load {small}"
    subprocess.run(["sh", "-c", load], env=env, check=True, capture_output=True)
    # The first file: read and write for the folder's owner, its read bits for the rest.
    assert stat.S_IMODE(database.stat().st_mode) == 0o640
    database.chmod(0o644)
    load = f"umask 077; exec {' '.join(FLASK)} load {big}"
    subprocess.run(["sh", "-c", load], env=env, check=True, capture_output=True)
    assert stat.S_IMODE(database.stat().st_mode) == 0o644
    assert database.stat().st_uid == folder.stat().st_uid
    assert served_productions(database) == 50


# Previous file, rollback, emptied resources


def test_rollback_while_serving(make_app, tmp_path, two_catalogues):
    small, big = two_catalogues
    database = tmp_path / "served.sqlite3"
    app = make_app(database)
    client = app.test_client()
    runner = app.test_cli_runner()
    result = runner.invoke(args=["rollback"])
    assert result.exit_code == 1
    assert result.output.startswith(f"{database} does not exist")
    assert not [p for p in tmp_path.iterdir() if "served" in p.name]  # not even a lock file
    assert runner.invoke(args=["load", str(small)]).exit_code == 0
    result = runner.invoke(args=["rollback"])
    assert result.exit_code == 1
    assert (
        result.output.strip() == f"{previous_path(database)}: no previous catalogue to roll back to"
    )
    load_catalogue(small, database)
    load_catalogue(big, database)
    assert client.get("/api/v1/productions/").json["count"] == 50
    result = runner.invoke(args=["rollback"])
    assert result.exit_code == 0, result.output
    assert result.output.startswith(f"Rolled back {database} to its previous catalogue: ")
    assert client.get("/api/v1/productions/").json["count"] == 30
    # And forth: the current one became the previous one.
    assert runner.invoke(args=["rollback"]).exit_code == 0
    assert client.get("/api/v1/productions/").json["count"] == 50
    assert leftovers(tmp_path) == []


def test_a_reload_of_the_same_records_keeps_the_catalogue_to_roll_back_to(
    make_app, tmp_path, two_catalogues
):
    """Forced or not, a load of the records served replaces the served file (a new load
    in its history) but not the previous one: rollback still means the catalogue
    before those records."""
    small, big = two_catalogues
    database = tmp_path / "served.sqlite3"
    load_catalogue(small, database)
    load_catalogue(big, database)
    kept = previous_path(database).read_bytes()
    load_catalogue(big, database)
    assert previous_path(database).read_bytes() == kept
    runner = make_app(database).test_cli_runner()
    assert runner.invoke(args=["load", "--force", str(big)]).exit_code == 0
    assert previous_path(database).read_bytes() == kept
    result = runner.invoke(args=["rollback"])
    assert result.exit_code == 0, result.output
    assert make_app(database).test_client().get("/api/v1/productions/").json["count"] == 30


def test_a_load_that_would_empty_a_resource_stops(tmp_path, two_catalogues, make_app):
    small, _ = two_catalogues
    database = tmp_path / "served.sqlite3"
    app = make_app(database)
    runner = app.test_cli_runner()
    assert runner.invoke(args=["load", str(small)]).exit_code == 0
    before = database.read_bytes()
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(small / "releasers.jsonl", partial)
    finished = []
    with pytest.MonkeyPatch.context() as patch:  # refused as soon as the files are read
        patch.setattr(Builder, "finish", lambda *args: finished.append(args))
        result = runner.invoke(args=["load", str(partial)])
    assert result.exit_code == 1 and finished == []
    message = result.output.strip()
    assert message.startswith(f"{database}: the new catalogue has no party_series (served: ")
    for name in ("parties", "bbses", "productions", "platforms", "production_types"):
        assert f"{name} (served: " in message
    assert "releasers" not in message.split(";")[0]
    assert message.endswith("(load with --allow-empty to empty them on purpose)")
    assert database.read_bytes() == before and leftovers(tmp_path) == []
    result = runner.invoke(args=["load", "--allow-empty", str(partial)])
    assert result.exit_code == 0, result.output
    assert "productions 30 → 0" in result.output and "releasers " in result.output


def test_the_summary_shows_counts_before_and_after(tmp_path, two_catalogues, make_app):
    small, big = two_catalogues
    database = tmp_path / "served.sqlite3"
    runner = make_app(database).test_cli_runner()
    first = runner.invoke(args=["load", str(small)])
    assert first.output.startswith("Loaded ") and " 30 productions" in first.output
    second = runner.invoke(args=["load", str(big)]).output
    assert second.count("\n") == 1 and "productions 30 → 50" in second
    for name in ("platforms", "production_types", "releasers", "party_series", "parties"):
        assert f"{name} " in second and " → " in second


# Resource files that are not readable regular files


@pytest.fixture
def catalogue_copy(tmp_path, two_catalogues):
    source = tmp_path / "source"
    shutil.copytree(two_catalogues[0], source)
    return source


def replace_productions(source, kind):
    path = source / "productions.jsonl"
    path.unlink()
    if kind == "folder":
        path.mkdir()
    elif kind == "dangling symlink":
        path.symlink_to(source / "nowhere.jsonl")
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    return path


@pytest.mark.parametrize(
    "kind, what",
    [
        ("folder", "not a regular file but a folder"),
        ("dangling symlink", "a symbolic link to nothing"),
        ("FIFO", "not a regular file but a FIFO"),
        ("link to /dev/zero", "not a regular file but a character device"),
    ],
)
def test_a_resource_file_that_is_not_a_regular_file_is_an_error(
    tmp_path, catalogue_copy, kind, what
):
    path = replace_productions(catalogue_copy, kind)
    with pytest.raises(CatalogueError) as error:
        load_catalogue(catalogue_copy, tmp_path / "db.sqlite3")
    assert str(error.value) == f"{path}: {what}"
    assert not (tmp_path / "db.sqlite3").exists()


@pytest.mark.parametrize("name", ["productions.json", "Productions.jsonl", "prods.jsonl"])
def test_a_misnamed_file_is_reported(tmp_path, catalogue_copy, name):
    (catalogue_copy / "productions.jsonl").rename(catalogue_copy / name)
    with pytest.raises(CatalogueError) as error:
        load_catalogue(catalogue_copy, tmp_path / "db.sqlite3")
    assert str(error.value).startswith(f"{catalogue_copy / name}: not a catalogue file name")


def in_unprivileged_child(function):
    """``function()``'s result or error text, in a forked child without root's rights."""
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        status = 0
        try:
            os.close(read_end)
            if os.geteuid() == 0:
                os.setgid(65534)
                os.setuid(65534)
            try:
                text = f"ok: {function()}"
            except Exception as error:  # noqa: BLE001 - reported to the parent
                text = f"{type(error).__name__}: {error}"
            os.write(write_end, text.encode())
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        text = pipe.read().decode()
    os.waitpid(child, 0)
    return text


@pytest.fixture
def open_folder(two_catalogues):
    """A folder that an unprivileged user may enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="demoserv-"))
    folder.chmod(0o755)
    source = folder / "source"
    shutil.copytree(two_catalogues[0], source)
    for path in (source, *source.iterdir()):
        path.chmod(0o755 if path.is_dir() else 0o644)
    yield folder
    shutil.rmtree(folder)


def test_an_unreadable_file_is_one_line_naming_it(open_folder):
    source = open_folder / "source"
    (source / "parties.jsonl").chmod(0)
    target = open_folder / "db" / "served.sqlite3"
    result = in_unprivileged_child(lambda: load_catalogue(source, target))
    assert (
        result == f"CatalogueError: {source / 'parties.jsonl'}: cannot be read: Permission denied"
    )


def test_an_unwritable_folder_is_one_line_naming_it(open_folder):
    folder = open_folder / "db"
    folder.mkdir(mode=0o755)
    folder.chmod(0o755)
    target = folder / "served.sqlite3"
    result = in_unprivileged_child(lambda: load_catalogue(open_folder / "source", target))
    assert result == f"InstallError: {folder}/.served.sqlite3.lock: Permission denied"


def test_a_missing_folder_that_cannot_be_made(tmp_path, two_catalogues, make_app):
    (tmp_path / "file").write_text("")
    database = tmp_path / "file" / "db" / "served.sqlite3"
    runner = make_app(database).test_cli_runner()
    result = runner.invoke(args=["load", str(two_catalogues[0])])
    assert result.exit_code == 1
    assert result.output == f"{tmp_path / 'file' / 'db'}: Not a directory\n"


def test_an_unwritable_instance_folder_at_first_start_is_one_log_line(open_folder, caplog):
    from demoserv import create_app

    instance = open_folder / "instance"
    instance.mkdir()
    instance.chmod(0o755)

    def start():
        app = create_app(
            {
                "TESTING": True,
                "DATABASE": str(instance / "served.sqlite3"),
                "SEED_DIR": str(open_folder / "source"),
            }
        )
        response = app.test_client().get("/api/v1/productions/")
        return response.status_code, response.json["detail"]

    result = in_unprivileged_child(start)
    assert result == "ok: (503, 'The catalogue is not available: the catalogue file is missing.')"


def mount_tmpfs(folder, size):
    folder.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a small tmpfs needs root: the full-disk case was not run")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {result.stderr.strip()}")


@pytest.fixture
def small_disk(tmp_path):
    folder = tmp_path / "small"
    mount_tmpfs(folder, "2m")
    yield folder
    subprocess.run(["umount", str(folder)], check=True)


def test_a_full_disk_is_one_line_and_the_served_file_stays(small_disk, tmp_path, make_app):
    database = small_disk / "served.sqlite3"
    source = catalogue_factory.write(
        catalogue_factory.build(seed=4, productions=40), tmp_path / "s"
    )
    runner = make_app(database).test_cli_runner()
    assert runner.invoke(args=["load", str(source)]).exit_code == 0
    before = database.read_bytes()
    big = catalogue_factory.write(
        catalogue_factory.build(seed=5, productions=2500), tmp_path / "big"
    )
    result = runner.invoke(args=["load", str(big)])
    assert result.exit_code == 1
    assert result.output == (
        f"{small_disk}: no space left on the device (database or disk is full)\n"
    )
    assert database.read_bytes() == before and leftovers(small_disk) == []


def test_clearly_too_little_space_is_refused_before_the_build(small_disk, tmp_path):
    database = small_disk / "served.sqlite3"
    # A served file of 1.75 MB on a 2 MB disk: less than half of it is free.
    database.write_bytes(b"\0" * 1_750_000)
    with pytest.raises(InstallError) as error:
        with building(database):
            pytest.fail("the build started")
    assert str(error.value).startswith(f"{small_disk}: no space left on the device for a new")
    assert leftovers(small_disk) == []


def test_install_refuses_to_empty_unless_allowed(tmp_path, two_catalogues):
    small, _ = two_catalogues
    database = tmp_path / "served.sqlite3"
    counts, _ = load_catalogue(small, database)
    emptied = dict(counts, productions=0)
    with building(database) as build:
        shutil.copy(database, build)
        with pytest.raises(InstallError) as error:
            install(build, database, emptied, allow_empty=False)
    assert str(error.value) == (
        f"{database}: the new catalogue has no productions (served: 30); nothing was "
        "replaced (load with --allow-empty to empty them on purpose)"
    )
    with building(database) as build:
        shutil.copy(database, build)
        before = install(build, database, emptied, allow_empty=True)
    assert before == counts
    assert not previous_path(database).exists()  # the same records: none to roll back to
