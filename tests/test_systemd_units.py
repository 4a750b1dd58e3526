"""deploy/systemd: the units that run a mirror following the upstream, with one server
(demoserv.service) or replicas behind nginx (demoserv@.service, one instance per port).
Their contents are checked here; ``pytest -m systemd`` (needs Debian's systemd package)
also has ``systemd-analyze verify`` check them, the replicas as the instances the docs
enable, with their paths pointed at this checkout and the virtual environment running
the tests, so that every path they name exists."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .deployment import REPLICA, ROOT, SITE, UNITS, directives, site_ports

NAMES = ("demoserv.service", REPLICA, "demoserv-update.service", "demoserv-update.timer")
RUNNING = ROOT / "docs" / "running.md"


def enabled_replicas():
    """The replicas docs/running.md enables: ["demoserv@8081.service", ...]."""
    [line] = [
        line
        for line in RUNNING.read_text().splitlines()
        if line.startswith("systemctl enable --now demoserv@")
    ]
    return [f"{name}.service" for name in re.findall(r"demoserv@\d+", line.split("#")[0])]


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
    # The one server, every replica and the update: the same file. The update is one
    # unit, not a template: one load per machine, whatever the number of replicas.
    database = "DEMOSERV_DATABASE=/var/lib/demoserv/demoserv.sqlite3"
    assert database in update[("Service", "Environment")]
    assert database in serve[("Service", "Environment")]
    assert database in directives(REPLICA)[("Service", "Environment")]
    assert sorted(path.name for path in UNITS.glob("*@*")) == [REPLICA]


def test_a_replica_is_the_one_server_on_a_port_of_its_own_behind_nginx():
    """demoserv@.service is demoserv.service (user, paths, settings, restart, hardening)
    but for its address, 127.0.0.1:%i, and for the forwarded headers it applies: those
    the nginx site sends, from nginx on the same machine."""
    one, replica = directives("demoserv.service"), directives(REPLICA)
    assert one.pop(("Service", "ExecStart")) == [
        "/srv/demoserv/.venv/bin/demoserv serve --listen=127.0.0.1:8080"
    ]
    assert replica.pop(("Service", "ExecStart")) == [
        "/srv/demoserv/.venv/bin/demoserv serve --listen=127.0.0.1:%i"
        " --trusted-proxy=127.0.0.1"
        ' "--trusted-proxy-headers=x-forwarded-for x-forwarded-proto x-forwarded-host"'
    ]
    assert "127.0.0.1:%i" in replica.pop(("Unit", "Description"))[0]
    one.pop(("Unit", "Description"))
    assert replica == one
    assert replica[("Service", "Restart")] == ["on-failure"]
    sent = re.findall(r"proxy_set_header (X-Forwarded-\w+) \$", SITE.read_text())
    assert sorted(sent) == ["X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"]


def test_the_docs_enable_one_replica_for_each_port_of_the_site():
    assert enabled_replicas() == [f"demoserv@{port}.service" for port in site_ports()]


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
    # The template as the instances the docs enable (systemd-analyze finds the template
    # beside them, and expands %i).
    verified = [name for name in NAMES if name != REPLICA] + enabled_replicas()
    assert len(verified) > len(NAMES)
    result = subprocess.run(
        [analyze, "verify", *(str(tmp_path / name) for name in verified)],
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
