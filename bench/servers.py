"""Starting the servers the benchmarks measure, each on a free loopback port, with
``demoserv.server.launcher`` (demoserv serve known by its ready file, other programs' servers
by the line of their log that names their address; each a started ``launcher.Server``:
``url``, ``pid``, ``stop()``), and running ``flask load``: what bench/benchmark.py,
bench/clients.py, bench/replicas.py and bench/slow_clients.py share."""

import os
import resource
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


def start_server(kind, env, threads=None, app=None):
    """Serve the catalogue of ``env`` with the server ``kind`` (one of SERVERS) on a
    free loopback port, as README runs it: a started ``launcher.Server``. ``app``, a
    WSGI app of bench/ (``module:name``), is served instead of demoserv, with the same
    server and settings (``demoserv-serve``: waitress with its settings, README's flags)."""
    python = sys.executable
    gunicorn = [python, "-m", "gunicorn", "--bind=127.0.0.1:0", "--workers=2"]
    gunicorn.append(f"--chdir={REPOSITORY}")
    serving, wsgi = launcher.SERVING_APP, "wsgi:app"
    if app is not None:
        if kind == "flask":
            raise ValueError("flask run serves only demoserv")
        env = dict(env, PYTHONPATH=str(Path(__file__).resolve().parent))
        serving, wsgi = [app], app
        kind = "waitress" if kind == "demoserv-serve" else kind
    if kind == "demoserv-serve":
        return start_demoserv(env, threads)
    if kind == "waitress":
        return launcher.WaitressServe(*WAITRESS_FLAGS, app=serving, env=env).start()
    if kind == "waitress-defaults":
        return launcher.WaitressServe(app=serving, env=env).start()
    if kind == "gunicorn-sync":
        return start([*gunicorn, wsgi], env, GUNICORN_LISTENING)
    if kind == "gunicorn-gthread":
        command = [*gunicorn, "--worker-class=gthread", "--threads=4", wsgi]
        return start(command, env, GUNICORN_LISTENING)
    if kind == "flask":
        command = [python, "-m", "flask", "--app", "demoserv", "run", "--port=0"]
        return start(command, env, FLASK_RUNNING)
    raise ValueError(kind)


SERVERS = (
    "demoserv-serve",
    "waitress",
    "waitress-defaults",
    "gunicorn-sync",
    "gunicorn-gthread",
    "flask",
)


def start(command, env, pattern):
    """Start a server of another program, which names its address in its log (the first
    group of ``pattern``), and wait until it has: a started ``launcher.Server``."""
    return launcher.Server(command, launcher.announced(pattern), env=env).start()


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
    """(VmRSS, VmHWM) of a process, in MB."""
    found = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, value = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                found[name] = int(value.split()[0]) / 1024
    return found.get("VmRSS"), found.get("VmHWM")


def server_memory_mb(pid):
    """(VmRSS, VmHWM) of a server process and its child processes (gunicorn's
    workers) together, in MB."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as children:
            pids = [pid, *map(int, children.read().split())]
    except OSError:
        pids = [pid]
    each = [memory_mb(one) for one in pids]
    return sum(rss for rss, _ in each), sum(peak for _, peak in each)


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
