"""deploy/: replicas of deploy/systemd/demoserv@.service behind the nginx site
deploy/nginx/demoserv.conf, started from those very files (their command lines, their
environment and the site, adapted to this machine as tests/deployment.py says), the
catalogue loaded by demoserv-update.service's command, once for all the replicas of a
machine. Needs nginx (Debian's package); run with ``pytest -m nginx``. Every wait is a
poll with a deadline."""

import hashlib
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import time
from urllib.parse import urlsplit

import pytest

from . import catalogue_factory, deployment

pytestmark = pytest.mark.nginx

DEADLINE = 30  # seconds any awaited event may take
POLL = 0.05  # seconds between two looks at an awaited event
MAX_AGE = 3  # seconds the replicas let an answer be cached, so that a new catalogue shows soon
FAIL_TIMEOUT = 5  # the site's fail_timeout: how long nginx leaves out a replica that failed
SAMPLE_EXPORT = deployment.ROOT / "tests" / "data" / "upstream" / "demozoo-export-sample.sql.gz"


def free_ports(count):
    sockets = [socket.socket() for _ in range(count)]
    for one in sockets:
        one.bind(("127.0.0.1", 0))
    ports = [one.getsockname()[1] for one in sockets]
    for one in sockets:
        one.close()
    return ports


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


def status_of(port, path="/api/v1/"):
    """The status ``path`` answers on ``port``; None while nothing listens there."""
    try:
        return get(port, path)[0]
    except (ConnectionError, OSError):
        return None


def wait_for(condition, what, processes=(), deadline=DEADLINE, interval=POLL):
    """Poll ``condition()`` every ``interval`` seconds until it holds; fail after
    ``deadline`` seconds, or at once when one of ``processes`` has ended."""
    limit = time.monotonic() + deadline
    while not condition():
        for process in processes:
            assert process.poll() is None, f"{what}: {process.args[0]} exited {process.returncode}"
        assert time.monotonic() < limit, f"{what}: not within {deadline} s"
        time.sleep(interval)


class Processes:
    """The processes a test starts, each with its output in a file of ``folder``; at
    the end each one still running is told to stop (SIGTERM), then killed if it has
    not exited within the deadline. All by process id."""

    def __init__(self, folder):
        self.folder = folder
        self.started = []

    def start(self, name, command, env=None, cwd=None):
        with open(self.folder / f"{name}.log", "ab") as log:
            process = subprocess.Popen(
                command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        self.started.append(process)
        return process

    def stop_all(self):
        running = [process for process in self.started if process.poll() is None]
        for process in running:
            process.terminate()
        for process in running:
            try:
                process.wait(timeout=DEADLINE)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=DEADLINE)


@pytest.fixture
def processes(tmp_path):
    started = Processes(tmp_path)
    try:
        yield started
    finally:
        started.stop_all()


class Machine:
    """One machine of the deployment: its catalogue file in its state folder
    (/var/lib/demoserv), loaded by demoserv-update.service's command, and its replicas,
    each started with demoserv@.service's command for its port."""

    def __init__(self, folder, processes, settings):
        self.state = folder / "var-lib-demoserv"
        self.state.mkdir(parents=True)
        self.processes = processes
        self.settings = settings  # what /etc/default/demoserv would hold
        self.replicas = {}  # port: the process serving it

    def update(self, export):
        """One run of the update service, its export address ``export``: its output."""
        command, env, cwd = deployment.update(
            self.state, {**self.settings, "DEMOSERV_EXPORT_URL": str(export)}
        )
        result = subprocess.run(
            command, env=env, cwd=cwd, capture_output=True, text=True, timeout=2 * DEADLINE
        )
        assert result.returncode == 0, result.stdout + result.stderr
        return result.stdout

    def start(self, port):
        """Start the replica demoserv@PORT and wait until it answers."""
        command, env, cwd = deployment.replica(port, self.state, self.settings)
        process = self.processes.start(f"replica-{port}", command, env=env, cwd=cwd)
        self.replicas[port] = process
        wait_for(lambda: status_of(port) == 200, f"replica {port}", [process])
        return process


@pytest.fixture(scope="module", autouse=True)
def nginx_installed():
    if deployment.NGINX is None:
        pytest.skip(
            "NGINX NOT FOUND: the deployment test needs nginx (apt-get install nginx); "
            "this test did not run"
        )


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Two catalogues, the upstream's export of one day and of the next."""
    folder = tmp_path_factory.mktemp("exports")
    return [
        catalogue_factory.write(catalogue_factory.build(seed=seed, productions=size), folder / name)
        for seed, size, name in ((31, 250, "day-1"), (32, 260, "day-2"))
    ]


LOG_LINE = re.compile(
    r'"(?P<request>[^"]*)" .* upstream=(?P<addresses>.*) upstream_status=(?P<statuses>.*) cache='
)


def access_log(folder):
    """[(request line, [replica address, ...], [its status, ...])] of nginx's log (the
    site's log format), a request passed on from one replica to the next naming each."""
    path = folder / deployment.ACCESS_LOG
    entries = []
    text = path.read_text() if path.exists() else ""
    for line in text.split("\n")[:-1]:  # whole lines: nginx may be writing the next
        match = LOG_LINE.search(line)
        addresses, statuses = (
            [] if match[name] == "-" else match[name].split(", ")
            for name in ("addresses", "statuses")
        )
        entries.append((match["request"], addresses, statuses))
    return entries


def logged(folder, path):
    """The log entry of the one request for ``path``, once nginx has written it."""
    found = []

    def written():
        found[:] = [entry for entry in access_log(folder) if entry[0] == f"GET {path} HTTP/1.1"]
        return found

    wait_for(written, f"nginx's log line of {path}")
    [entry] = found
    return entry


def test_the_site_passes_nginx_t(tmp_path):
    """nginx -t on the shipped site, included in an nginx.conf like Debian's."""
    [port] = free_ports(1)
    command = deployment.write_nginx(
        tmp_path / "nginx", listen=f"127.0.0.1:{port}", ports=deployment.site_ports()
    )
    result = subprocess.run([*command[:-2], "-t"], capture_output=True, text=True, timeout=DEADLINE)
    assert result.returncode == 0, result.stderr
    assert "test is successful" in result.stderr


def test_two_replicas_behind_nginx_one_load_kill_and_restart(tmp_path, exports, processes):
    day_1, day_2 = exports
    front, one, two = free_ports(3)
    host = f"127.0.0.1:{front}"
    settings = {
        "DEMOSERV_CACHE_MAX_AGE": str(MAX_AGE),
        "DEMOSERV_SNAPSHOT_URLS": f'["http://{host}"]',  # the front's address
    }
    machine = Machine(tmp_path / "machine", processes, settings)
    assert machine.update(day_1).startswith("Loaded ")
    for port in (one, two):
        machine.start(port)
    nginx_folder = tmp_path / "nginx"
    nginx = processes.start(
        "nginx",
        deployment.write_nginx(nginx_folder, listen=host, ports=[one, two], state=machine.state),
    )
    wait_for(lambda: status_of(front) == 200, "nginx", [nginx])

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
    wait_for(
        lambda: (
            {f"127.0.0.1:{one}", f"127.0.0.1:{two}"}
            <= {address for _, addresses, _ in access_log(nginx_folder) for address in addresses}
        ),
        "requests to both replicas in nginx's log",
    )

    # The snapshot: its manifest from a replica, its files read by nginx from the
    # folder, the same bytes as a replica's, with their length, ranges and 304.
    status, _, body = get(front, "/api/v1/snapshot/")
    assert status == 200, body
    entry = json.loads(body)["resources"]["productions"]
    path = urlsplit(entry["url"]).path
    assert entry["url"] == f"http://{host}{path}"
    status, headers, data = get(front, path)
    assert (status, hashlib.sha256(data).hexdigest()) == (200, entry["sha256"])
    assert headers["content-type"] == "application/gzip"
    assert headers["content-length"] == str(entry["bytes"])
    assert logged(nginx_folder, path)[1] == []  # no replica asked
    assert get(one, path, host=host)[2] == data
    status, _, part = get(front, path, {"Range": "bytes=100-"})
    assert (status, part) == (206, data[100:])
    assert get(front, path, {"If-None-Match": headers["etag"]})[0] == 304
    manifest = path.replace("productions.ndjson.gz", "manifest.json")
    assert get(front, manifest)[0] == 404  # a replica's answer: only the files are served

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

    # The next day's export, loaded once by the update service: both replicas serve it
    # from their next request. Answers not cached yet carry it at once; cached ones once
    # their max-age has passed (nginx then revalidates).
    assert machine.update(day_2).startswith("Loaded ")
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

    # A replica killed: nginx passes its requests to the other, and answers each as
    # before. The paths were never asked through nginx (its cache holds none of them);
    # before the kill both replicas answered each with the same body.
    failover = [
        f"/api/v1/productions/?page={page}&ordering={ordering}"
        for page in (1, 2, 3)
        for ordering in ("-id", "sortable_title", "-sortable_title")
    ]
    before = {}
    for path in failover:
        answers = [get(port, path, host=host) for port in (one, two)]
        assert answers[0][0] == 200 and answers[0][2] == answers[1][2], path
        before[path] = answers[0][2]
    killed = machine.replicas[one]
    os.kill(killed.pid, signal.SIGKILL)
    killed.wait(timeout=DEADLINE)
    for path in failover:
        status, headers, body = get(front, path)
        assert (status, headers["x-cache-status"]) == (200, "MISS"), path
        assert body == before[path], path
    entries = [logged(nginx_folder, path) for path in failover]
    # nginx tried the killed replica (on its turn), then passed the request on.
    assert ([f"127.0.0.1:{one}", f"127.0.0.1:{two}"], ["502", "200"]) in [
        (addresses, statuses) for _, addresses, statuses in entries
    ]
    for _, addresses, statuses in entries:
        assert (addresses[-1], statuses[-1]) == (f"127.0.0.1:{two}", "200")

    # Started again (what systemd's Restart=on-failure does), it serves again: once
    # nginx's fail_timeout has passed, requests go to both replicas, all answered.
    machine.start(one)
    served_by = set()
    count = 0

    def both_serve():
        nonlocal count
        count += 1
        path = f"/api/v1/platforms/?restarted={count}"
        status, headers, body = get(front, path)
        assert status == 200 and headers["x-catalogue-version"] == new_version
        _, addresses, statuses = logged(nginx_folder, path)
        assert statuses[-1] == "200"
        served_by.add(addresses[-1])
        return {f"127.0.0.1:{one}", f"127.0.0.1:{two}"} <= served_by

    # A request every 0.2 s at most: well within the limit per client (20 a second).
    deadline = FAIL_TIMEOUT + DEADLINE
    wait_for(both_serve, "both replicas answering again", [nginx], deadline, interval=0.2)

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

    # One client past its burst of 100 requests at more than 20 a second: 429 in the
    # service's error shape (nginx's limit_req, the protection README names).
    for _ in range(1000):
        status, headers, body = get(front, "/api/v1/platforms/")
        if status != 200:
            break
    assert (status, headers["retry-after"]) == (429, "1")
    assert body == b'{"detail": "Too many requests; slow down."}\n'


def test_two_machines_following_one_export_give_the_same_etags(tmp_path, processes):
    """Two machines, each loading the same export with its own update service and
    serving it with its own replica: the same records give the same version, so every
    answer about them is the same, ETag included, whichever machine gives it, and an
    ETag one machine gave is revalidated (304) by the other, as a cache in front of
    both does. (Last-Modified is each machine's own load time, and /api/v1/changes/ and
    /api/v1/status/ follow each machine's own loads: those are not compared.)"""
    ports = free_ports(2)
    for name, port in zip(("a", "b"), ports):
        machine = Machine(tmp_path / name, processes, {})
        assert machine.update(SAMPLE_EXPORT).startswith("Loaded ")
        machine.start(port)
    host = "api.example.org"
    for path in (
        "/api/v1/",
        "/api/v1/productions/?page=2",
        "/api/v1/productions/?ordering=-release_date_date&page=3",
        "/api/v1/parties/?page=last",
        "/api/v1/releasers/1/",
    ):
        a, b = (get(port, path, {"Accept-Encoding": "gzip"}, host) for port in ports)
        assert a[0] == b[0] and a[2] == b[2], path
        for name in ("etag", "x-catalogue-version", "content-type", "content-encoding"):
            assert a[1].get(name) == b[1].get(name), (path, name)
        if a[0] == 200:
            for tag, port in ((a[1]["etag"], ports[1]), (b[1]["etag"], ports[0])):
                assert get(port, path, {"If-None-Match": tag}, host)[0] == 304, path
