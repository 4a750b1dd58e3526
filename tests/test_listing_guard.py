"""Never-seen listings are found one at a time an app, in the finder process, with at
most half the threads the app was called on held for them; a client sending one
request at a time is never turned away, whether the server runs one request at a time
or many; the finder is a process of its own, under SCHED_IDLE, started again when it
stops."""

import logging
import os
import queue
import threading
from pathlib import Path

import pytest

from demoserv.listings import finder as listing_finder
from demoserv.listings import guard as listing_guard
from demoserv.listings import kept as listing_kept
from demoserv.store.reading import named_file

NEW_LISTING = "/api/v1/productions/?released_since=1994-02-03"
OTHER_NEW_LISTING = "/api/v1/productions/?released_before=1994-02-03"
THIRD_NEW_LISTING = "/api/v1/productions/?released_before=1995-02-03"
FOUND_BEFORE = "/api/v1/productions/?released_since=1993-06"
READERS = (
    "/api/v1/platforms/",
    "/api/v1/productions/",
    "/api/v1/productions/?ordering=-release_date_date&page=2",
    "/api/v1/parties/?ordering=-start_date_date",
    FOUND_BEFORE,
    FOUND_BEFORE + "&page=1",
)


def kept(app):
    return app.extensions[listing_kept.EXTENSION].keys()


class Worker:
    """One thread of a server, answering the requests it is given, one at a time."""

    def __init__(self, app):
        self.client, self.jobs = app.test_client(), queue.Queue()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while (job := self.jobs.get()) is not None:
            path, answers = job
            answers.put(self.client.get(path))

    def send(self, path):
        """A queue that gets the answer to ``path``."""
        answers = queue.Queue()
        self.jobs.put((path, answers))
        return answers

    def get(self, path):
        return self.send(path).get(timeout=60)

    def stop(self):
        self.jobs.put(None)
        self.thread.join()


@pytest.fixture
def workers(make_app, loaded_database):
    """A server's worker threads: ``workers(count)`` gives ``count`` of them over one
    app (its guard waiting long enough that a held request stays held)."""
    made = []

    def make(count):
        app = make_app(loaded_database)
        app.extensions[listing_guard.EXTENSION] = listing_guard.ListingGuard(wait_seconds=60)
        made.extend(Worker(app) for _ in range(count))
        return app, made[-count:]

    yield make
    for worker in made:
        worker.stop()


@pytest.mark.parametrize("threads", [1, 4], ids=["one-at-a-time", "threaded"])
def test_a_client_sending_one_request_at_a_time_is_never_turned_away(workers, threads):
    """A crawler following listing after listing, each never asked for before, alone on
    the server: a worker of one request at a time (gunicorn's sync workers, the Flask
    test client) or one of four threads taking its requests in turn (waitress's
    defaults)."""
    app, pool = workers(threads)
    paths = [
        f"/api/v1/productions/?released_since=1993-{month:02}&ordering={ordering}"
        for month in range(1, 6)
        for ordering in ("sortable_title", "-id", "supertype,sortable_title")
    ]
    for number, path in enumerate(paths):
        response = pool[number % threads].get(path)
        assert response.status_code == 200, (path, response.json)
    assert len(kept(app)) == len(paths)  # each one found anew


class Gate:
    """Holds every listing the finder is asked for until opened; counts them, and the
    requests handed to the app's finding thread (``handed``, released at each)."""

    def __init__(self, monkeypatch, app):
        self.held, self.opened, self.calls = threading.Event(), threading.Event(), 0
        self.handed = threading.Semaphore(0)
        guard = app.extensions[listing_guard.EXTENSION]
        executor = guard._finder()
        submit = executor.submit

        def counted_submit(*args):
            future = submit(*args)
            self.handed.release()
            return future

        monkeypatch.setattr(executor, "submit", counted_submit)
        find = listing_finder.FINDER.find

        def held_find(*args):
            self.calls += 1
            self.held.set()
            assert self.opened.wait(timeout=60)
            return find(*args)

        monkeypatch.setattr(listing_finder.FINDER, "find", held_find)


def held(app):
    return app.extensions[listing_guard.EXTENSION]._held


def test_a_threaded_worker_keeps_half_its_threads_for_readers(workers, monkeypatch):
    """Four threads (waitress's defaults): once each has asked for a new listing, two
    requests are held for new listings at most, the others are answered 503 at once,
    and readers are served while the held ones wait."""
    app, (first, second, third, fourth) = workers(4)
    assert first.get(FOUND_BEFORE).status_code == 200
    gate = Gate(monkeypatch, app)
    finding = first.send(NEW_LISTING)
    assert gate.held.wait(timeout=60)  # its listing is being found
    try:
        for worker in (second, third):  # the guard has seen two threads, then three
            busy = worker.get(OTHER_NEW_LISTING)
            assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
            assert "new listings" in busy.json["detail"].lower()
        waiting = fourth.send(NEW_LISTING)  # four threads seen: two may be held
        assert gate.handed.acquire(timeout=60) and gate.handed.acquire(timeout=60)
        busy = second.get(THIRD_NEW_LISTING)  # two held: at once
        assert busy.status_code == 503
        for path in READERS:  # pages found before and single-key listings never wait
            assert third.get(path).status_code == 200, path
        assert held(app) == 2 and finding.empty() and waiting.empty()
    finally:
        gate.opened.set()
    first_answer, second_answer = finding.get(timeout=60), waiting.get(timeout=60)
    assert first_answer.status_code == second_answer.status_code == 200
    assert first_answer.json == second_answer.json
    assert gate.calls == 1  # the waiting request found it kept
    assert second.get(OTHER_NEW_LISTING).status_code == 200  # the guard is free again


def test_a_request_whose_listing_cannot_start_in_time_is_turned_away(workers, monkeypatch):
    app, (first, *others) = workers(4)
    guard = app.extensions[listing_guard.EXTENSION]
    for place, worker in enumerate(others, 1):  # the guard has seen four threads
        assert (
            worker.get(f"/api/v1/productions/?competition_placing_min={place}").status_code == 200
        )
    gate = Gate(monkeypatch, app)
    finding = first.send(NEW_LISTING)
    assert gate.held.wait(timeout=60)
    monkeypatch.setattr(guard, "wait_seconds", 0)  # no time to wait for the finder
    try:
        busy = others[0].get(OTHER_NEW_LISTING)
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
    finally:
        gate.opened.set()
    assert finding.get(timeout=60).status_code == 200
    assert gate.calls == 1  # the request turned away never reached the finder


def test_while_the_guard_is_full_new_listings_are_refused_before_flask(app, monkeypatch, caplog):
    """Each refusal but the first of a form (its headers but the address) is the first's
    bytes, answered without Flask and counted in the log, not logged alone; what a
    refusal cannot answer is Flask's, as ever."""
    caplog.set_level(logging.INFO, logger="demoserv.access")
    guard = app.extensions[listing_guard.EXTENSION]
    client = app.test_client()
    assert client.get(FOUND_BEFORE).status_code == 200
    asked = []

    def refuse(*args):
        asked.append(args)
        raise listing_guard.Busy

    monkeypatch.setattr(guard, "admits", lambda: False)
    monkeypatch.setattr(guard, "run", refuse)
    first, second = client.get(NEW_LISTING), client.get(OTHER_NEW_LISTING)
    assert first.status_code == second.status_code == 503 and len(asked) == 1
    assert first.data == second.data and first.headers == second.headers
    logged = [r.access["query"] for r in caplog.records if hasattr(r, "access")]
    assert logged[-1] == NEW_LISTING.partition("?")[2]  # the second has no line of its own
    assert second.headers["Retry-After"] == "1" and second.headers["Vary"] == "Accept"
    indented = {"Accept": "application/json; indent=2"}  # another form: Flask's own
    assert client.get(THIRD_NEW_LISTING, headers=indented).data.startswith(b'{\n  "detail"')
    assert client.get(THIRD_NEW_LISTING + "&format=json").status_code == 503
    assert len(asked) == 3
    for path in READERS:  # pages found before and single-key listings
        assert client.get(path).status_code == 200, path
    assert client.get(NEW_LISTING, headers={"If-None-Match": '"x"'}).status_code == 503
    assert client.get("/api/v1/productions/?released_since=1993-13").status_code == 400
    record = client.get("/api/v1/productions/").json["results"][0]["id"]
    assert client.get(f"/api/v1/productions/{record}/?released_since=1994").status_code == 200
    assert len(asked) == 4  # the request with If-None-Match was Flask's


def test_the_guard_holds_half_the_threads_it_was_called_on():
    """One thread: one held; 4: two; 16 or more (a thread a request): ``queue``."""
    guard, limits, done = listing_guard.ListingGuard(queue=8), [], threading.Event()

    def request(ran):
        guard.run(pow, 2, 3)
        ran.set()
        done.wait(timeout=60)  # alive, so that no later thread takes its identity

    threads = []
    for _ in range(20):
        ran = threading.Event()
        threads.append(threading.Thread(target=request, args=(ran,)))
        threads[-1].start()
        assert ran.wait(timeout=60)
        limits.append(guard.limit)
    done.set()
    for thread in threads:
        thread.join()
    assert limits[0] == limits[1] == 1 and limits[3] == 2 and limits[-1] == 8
    assert len(guard._threads) == 16  # no more are counted


def test_while_others_wait_the_finder_works_a_tenth_of_the_time():
    """After a listing that took t, one that others waited for starts 9t later; one
    alone starts at once, however soon after the last."""
    now, rests = [100.0], []

    def rest(seconds):
        rests.append(round(seconds, 6))
        now[0] += seconds

    guard = listing_guard.ListingGuard(share=0.1, clock=lambda: now[0], sleep=rest)

    def find(seconds):
        now[0] += seconds
        return seconds

    assert (guard.run(find, 0.02), guard.run(find, 0.03)) == (0.02, 0.03)
    assert rests == []  # alone: at once
    guard._held = 2  # as on the finding thread while another request waits
    guard._paced(find, 0.02)
    guard._paced(find, 0.05)
    assert rests == [0.27, 0.18]  # 9 × 0.03, then 9 × 0.02
    now[0] += 1.0
    guard._paced(find, 0.01)  # the rest is over by then
    assert rests == [0.27, 0.18]


def test_the_guard_gives_back_results_and_errors_and_frees_its_queue():
    guard = listing_guard.ListingGuard(queue=1)
    assert guard.run(pow, 2, 10) == 1024
    with pytest.raises(ZeroDivisionError):
        guard.run(divmod, 1, 0)
    assert guard.run(pow, 3, 2) == 9  # the queue of one is free after an error


def test_new_listings_are_found_one_at_a_time_on_one_thread(monkeypatch):
    guard = listing_guard.ListingGuard()
    ident = guard.run(threading.get_ident)
    assert ident != threading.get_ident() and guard.run(threading.get_ident) == ident
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as in a process forked since
    assert guard.run(threading.get_ident) != ident


def test_each_app_has_its_own_guard(make_app, loaded_database):
    first, second = make_app(loaded_database), make_app(loaded_database)
    extension = listing_guard.EXTENSION
    assert first.extensions[extension] is not second.extensions[extension]


def finder_pid():
    return listing_finder.FINDER._process.pid


def test_listings_are_found_in_a_process_that_yields_to_any_other(client):
    """So that finding one never holds the server's interpreter, and any thread of the
    machine that wants the processor takes it from the finder at once."""
    assert client.get(NEW_LISTING).status_code == 200
    pid = finder_pid()
    assert pid != os.getpid()
    assert os.sched_getscheduler(pid) == os.SCHED_IDLE


def test_a_finder_that_stopped_is_started_again(client):
    assert client.get(NEW_LISTING).status_code == 200
    stopped = finder_pid()
    os.kill(stopped, 9)
    assert client.get(OTHER_NEW_LISTING).status_code == 200
    assert finder_pid() != stopped


def test_a_file_replaced_before_the_finder_read_it_is_a_503(loaded_database):
    """The request read another version of the file than the path now names: its
    listing is not found in the new one, and the client is asked to try again."""
    with pytest.raises(listing_finder.Replaced) as replaced:
        listing_finder.FINDER.find(loaded_database, ("another", "version"), "productions", (), ())
    assert replaced.value.status == 503 and replaced.value.headers == {"Retry-After": "1"}


def test_what_fails_in_the_finder_is_the_requests_error_with_its_traceback(loaded_database):
    file_id = named_file(loaded_database)
    with pytest.raises(RuntimeError, match="KeyError: 'no-such-resource'"):
        listing_finder.FINDER.find(loaded_database, file_id, "no-such-resource", (), ())
    found = listing_finder.FINDER.find(loaded_database, file_id, "bbses", (("name", False),), ())
    assert len(found) > 0  # the finder goes on


def test_a_process_forked_since_starts_its_own_finder(client, monkeypatch):
    assert client.get(NEW_LISTING).status_code == 200
    parents = listing_finder.FINDER._process
    monkeypatch.setattr(os, "getpid", lambda: -1)
    assert client.get(OTHER_NEW_LISTING).status_code == 200
    assert finder_pid() != parents.pid
    # Here the parent's finder is this process's child: its end closed, it stops.
    assert parents.wait(timeout=60) == 0
    listing_finder.FINDER.stop()  # the "forked" process's, while it is that process


def test_the_finder_imports_the_servers_own_package(client, monkeypatch, tmp_path):
    """Whatever folder the server runs in (gunicorn's --chdir to a checkout of other
    code, say), the finder runs this package's code: its folder first on the path."""
    monkeypatch.chdir(tmp_path)
    listing_finder.FINDER.stop()
    assert client.get(NEW_LISTING).status_code == 200
    environ = Path(f"/proc/{finder_pid()}/environ").read_bytes().split(b"\0")
    path = next(v for v in environ if v.startswith(b"PYTHONPATH=")).split(b"=", 1)[1]
    assert path.decode().split(os.pathsep)[0] == str(listing_finder.PACKAGE_ROOT)
    assert (listing_finder.PACKAGE_ROOT / "demoserv" / "listings" / "finder.py").exists()
