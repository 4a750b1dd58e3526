"""deploy/'s files as this machine can run them, without systemd as its manager or a
system nginx: what tests/test_deploy.py and bench/replicas.py start. Nothing here is
written anew: the commands are the units' own ExecStart lines and the nginx
configuration is the shipped site, each adapted as follows (and only so).

- A unit's command is its ExecStart line as systemd reads it: ``%i`` is the instance
  (a replica's port), ``%%`` a ``%`` (any other specifier is refused), the words split
  at blanks but within double quotes, then ``${NAME}`` replaced by the unit's
  environment. Its environment is the unit's ``Environment=`` lines with ``settings``
  over them, as ``EnvironmentFile=-/etc/default/demoserv`` would give them, over this
  process's environment without its DEMOSERV_* variables.
- Paths: ``/srv/demoserv/.venv/bin/`` (the clone's virtual environment) is the folder
  of the Python running this (the venv the tests run in), ``/srv/demoserv`` this
  checkout (the working directory), ``/var/lib/demoserv`` the folder ``state`` (the
  StateDirectory, which systemd would make: the caller makes it).
- Not applied: ``User=``/``Group=`` (the commands run as the current user), the
  hardening (``ProtectSystem=`` ...), ``Restart=`` (a test starts a replica again
  itself). ``systemd-analyze verify`` checks those lines (``pytest -m systemd``).
- The site (deploy/nginx/demoserv.conf) is written into a folder with its listening
  address, its replicas' ports (the upstream's ``server`` lines in their order), its
  cache folder and access log moved there, the state folder of its snapshot's files
  given, and included in an ``nginx.conf`` of that
  folder written like Debian's /etc/nginx/nginx.conf (the same http-level directives,
  so that one the site repeated would fail here too), with pid, error log and
  temporary files in the folder, and workers running as the current user when started
  as root. nginx then runs in the foreground with that folder as its prefix.
"""

import grp
import os
import pwd
import re
import shlex
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UNITS = ROOT / "deploy" / "systemd"
SITE = ROOT / "deploy" / "nginx" / "demoserv.conf"
REPLICA = "demoserv@.service"  # the template unit of a replica
UPDATE = "demoserv-update.service"
BIN = Path(sys.executable).parent
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)

# The site's own values that a test or benchmark moves (each must be in the site).
SITE_LISTEN = "listen 80 "
SITE_CACHE = "/var/cache/nginx-demoserv"
SITE_ACCESS_LOG = "/var/log/nginx/demoserv.access.log"
SITE_STATE = "/var/lib/demoserv"
SITE_SNAPSHOT = f"{SITE_STATE}/demoserv.sqlite3.snapshot/"
SITE_CACHE_ON = "proxy_cache demoserv;"
SITE_LIMIT = "limit_req zone=per_client burst=100 nodelay;"
SITE_UPSTREAM = re.compile(r"^(\s*server )127\.0\.0\.1:(\d+)( .*)$", re.MULTILINE)
ACCESS_LOG = "access.log"  # the site's access log, in the nginx folder


def directives(name):
    """{(section, key): [value, ...]} of the unit file ``name`` in deploy/systemd/."""
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


def adapt_paths(text, state):
    """``text`` with the units' paths moved to this checkout, its venv and ``state``."""
    text = text.replace("/srv/demoserv/.venv/bin/", f"{BIN}/")
    text = text.replace("/srv/demoserv", str(ROOT))
    return text.replace("/var/lib/demoserv", str(state))


def specifiers(text, instance):
    """``text`` with systemd's ``%i`` and ``%%`` replaced; any other specifier refused."""

    def one(match):
        if match.group(1) == "%":
            return "%"
        if match.group(1) == "i" and instance is not None:
            return str(instance)
        raise ValueError(f"specifier %{match.group(1)} is not one this adaptation knows")

    return re.sub(r"%(.)", one, text)


def environment(name, state, settings=None, instance=None):
    """The environment the unit ``name`` gives its command (see the module's text)."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("DEMOSERV_")}
    for assignment in directives(name).get(("Service", "Environment"), []):
        key, value = specifiers(adapt_paths(assignment, state), instance).split("=", 1)
        env[key] = value
    env.update(settings or {})
    return env


def command(name, state, env, instance=None):
    """The unit ``name``'s ExecStart as an argument list (see the module's text)."""
    [line] = directives(name)[("Service", "ExecStart")]
    if line[0] in "-@+!:":
        raise ValueError(f"ExecStart prefix {line[0]!r} is not one this adaptation knows")
    words = shlex.split(specifiers(adapt_paths(line, state), instance))
    return [re.sub(r"\$\{(\w+)\}", lambda match: env[match.group(1)], word) for word in words]


def replica(port, state, settings=None):
    """(command, environment, working directory) of the replica ``demoserv@PORT``."""
    env = environment(REPLICA, state, settings, instance=port)
    folder = directives(REPLICA)[("Service", "WorkingDirectory")][0]
    return command(REPLICA, state, env, instance=port), env, adapt_paths(folder, state)


def update(state, settings):
    """(command, environment, working directory) of demoserv-update.service: one run
    loads ``settings["DEMOSERV_EXPORT_URL"]`` into the machine's catalogue file."""
    env = environment(UPDATE, state, settings)
    folder = directives(UPDATE)[("Service", "WorkingDirectory")][0]
    return command(UPDATE, state, env), env, adapt_paths(folder, state)


def site_ports():
    """The replicas' ports the shipped site's upstream names, in order."""
    return [int(match.group(2)) for match in SITE_UPSTREAM.finditer(SITE.read_text())]


def _replace_once(text, old, new):
    if text.count(old) != 1:
        raise ValueError(f"{SITE.name} must hold {old!r} once")
    return text.replace(old, new)


def write_nginx(folder, *, listen, ports, cache=True, limit=True, state=None):
    """Write the site and an nginx.conf that includes it into ``folder`` (see the
    module's text), ``listen`` its address and ``ports`` its replicas' (as many as the
    site names); ``cache=False`` turns the site's cache off, ``limit=False`` its limit
    per client (for a benchmark's clients, all of one address); ``state`` the folder
    in place of /var/lib/demoserv (the snapshot's files are read there). Returns nginx's
    command, to run in the foreground."""
    folder = Path(folder).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    text = SITE.read_text()
    shipped = site_ports()
    if len(ports) != len(shipped):
        raise ValueError(f"{SITE.name} names {len(shipped)} replicas; {len(ports)} ports given")
    moved = iter(ports)
    text = SITE_UPSTREAM.sub(lambda m: f"{m.group(1)}127.0.0.1:{next(moved)}{m.group(3)}", text)
    text = _replace_once(text, SITE_LISTEN, f"listen {listen} ")
    text = _replace_once(text, SITE_CACHE, str(folder / "cache"))
    text = _replace_once(text, SITE_ACCESS_LOG, str(folder / ACCESS_LOG))
    if state is not None:
        text = _replace_once(text, SITE_SNAPSHOT, SITE_SNAPSHOT.replace(SITE_STATE, str(state)))
    if not cache:
        text = _replace_once(text, SITE_CACHE_ON, "proxy_cache off;")
    if not limit:
        text = _replace_once(text, SITE_LIMIT, "")
    (folder / "demoserv.conf").write_text(text)
    user = ""
    if os.geteuid() == 0:  # nginx's workers would otherwise run as nobody
        user = f"user {pwd.getpwuid(os.geteuid()).pw_name} {grp.getgrgid(os.getegid()).gr_name};"
    temp = "\n".join(
        f"    {kind}_temp_path {folder / ('temp-' + kind)};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    (folder / "nginx.conf").write_text(
        f"""{user}
worker_processes auto;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"};

events {{
    worker_connections 768;
}}

http {{
    # The http-level directives of Debian's /etc/nginx/nginx.conf.
    sendfile on;
    tcp_nopush on;
    types_hash_max_size 2048;
    default_type application/octet-stream;
    access_log {folder / "nginx-access.log"};
    gzip on;
    # What Debian's nginx has in /var/lib/nginx.
{temp}

    include {folder / "demoserv.conf"};
}}
"""
    )
    conf = ["-p", str(folder), "-c", str(folder / "nginx.conf"), "-e", str(folder / "error.log")]
    return [NGINX, *conf, "-g", "daemon off;"]
