"""Starting the servers the benchmarks measure, each on a free loopback port, with
``demoserv.server.launcher`` (demoserv serve known by its ready file, other programs' servers
by the line of their log that names their address; each a started ``launcher.Server``:
``url``, ``pid``, ``stop()``), and running ``flask load``: what bench/benchmark.py,
bench/clients.py, bench/replicas.py and bench/slow_clients.py share."""

import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from demoserv.server import launcher

REPOSITORY = Path(__file__).resolve().parent.parent
WAITRESS_FLAGS = (  # README, "Serving with waitress alone"
    "--threads=16",
    "--connection-limit=1000",
    "--channel-timeout=15",
    "--cleanup-interval=2",
    "--asyncore-use-poll",
)
GUNICORN_LISTENING = r"Listening at: (http://127\.0\.0\.1:[0-9]+)"
FLASK_RUNNING = r"Running on (http://127\.0\.0\.1:[0-9]+)"


def start_server(kind, env, threads=None, app=None, tree=None):
    """Serve the catalogue of ``env`` with the server ``kind`` (one of SERVERS) on a
    free loopback port, as README runs it: a started ``launcher.Server``. ``app``, a
    WSGI app of bench/ (``module:name``), is served instead of demoserv, with the same
    server and settings (``demoserv-serve``: waitress with its settings, README's flags).
    ``tree``, a checkout of other code (an earlier commit's), is served instead of this
    one, its own package first on the path. A kind ending in ``-nginx`` is that server
    behind nginx with the site of deploy/ (``-nginx-nocache``: its cache off)."""
    python = sys.executable
    if kind.endswith(("-nginx", "-nginx-nocache")):
        backend, _, rest = kind.partition("-nginx")
        server = start_server(backend, env, threads, app, tree)
        return Fronted(server, cache=rest != "-nocache")
    folder = REPOSITORY if tree is None else Path(tree).resolve()
    gunicorn = [python, "-m", "gunicorn", "--bind=127.0.0.1:0", "--workers=2"]
    gunicorn.append(f"--chdir={folder}")
    serving, wsgi = launcher.SERVING_APP, "wsgi:app"
    if tree is not None:
        env = dict(env, PYTHONPATH=str(folder))
    if app is not None:
        if kind == "flask":
            raise ValueError("flask run serves only demoserv")
        env = dict(env, PYTHONPATH=str(Path(__file__).resolve().parent))
        serving, wsgi = [app], app
        kind = "waitress" if kind == "demoserv-serve" else kind
    if kind == "demoserv-serve":
        return start_demoserv(env, threads, checkout=tree)
    if kind == "waitress":
        return launcher.WaitressServe(*WAITRESS_FLAGS, app=serving, env=env, cwd=tree).start()
    if kind == "waitress-defaults":
        return launcher.WaitressServe(app=serving, env=env, cwd=tree).start()
    if kind == "gunicorn-sync":
        return start([*gunicorn, wsgi], env, GUNICORN_LISTENING, cwd=tree)
    if kind == "gunicorn-gthread":
        command = [*gunicorn, "--worker-class=gthread", "--threads=4", wsgi]
        return start(command, env, GUNICORN_LISTENING, cwd=tree)
    if kind == "flask":
        command = [python, "-m", "flask", "--app", "demoserv", "run", "--port=0"]
        return start(command, env, FLASK_RUNNING, cwd=tree)
    raise ValueError(kind)


SERVERS = (
    "demoserv-serve",
    "waitress",
    "waitress-defaults",
    "gunicorn-sync",
    "gunicorn-gthread",
    "flask",
    "gunicorn-sync-nginx",
    "gunicorn-sync-nginx-nocache",
)


class Fronted:
    """A started server behind nginx with deploy/nginx/demoserv.conf, as
    tests/deployment.py adapts it (both of its upstream's lines naming the server's
    port; its limit per client address and, unless ``cache`` is false, its cache on):
    ``url`` is nginx's, ``pid`` the server's."""

    def __init__(self, server, cache=True):
        sys.path.insert(0, str(REPOSITORY))  # tests.deployment: deploy/'s files as run here
        from tests import deployment

        self.server, self.pid = server, server.pid
        try:
            port = int(server.url.rpartition(":")[2])
            folder = REPOSITORY / "bench" / "out" / "nginx-front"
            shutil.rmtree(folder / "cache", ignore_errors=True)  # no answers of a run before
            with socket.socket() as probe:
                probe.bind(("127.0.0.1", 0))
                front = probe.getsockname()[1]
            command = deployment.write_nginx(
                folder, listen=f"127.0.0.1:{front}", ports=[port, port], cache=cache
            )
            self.url = f"http://127.0.0.1:{front}"
            answering = launcher.answering(f"{self.url}/api/v1/")
            self.nginx = launcher.Server(command, answering, name="nginx").start()
        except BaseException:
            server.stop()
            raise

    def stop(self):
        self.nginx.stop()
        self.server.stop()


def start(command, env, pattern, cwd=None):
    """Start a server of another program, which names its address in its log (the first
    group of ``pattern``), and wait until it has: a started ``launcher.Server``."""
    return launcher.Server(command, launcher.announced(pattern), env=env, cwd=cwd).start()


def start_waitress(env, threads):
    """Plain ``waitress-serve`` with its defaults but ``threads``, on a free loopback
    port: a started ``launcher.Server``."""
    return launcher.WaitressServe(f"--threads={threads}", env=env).start()


def start_demoserv(env, threads=None, checkout=None):
    """``demoserv serve`` (``demoserv-serve``), as production runs it, on a free loopback
    port (its own number of threads unless ``threads``): a started ``launcher.Server``.
    ``checkout``: a checkout of other code (an earlier commit's) to serve with instead,
    its own package first on the path."""
    arguments = [f"--threads={threads}"] if threads else []
    if checkout is not None:
        env = dict(env, PYTHONPATH=str(checkout))
    return launcher.Demoserv(*arguments, env=env, cwd=checkout).start()


def flask_load(source, env):
    """Run ``flask load source`` for the database named in ``env``; its seconds."""
    return measured_load(source, env)["seconds"]


def measured_load(source, env):
    """Run ``flask load source``: its seconds and the load process's peak RSS (MB)."""
    command = [sys.executable, "-m", "flask", "--app", "demoserv", "load", str(source)]
    return measured_command(command, env)


def measured_command(command, env):
    """Run ``command`` (a load): its seconds, CPU seconds and peak RSS (MB)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)
    output = process.stdout.read()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    seconds = time.perf_counter() - started
    if process.returncode:
        raise RuntimeError(
            f"flask {' '.join(command[-2:])} failed ({process.returncode}): {output}"
        )
    return {
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "output": output.strip(),
    }


def memory_mb(pid):
    """(VmRSS, VmHWM) of a process, in MB ((None, None) once it has ended)."""
    found = {}
    try:
        status = open(f"/proc/{pid}/status")
    except OSError:
        return None, None
    with status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(value.split()[0]) / 1024
    return found.get("VmRSS"), found.get("VmHWM")


def server_memory_mb(pid):
    """(VmRSS, VmHWM) of a server process and all its descendants together (gunicorn's
    workers, demoserv's finder processes), in MB."""
    pids, index = [pid], 0
    while index < len(pids):
        # Each thread's children: a process started from any thread of its parent.
        for children in Path(f"/proc/{pids[index]}/task").glob("*/children"):
            try:
                pids += map(int, children.read_text().split())
            except OSError:
                pass
        index += 1
    each = [memory_mb(one) for one in pids]
    return sum(rss or 0 for rss, _ in each), sum(peak or 0 for _, peak in each)


def small_catalogue(work, name):
    """The environment of a server of a generated catalogue of 2,000 productions, built
    once in ``work`` as ``name``, with the open-files limit raised for many clients."""
    from generate import generate

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    folder = work / f"{name}-catalogue"
    if not (folder / "productions.jsonl").exists():
        generate(folder, 2000, 1)
    database = work / f"{name}.sqlite3"
    env = dict(os.environ, DEMOSERV_DATABASE=str(database), DEMOSERV_SEED_DIR="")
    flask_load(folder, env)
    return env
