"""deploy/systemd: the units that run a mirror following the upstream. Their contents
are checked here; ``pytest -m systemd`` (needs Debian's systemd package) also has
``systemd-analyze verify`` check them, with their paths pointed at this checkout and the
virtual environment running the tests, so that every path they name exists."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
NAMES = ("demoserv.service", "demoserv-update.service", "demoserv-update.timer")


def directives(name):
    """{(section, key): [value, ...]} of a unit file."""
    found, section = {}, None
    for line in (UNITS / name).read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("["):
            section = line.strip("[]")
            continue
        key, value = line.split("=", 1)
        found.setdefault((section, key), []).append(value)
    return found


def test_the_update_runs_daily_after_the_export_with_a_random_delay():
    timer = directives("demoserv-update.timer")
    assert timer[("Timer", "OnCalendar")] == ["*-*-* 03:00:00 UTC"]  # export at 02:30 UTC
    assert timer[("Timer", "RandomizedDelaySec")] == ["1h"]
    assert timer[("Timer", "Persistent")] == ["true"]
    update = directives("demoserv-update.service")
    assert update[("Service", "Type")] == ["oneshot"]
    assert update[("Service", "ExecStart")] == [
        "/srv/demoserv/.venv/bin/demoserv load --wait ${DEMOSERV_EXPORT_URL}"
    ]
    serve = directives("demoserv.service")
    assert serve[("Service", "ExecStart")] == [
        "/srv/demoserv/.venv/bin/demoserv serve --listen=127.0.0.1:8080"
    ]
    # Both serve and load the same file.
    database = "DEMOSERV_DATABASE=/var/lib/demoserv/demoserv.sqlite3"
    assert database in update[("Service", "Environment")]
    assert database in serve[("Service", "Environment")]


def test_the_documented_cron_line_runs_what_the_timer_runs():
    readme = (ROOT / "docs" / "mirror.md").read_text()
    [line] = [line for line in readme.splitlines() if line.startswith("0 3 * * * ")]
    url = next(
        value.split("=", 1)[1]
        for value in directives("demoserv-update.service")[("Service", "Environment")]
        if value.startswith("DEMOSERV_EXPORT_URL=")
    )
    assert f".venv/bin/demoserv load --wait {url}" in line
    assert "DEMOSERV_DATABASE=/var/lib/demoserv/demoserv.sqlite3" in line
    assert re.search(r"sleep \$\(shuf -i 0-3600 -n 1\)", line)


@pytest.mark.systemd
def test_systemd_analyze_verifies_the_units(tmp_path):
    analyze = shutil.which("systemd-analyze")
    assert analyze, "systemd-analyze not found: install Debian's systemd package"
    bin_dir = Path(sys.executable).parent
    for name in NAMES:
        text = (UNITS / name).read_text()
        text = text.replace("/srv/demoserv/.venv/bin/", f"{bin_dir}/")
        text = text.replace("/srv/demoserv", str(ROOT))
        (tmp_path / name).write_text(text)
    result = subprocess.run(
        [analyze, "verify", *(str(tmp_path / name) for name in NAMES)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    # Any complaint about the units fails the check; systemd's own notes about the
    # machine (no running manager in a container) do not name them.
    complaints = [
        line for line in (result.stdout + result.stderr).splitlines() if "demoserv" in line
    ]
    assert result.returncode == 0 and not complaints, result.stdout + result.stderr


@pytest.mark.systemd
def test_the_timer_elapses_at_three_utc():
    analyze = shutil.which("systemd-analyze")
    result = subprocess.run(
        [analyze, "calendar", "*-*-* 03:00:00 UTC"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "Normalized form: *-*-* 03:00:00 UTC" in result.stdout
