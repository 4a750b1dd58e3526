"""deploy/: two demoserv-serve replicas behind nginx (deploy/run-replicas), each serving
its own copy of one catalogue file. Needs nginx (Debian's package); run with
``pytest -m nginx``."""

import http.client
import os
import shutil
import signal
import socket
import sys
import time
from pathlib import Path

import pytest

from demoserv.loader.prebuilt import install_built
from demoserv.server import launcher

from .conftest import SITE_URL
from .test_prebuilt import built_catalogues

pytestmark = pytest.mark.nginx

ROOT = Path(__file__).resolve().parent.parent
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None)
DEADLINE = 30  # seconds any awaited event may take
MAX_AGE = 3  # seconds the replicas let an answer be cached, so that a new catalogue shows soon


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for one in sockets:
        one.bind(("127.0.0.1", 0))
    ports = [one.getsockname()[1] for one in sockets]
    for one in sockets:
        one.close()
    return ports


class Deployment(launcher.ReadyFileServer):
    """deploy/run-replicas in a process of its own, ready once it has written its ready
    file (nginx answers), stopped by PID."""

    def __init__(self, tmp_path, databases):
        self.work = tmp_path / "nginx"
        self.port, *self.replica_ports = free_ports(1 + len(databases))
        env = dict(
            os.environ,
            DEMOSERV_SITE_URL=SITE_URL,
            DEMOSERV_SEED_DIR="",
            DEMOSERV_CACHE_MAX_AGE=str(MAX_AGE),
        )
        command = [
            sys.executable,
            ROOT / "deploy" / "run-replicas",
            f"--replicas={len(databases)}",
            f"--listen=127.0.0.1:{self.port}",
            *(f"--replica-port={port}" for port in self.replica_ports),
            f"--database={databases[0].parent.parent / 'replica-{n}' / 'demoserv.sqlite3'}",
            f"--work={self.work}",
            f"--nginx={NGINX}",
            "--threads=2",
        ]
        super().__init__(
            command, folder=tmp_path, env=env, timeout=2 * DEADLINE, name="run-replicas"
        )

    def pids(self):
        """Process ids of nginx's master and of every replica still recorded."""
        files = [self.work / "nginx.pid", *sorted(self.work.glob("replica-*.pid"))]
        return [int(path.read_text()) for path in files if path.exists()]

    def replica_pid(self, number):
        return int((self.work / f"replica-{number}.pid").read_text())

    def stop(self, timeout=DEADLINE):
        leftover = self.pids()
        try:
            super().stop(timeout)
        finally:
            for pid in leftover:  # in case run-replicas could not stop them itself
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass


def get(port, path, headers=None, host=None):
    """(status, headers with lower-case names, body) of one request on a new connection."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=DEADLINE)
    try:
        connection.request(
            "GET", path, headers={"Host": host or f"127.0.0.1:{port}", **(headers or {})}
        )
        response = connection.getresponse()
        body = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, body
    finally:
        connection.close()


def upstreams(work):
    """The replica address of every request nginx passed on, from its access log."""
    found = []
    for line in (work / "access.log").read_text().splitlines():
        for field in line.split():
            if field.startswith("upstream=") and field != "upstream=-":
                found.extend(address.strip(",") for address in field[9:].split(","))
    return found


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Two built catalogue files, as an operator makes them once with flask load."""
    if NGINX is None:
        pytest.skip(
            "NGINX NOT FOUND: the deployment test needs nginx (apt-get install nginx); "
            "this test did not run"
        )
    return built_catalogues(tmp_path_factory.mktemp("staging"), {31: 250, 32: 260})


def test_two_replicas_behind_nginx(tmp_path, built):
    old, new = built
    databases = [tmp_path / "data" / f"replica-{n}" / "demoserv.sqlite3" for n in (1, 2)]
    for database in databases:  # each replica's own copy, as on machines of their own
        database.parent.mkdir(parents=True)
        install_built(old, database)
    with Deployment(tmp_path, databases) as deployment:
        front = deployment.port
        host = f"127.0.0.1:{front}"
        one, two = deployment.replica_ports

        # Answers through nginx are the replicas' own: body, ETag, version.
        paths = [
            "/api/v1/",
            "/api/v1/productions/?page=2",
            "/api/v1/productions/?ordering=-release_date_date&format=api",
            "/api/v1/parties/?page=last",
            "/api/v1/platforms/",
            "/api/v1/releasers/1/",
            "/api/v1/productions/99999/",
            "/api/v1/productions/?ordering=nope",
        ]
        for path in paths:
            through = get(front, path)
            direct = [get(port, path, host=host) for port in (one, two)]
            for status, headers, body in direct:
                assert status == through[0], path
                assert body == through[2], path
                for name in ("etag", "x-catalogue-version", "content-type"):
                    assert headers.get(name) == through[1].get(name), (path, name)
        status, headers, body = get(front, "/api/v1/")
        assert b'"http://' + host.encode() + b'/api/v1/productions/"' in body  # Host as sent
        old_version = headers["x-catalogue-version"]
        # Both replicas took requests.
        assert {f"127.0.0.1:{one}", f"127.0.0.1:{two}"} <= set(upstreams(deployment.work))

        # A repeated request is a cache hit.
        first = get(front, "/api/v1/productions/?page=3")
        again = get(front, "/api/v1/productions/?page=3")
        assert first[0] == 200 and first[1]["x-cache-status"] == "MISS"
        assert again[1]["x-cache-status"] == "HIT"
        assert (again[1]["etag"], again[2]) == (first[1]["etag"], first[2])
        etag = first[1]["etag"]

        # Revalidation: 304 from nginx and from either replica.
        revalidation = {"If-None-Match": etag}
        assert get(front, "/api/v1/productions/?page=3", revalidation)[0] == 304
        for port in (one, two):
            status, headers, body = get(port, "/api/v1/productions/?page=3", revalidation, host)
            assert (status, body, headers["x-catalogue-version"]) == (304, b"", old_version)

        # A new catalogue switched on both replicas: answers not cached yet carry it at
        # once; cached ones once their max-age has passed (nginx then revalidates).
        for database in databases:
            install_built(new, database)
        status, headers, _ = get(front, "/api/v1/productions/?page=1&ordering=id")
        new_version = headers["x-catalogue-version"]
        assert status == 200 and new_version != old_version
        for port in (one, two):
            assert get(port, "/api/v1/", host=host)[1]["x-catalogue-version"] == new_version
        deadline = time.monotonic() + MAX_AGE + DEADLINE
        while True:
            status, headers, body = get(front, "/api/v1/productions/?page=3")
            if headers["x-catalogue-version"] == new_version:
                break
            assert headers["x-catalogue-version"] == old_version
            assert time.monotonic() < deadline, "the cached answer never changed"
            time.sleep(0.1)
        assert status == 200 and headers["etag"] != etag
        assert get(front, "/api/v1/productions/?page=3", revalidation)[0] == 200

        # A replica stopped mid-run: the other answers every request.
        os.kill(deployment.replica_pid(1), signal.SIGKILL)
        for page in range(1, 4):
            for ordering in ("id", "-id", "sortable_title", "-sortable_title"):
                status, headers, _ = get(
                    front, f"/api/v1/productions/?page={page}&ordering={ordering}&failover=1"
                )
                assert status == 200 and headers["x-catalogue-version"] == new_version

        # 200 clients sending their headers slowly do not keep a normal client out.
        slow = []
        try:
            for _ in range(200):
                connection = socket.create_connection(("127.0.0.1", front), timeout=DEADLINE)
                connection.sendall(b"GET /api/v1/ HTTP/1.1\r\nHost: local")
                slow.append(connection)
            status, headers, body = get(front, "/api/v1/parties/?ordering=-id&slow=1")
            assert status == 200 and b'"results"' in body
        finally:
            for connection in slow:
                connection.close()

        # One client past its burst of 100 requests at more than 20 a second: 429 in
        # the service's error shape (nginx's limit_req, the protection README names).
        for _ in range(1000):
            status, headers, body = get(front, "/api/v1/platforms/")
            if status != 200:
                break
        assert (status, headers["retry-after"]) == (429, "1")
        assert body == b'{"detail": "Too many requests; slow down."}\n'
