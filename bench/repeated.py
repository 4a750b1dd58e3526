"""Repeated pages against the server's floor, in one run: ``demoserv-serve``, a bare
waitress app serving the same bytes (``floor_app.py``) and nginx serving them as static
files, each started here on a free loopback port; with ``--baseline DIR`` (a checkout
of the code before a change), that code's ``demoserv-serve`` beside them on the same file.

    python bench/repeated.py (--database FILE | --dump EXPORT) [--baseline DIR]
                             [--samples 1000] [--seconds 10] [--clients 8]

It measures:

- the median and p99 of each page (the platforms page, productions pages: first, deep,
  ordered; parties, releasers, bbses, party series, a production detail) over one
  keep-alive client, asked of every server in turn, request by request, so that each
  server is measured over the same seconds; the target: demoserv within 1.5x of the bare
  app and 3x of nginx, every page;
- requests per second of ``--clients`` keep-alive clients on the platforms page and on
  productions page 1 (this code, then the baseline's); the target: at least 2x;
- the first request of pages nobody asked for (production details and productions
  pages), on this code and the baseline's, interleaved: no dearer than before;
- the server's memory with its answers cache full (distinct productions pages asked
  until their bytes are twice ``--cache-bytes``), against the baseline's after the same;
- 8 readers (10 ms between requests) alone, then beside 8 clients sending pages under
  ever new addresses (an unknown parameter with a new value each time: each answer is
  new, cheap and kept; ``--flood-think`` seconds between two), on this code and the
  baseline's; then beside bench/clients.py's attack of never-seen listings. The
  targets: the readers' p99 within 3x of idle beside the attack, and beside new
  addresses within 3x of idle or no higher than the baseline's beside the same.

Prints Markdown tables and each target met or missed, writes ``<work>/repeated.json``.
"""

import argparse
import json
import multiprocessing
import os
import random
import shutil
import socket
import sys
from pathlib import Path
from urllib.parse import urlsplit

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from benchmark import Client, memory_mb, summary  # noqa: E402
from clients import _latency, attack, catalogue_info, timed_clients  # noqa: E402
from servers import flask_load, start_demoserv, start_server  # noqa: E402

from demoserv.server import launcher  # noqa: E402

NGINX_CONFIG = """
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
daemon off;
events {{ worker_connections 1024; }}
http {{
    default_type application/json;
    access_log off;
    client_body_temp_path {work}/temp;
    proxy_temp_path {work}/temp;
    fastcgi_temp_path {work}/temp;
    uwsgi_temp_path {work}/temp;
    scgi_temp_path {work}/temp;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        root {work}/root;
    }}
}}
"""
THINK = 0.01  # seconds between two requests of a reader


def pages(base):
    """The measured pages: (name, path), the deep and ordered ones from the counts."""
    client = Client(base)
    count = json.loads(client.get("/api/v1/productions/")[1])["count"]
    last = -(-count // 100)
    detail = json.loads(client.get(f"/api/v1/productions/?ordering=-id&page={last // 3}")[1])
    return [
        ("platforms", "/api/v1/platforms/"),
        ("productions, first page", "/api/v1/productions/"),
        ("productions, deep page", f"/api/v1/productions/?page={last * 3 // 4}"),
        (
            "productions, ordered (-release_date_date)",
            f"/api/v1/productions/?ordering=-release_date_date&page={last // 2}",
        ),
        ("parties", "/api/v1/parties/"),
        ("releasers", "/api/v1/releasers/"),
        ("bbses", "/api/v1/bbses/"),
        ("party series", "/api/v1/party_series/"),
        ("production detail", f"/api/v1/productions/{detail['results'][0]['id']}/"),
    ]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def start_nginx(work, bodies):
    """nginx serving each body as a static file ``/<index>.json``: (a started
    ``launcher.Server``, its paths)."""
    shutil.rmtree(work, ignore_errors=True)
    (work / "root").mkdir(parents=True)
    (work / "temp").mkdir()
    paths = []
    for index, body in enumerate(bodies):
        (work / "root" / f"{index}.json").write_bytes(body)
        paths.append(f"/{index}.json")
    port = free_port()
    (work / "nginx.conf").write_text(NGINX_CONFIG.format(work=work.resolve(), port=port))
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    command = [nginx, "-p", work.resolve(), "-c", "nginx.conf"]
    ready = launcher.answering(f"http://127.0.0.1:{port}")
    return launcher.Server(command, ready, folder=work, timeout=30, name="nginx").start(), paths


def latencies(servers, page_paths, samples):
    """Each page asked of every server in turn, ``samples`` times: page -> server -> summary."""
    clients = {name: Client(base) for name, (base, _) in servers.items()}
    results = {}
    for index, (page, _) in enumerate(page_paths):
        times = {name: [] for name in servers}
        for name, (_, paths) in servers.items():
            clients[name].timed(paths[index])  # warm: the page is kept from here on
        for _ in range(samples):
            for name, (_, paths) in servers.items():
                times[name].append(clients[name].timed(paths[index])[0])
        results[page] = {name: summary(found) for name, found in times.items()}
    return results


def throughput(base, path, clients, seconds):
    run = timed_clients(base, lambda rng: ("GET", path, {}, 200), clients, seconds)
    for thread in run[0]:
        thread.join()
    result = _latency(run[1], seconds)
    result["unexpected"] = sum(run[2].values()) + sum(run[3].values())
    return result


def first_requests(bases, paths):
    """Each path asked once of each server, interleaved, each server first in turn (the
    first warms the file's pages in the system's cache): server -> summary."""
    times = {name: [] for name in bases}
    clients = {name: Client(base) for name, base in bases.items()}
    names = list(bases)
    for index, path in enumerate(paths):
        for name in names[index % len(names) :] + names[: index % len(names)]:
            times[name].append(clients[name].timed(path)[0])
    return {name: summary(found) for name, found in times.items()}


def fill(base, pid, count):
    """RSS (MB) before and after ``count`` distinct productions pages, and their bytes."""
    client = Client(base)
    before = memory_mb(pid)[0]
    pages = range(1, count + 1)
    size = sum(len(client.timed(f"/api/v1/productions/?page={page}")[1]) for page in pages)
    return {"rss_before_mb": before, "rss_after_mb": memory_mb(pid)[0], "bytes": size}


def _flood(base, page_paths, clients, think, stop, results):
    """Clients sending the pages under ever new addresses until ``stop``, waiting
    ``think`` seconds between two."""
    counter = iter(range(10**9))

    def new_address(rng):
        path = rng.choice(page_paths)
        joiner = "&" if "?" in path else "?"
        return "GET", f"{path}{joiner}unknown={next(counter)}", {}, 200

    run = timed_clients(base, new_address, clients, think=think, going=lambda: not stop.is_set())
    for thread in run[0]:
        thread.join()
    results.put((len(run[1]), sum(run[2].values()) + sum(run[3].values())))


def readers_under_flood(base, page_paths, idle_seconds, seconds, think):
    """8 readers of the pages alone, then beside 8 clients sending new addresses."""
    results = {}
    context = multiprocessing.get_context("spawn")
    for phase, length in (("idle", idle_seconds), ("flood", seconds)):
        stop, queue, process = context.Event(), context.Queue(), None
        if phase == "flood":
            process = context.Process(target=_flood, args=(base, page_paths, 8, think, stop, queue))
            process.start()
        run = timed_clients(
            base, lambda rng: ("GET", rng.choice(page_paths), {}, 200), 8, length, THINK
        )
        for thread in run[0]:
            thread.join()
        results[phase] = _latency(run[1], length)
        results[phase]["unexpected"] = sum(run[2].values()) + sum(run[3].values())
        if process is not None:
            stop.set()
            requests, unexpected = queue.get(timeout=120)
            process.join(timeout=60)
            results["flooders"] = {"requests": requests, "per_second": requests / length}
            results["flooders"]["unexpected"] = unexpected
    results["p99_ratio"] = results["flood"]["p99_ms"] / results["idle"]["p99_ms"]
    return results


def measure(args, env):
    results, started = {"samples": args.samples}, []
    try:
        server = start_server("demoserv-serve", env)
        started.append(server)
        base = server.url
        bases = {"demoserv": base}
        pids = {"demoserv": server.pid}
        if args.baseline:
            server = start_demoserv(env, checkout=args.baseline)
            started.append(server)
            bases["baseline"], pids["baseline"] = server.url, server.pid
        page_paths = pages(base)
        results["pages"] = page_paths
        bodies = [Client(base).get(path)[1] for _, path in page_paths]
        answers = {
            path: [body.decode(), "application/json"] for (_, path), body in zip(page_paths, bodies)
        }
        (args.work / "floor-answers.json").write_text(json.dumps(answers))
        floor_env = dict(
            env, DEMOSERV_FLOOR_ANSWERS=str((args.work / "floor-answers.json").resolve())
        )
        floor = start_server("demoserv-serve", floor_env, app="floor_app:app")
        started.append(floor)
        floor_base = floor.url
        nginx, nginx_paths = start_nginx(args.work / "nginx", bodies)
        started.append(nginx)
        nginx_base = nginx.url
        paths = [path for _, path in page_paths]
        servers = {name: (b, paths) for name, b in bases.items()}
        servers["waitress, same bytes"] = (floor_base, paths)
        servers["nginx, static files"] = (nginx_base, nginx_paths)
        for name, (server_base, server_paths) in servers.items():
            # The same bytes; a demoserv's addresses name its own host and port.
            client, own = Client(server_base), urlsplit(server_base).netloc.encode()
            got = [
                client.get(p)[1].replace(own, urlsplit(base).netloc.encode()) for p in server_paths
            ]
            assert got == bodies, f"{name}: other bytes"
        print("measuring repeated pages ...", flush=True)
        results["latency"] = latencies(servers, page_paths, args.samples)
        print("measuring throughput ...", flush=True)
        results["throughput"] = {}
        for page, path in page_paths[:2]:
            for name, server_base in bases.items():
                results["throughput"][f"{page} | {name}"] = throughput(
                    server_base, path, args.clients, args.seconds
                )
        print("measuring first requests ...", flush=True)
        info = catalogue_info(base)
        rng = random.Random(11)
        last = -(-info["counts"]["productions"] // 100)
        # Pages and records no request of this run asked for before.
        authors = rng.sample(info["authors"], min(100, len(info["authors"])))
        fresh = [f"/api/v1/releasers/{i}/" for i in authors]
        fresh += [
            f"/api/v1/productions/?ordering=-sortable_title&page={page}"
            for page in rng.sample(range(2, last), min(100, last - 2))
        ]
        rng.shuffle(fresh)
        results["first_requests"] = first_requests(bases, fresh)
        print("filling the answers cache ...", flush=True)
        count = min(last, max(1, args.cache_bytes * 2 // len(bodies[1])))
        results["memory"] = {name: fill(b, pids[name], count) for name, b in bases.items()}
        results["memory"]["pages"] = count
        print("measuring readers beside new addresses ...", flush=True)
        results["flood"] = {
            name: readers_under_flood(
                b, paths, args.idle_seconds, args.attack_seconds, args.flood_think
            )
            for name, b in bases.items()
        }
        print("measuring readers beside never-seen listings ...", flush=True)
        results["attack"] = attack(
            base, info, seconds=args.attack_seconds, idle_seconds=args.idle_seconds
        )
        results["peak_rss_mb"] = memory_mb(pids["demoserv"])[1]
    finally:
        for server in reversed(started):
            server.stop()
    return results


def targets(results):
    checks = []
    for server, bound in (("waitress, same bytes", 1.5), ("nginx, static files", 3)):
        worst = max(
            (m["demoserv"]["median_ms"] / m[server]["median_ms"], page)
            for page, m in results["latency"].items()
        )
        checks.append(
            (
                f"every page within {bound}x of {server} (median)",
                f"worst {worst[0]:.2f}x ({worst[1]})",
                worst[0] <= bound,
            )
        )
    through = results["throughput"]
    for page, _ in results["pages"][:2]:
        if f"{page} | baseline" in through:
            ours = through[f"{page} | demoserv"]["requests_per_second"]
            before = through[f"{page} | baseline"]["requests_per_second"]
            checks.append(
                (
                    f"{page}: throughput at least 2x the baseline's",
                    f"{ours:.0f} / {before:.0f} = {ours / before:.2f}x",
                    ours >= 2 * before,
                )
            )
    first = results["first_requests"]
    if "baseline" in first:
        ratio = first["demoserv"]["median_ms"] / first["baseline"]["median_ms"]
        checks.append(
            (
                "a first request no dearer than the baseline's (median, within 1.1x)",
                f"{ratio:.2f}x",
                ratio <= 1.1,
            )
        )
    ratio = results["attack"]["p99_ratio"]
    checks.append(
        ("readers' p99 beside never-seen listings within 3x of idle", f"{ratio:.2f}x", ratio <= 3)
    )
    # New addresses are each a page built: clients that never pause take the CPU from
    # readers with or without kept answers; what must hold is that keeping adds nothing.
    floods = results["flood"]
    ours, before = floods["demoserv"], floods.get("baseline")
    checks.append(
        (
            "readers' p99 beside new addresses within 3x of idle, or no higher than the "
            "baseline's beside the same",
            f"{ours['flood']['p99_ms']} ms, {ours['p99_ratio']:.2f}x"
            + (f" (baseline {before['flood']['p99_ms']} ms)" if before else ""),
            ours["p99_ratio"] <= 3
            or (before is not None and ours["flood"]["p99_ms"] <= before["flood"]["p99_ms"]),
        )
    )
    return checks


def table(head, rows):
    """A Markdown table: ``head`` and ``rows`` are lists of cells."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    return lines + ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]


def report(results):
    servers = list(next(iter(results["latency"].values())))
    rows = []
    for page, m in results["latency"].items():
        ours = m["demoserv"]["median_ms"]
        rows.append(
            [page]
            + [f"{m[s]['median_ms']:.3f} / {m[s]['p99_ms']:.3f}" for s in servers]
            + [
                f"{ours / m[s]['median_ms']:.2f}"
                for s in ("waitress, same bytes", "nginx, static files")
            ]
        )
    lines = [
        f"Repeated pages, median / p99 (ms), {results['samples']} requests each, one "
        "keep-alive client a server, the servers asked in turn:",
        "",
        *table(["page", *servers, "× waitress", "× nginx"], rows),
        "",
        *table(
            ["throughput: page", "server", "requests/s", "median (ms)", "p99 (ms)", "errors"],
            [
                [
                    name,
                    f"{t['requests_per_second']:.0f}",
                    t["median_ms"],
                    t["p99_ms"],
                    t["unexpected"],
                ]
                for name, t in results["throughput"].items()
            ],
        ),
        "",
        *table(
            ["first request of a page", "median (ms)", "p99 (ms)"],
            [
                [name, f"{s['median_ms']:.2f}", f"{s['p99_ms']:.2f}"]
                for name, s in results["first_requests"].items()
            ],
        ),
    ]
    memory = results["memory"]
    lines += [
        "",
        f"Memory after {memory['pages']:,} distinct productions pages:",
        "",
        *table(
            ["server", "RSS before (MB)", "after (MB)", "bytes of the pages (MB)"],
            [
                [
                    name,
                    f"{m['rss_before_mb']:.0f}",
                    f"{m['rss_after_mb']:.0f}",
                    f"{m['bytes'] / 1e6:.0f}",
                ]
                for name, m in memory.items()
                if name != "pages"
            ],
        ),
    ]
    attacked = results["attack"]
    lines += [
        "",
        *table(
            [
                "8 readers beside 8 clients sending new addresses",
                "idle median / p99 (ms)",
                "beside them",
                "p99 ratio",
                "new addresses/s",
            ],
            [
                [
                    name,
                    f"{f['idle']['median_ms']} / {f['idle']['p99_ms']}",
                    f"{f['flood']['median_ms']} / {f['flood']['p99_ms']}",
                    f"{f['p99_ratio']:.2f}x",
                    f"{f['flooders']['per_second']:.0f}",
                ]
                for name, f in results["flood"].items()
            ],
        ),
        "",
        f"8 readers beside never-seen listings (bench/clients.py's attack): "
        f"{attacked['idle']['p99_ms']} → {attacked['attack']['p99_ms']} ms "
        f"({attacked['p99_ratio']:.2f}x). Server peak RSS {results['peak_rss_mb']:.0f} MB.",
        "",
        *table(
            ["target", "result", "met"],
            [[name, result, "yes" if met else "NO"] for name, result, met in targets(results)],
        ),
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--database", type=Path, help="a catalogue file already loaded")
    parser.add_argument("--dump", type=Path, help="an export (or folder) to load first")
    parser.add_argument("--baseline", type=Path, help="a checkout of the code to compare with")
    parser.add_argument("--work", type=Path, default=HERE / "out" / "repeated")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--seconds", type=float, default=10.0, help="each throughput run")
    parser.add_argument("--clients", type=int, default=8, help="throughput clients")
    parser.add_argument("--idle-seconds", type=float, default=15.0)
    parser.add_argument("--attack-seconds", type=float, default=30.0)
    parser.add_argument(
        "--flood-think", type=float, default=0.0, help="seconds between two new addresses"
    )
    parser.add_argument(
        "--cache-bytes", type=int, default=32 * 1024 * 1024, help="the server's ANSWER_CACHE_BYTES"
    )
    args = parser.parse_args()
    if (args.database is None) == (args.dump is None):
        parser.error("give --database FILE or --dump EXPORT")
    args.work.mkdir(parents=True, exist_ok=True)
    database = (args.database or args.work / "repeated.sqlite3").resolve()
    env = dict(
        os.environ,
        DEMOSERV_DATABASE=str(database),
        DEMOSERV_SEED_DIR="",
        DEMOSERV_ANSWER_CACHE_BYTES=str(args.cache_bytes),
    )
    if args.dump:
        print(f"loading {args.dump} ...", flush=True)
        flask_load(args.dump, env)
    results = measure(args, env)
    results["targets"] = [{"target": n, "result": r, "met": m} for n, r, m in targets(results)]
    (args.work / "repeated.json").write_text(json.dumps(results, indent=2, default=str))
    print(report(results))
    sys.exit(0 if all(met for _, _, met in targets(results)) else 1)


if __name__ == "__main__":
    main()
