"""New listings are found one at a time, and what waits for that turn is bounded by what
the server can afford: with N threads, at most N // 2 - 1 requests wait; where the
thread count is unknown, or the server runs one request at a time, none does (a quick
503 instead). Readers of single-key listings and of listings found before never wait."""

import json
import logging
import os
import subprocess
import sys
import threading

import pytest

from demoserv import access_log, create_app, listing, serving
from demoserv.catalogue.sources import load_catalogue

NEW_LISTING = "/api/v1/productions/?released_since=1994-02-03"
FOUND_BEFORE = "/api/v1/productions/?released_since=1993-06"
READERS = (
    "/api/v1/platforms/",
    "/api/v1/productions/",
    "/api/v1/productions/?ordering=-release_date_date&page=2",
    "/api/v1/parties/?ordering=-start_date_date",
)


class TakenTurn:
    """The turn, held by another request: it is never free, and every attempt to wait
    for it is recorded (the timeout it would wait)."""

    def __init__(self):
        self.waits = []

    def acquire(self, blocking=True, timeout=-1):
        if blocking:
            self.waits.append(timeout)
        return False

    def release(self):
        raise AssertionError("a request gave back a turn it did not hold")


def under_attack(app, monkeypatch, waiting):
    """The app's turn taken by an attacker's new listing, ``waiting`` others waiting."""
    turns = app.extensions["demoserv.turns"]
    taken = TakenTurn()
    monkeypatch.setattr(turns, "_turn", taken)
    monkeypatch.setattr(turns, "_waiting", waiting)
    return taken


def test_how_many_may_wait_depends_on_the_server():
    assert listing.Turns(16).waiters() == 7  # demoserv-serve: 8 threads stay free
    assert listing.Turns(4).waiters() == 1  # waitress's default
    assert listing.Turns(2).waiters() == listing.Turns(1).waiters() == 0
    assert listing.Turns(None).waiters() == 0  # unknown: none
    assert listing.Turns(16).waiters(multithread=False) == 0  # one request at a time


@pytest.mark.parametrize("threads", [4, 16])
def test_with_n_threads_and_the_attack_readers_are_served_without_waiting(
    make_app, loaded_database, monkeypatch, threads
):
    app = make_app(loaded_database, SERVER_THREADS=threads)
    client = app.test_client()
    assert client.get(FOUND_BEFORE).status_code == 200
    waiters = threads // 2 - 1
    taken = under_attack(app, monkeypatch, waiting=waiters)  # as many as may wait
    for path in (*READERS, FOUND_BEFORE, FOUND_BEFORE + "&page=1"):
        assert client.get(path).status_code == 200, path
    assert taken.waits == []  # no reader waited for the turn
    busy = client.get(NEW_LISTING)  # one more would wait: it is answered at once
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
    assert "new listings" in busy.json["detail"].lower()
    assert taken.waits == []
    # With room in the queue, a new listing waits its turn (and here, never given it,
    # gets 503 after WAIT_SECONDS).
    app.extensions["demoserv.turns"]._waiting = waiters - 1
    assert client.get(NEW_LISTING).status_code == 503
    assert taken.waits == [listing.WAIT_SECONDS]


@pytest.mark.parametrize(
    "threads, multithread",
    [(16, False), (None, False), (None, True)],
    ids=["one-at-a-time-worker", "one-at-a-time-unknown", "threads-unknown"],
)
def test_a_new_listing_never_holds_a_thread_where_the_server_cannot_afford_it(
    make_app, loaded_database, monkeypatch, threads, multithread
):
    """A sync worker (``wsgi.multithread`` false) would stop serving anyone while a
    request waited; with threads unknown, waiting ones might hold them all."""
    app = make_app(loaded_database, threaded=False, SERVER_THREADS=threads)
    client = app.test_client()
    assert client.get(FOUND_BEFORE, multithread=multithread).status_code == 200
    taken = under_attack(app, monkeypatch, waiting=0)
    busy = client.get(NEW_LISTING, multithread=multithread)
    assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
    assert taken.waits == []
    for path in (*READERS, FOUND_BEFORE, FOUND_BEFORE + "&page=1"):
        assert client.get(path, multithread=multithread).status_code == 200, path


def test_the_turn_is_given_back(client, app):
    for day in range(1, 6):
        assert client.get(f"/api/v1/productions/?released_since=1993-01-0{day}").status_code == 200
    turn = app.extensions["demoserv.turns"]._turn
    assert turn.acquire(blocking=False)
    turn.release()


@pytest.mark.parametrize("threads", ["many", 0, -4, True, 2.5])
def test_server_threads_must_be_a_number_of_threads(make_app, loaded_database, threads):
    with pytest.raises(ValueError, match="SERVER_THREADS.* is .*: expected a .*number"):
        make_app(loaded_database, SERVER_THREADS=threads)


def test_server_threads_from_the_environment(loaded_database, monkeypatch):
    monkeypatch.setenv("DEMOSERV_DATABASE", str(loaded_database))
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    monkeypatch.setenv("DEMOSERV_SERVER_THREADS", "16")
    assert create_app().extensions["demoserv.turns"].waiters() == 7


def test_each_app_has_its_own_turns(make_app, loaded_database):
    first, second = make_app(loaded_database), make_app(loaded_database)
    assert first.extensions["demoserv.turns"] is not second.extensions["demoserv.turns"]


def test_demoserv_serve_tells_the_app_its_threads(app, monkeypatch):
    class Server:
        effective_listen = [("127.0.0.1", 8080)]

        def run(self):
            pass

    assert app.extensions["demoserv.turns"].waiters() == 0  # no SERVER_THREADS
    monkeypatch.setattr("demoserv.serving_app", lambda replace: app)
    monkeypatch.setattr(serving, "make_server", lambda app, **settings: Server())
    with pytest.raises(SystemExit, match="0"):
        serving.main(["--threads=6"])
    assert app.extensions["demoserv.turns"].waiters() == 2
    with pytest.raises(SystemExit, match="0"):
        serving.main([])
    assert app.extensions["demoserv.turns"].waiters() == serving.DEFAULTS["threads"] // 2 - 1


class Clock:
    """A clock of the test's own; ``sleep`` moves it on, and is recorded."""

    def __init__(self):
        self.now, self.slept = 100.0, []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


REST = 1 / listing.LISTING_SHARE - 1  # a turn that took t is followed by a rest of REST × t


def test_while_others_wait_finding_new_listings_takes_at_most_its_share_of_the_time():
    """After a turn that took t while others waited for theirs, the next one starts
    t × REST later at the soonest; with nobody waiting, at once."""
    clock = Clock()
    turns = listing.Turns(16, clock=clock, sleep=clock.sleep)
    with turns.turn():
        clock.now += 0.2  # finding a listing took 0.2 s, nobody waiting
    with turns.turn():
        clock.now += 0.2
        turns._waiting = 1  # another request queued meanwhile
    assert clock.slept == []
    clock.now += 0.05  # the next turn comes 0.05 s later
    with turns.turn():
        clock.now += 0.1
        turns._waiting = 1
    assert clock.slept == [pytest.approx(0.2 * REST - 0.05)]
    clock.now += 0.1 * REST + 0.01  # after the rest that turn earned: no wait
    with turns.turn():
        turns._waiting = 1
    assert len(clock.slept) == 1
    with pytest.raises(ZeroDivisionError), turns.turn():  # a turn that failed counts too
        clock.now += 0.3
        turns._waiting = 1
        1 / 0
    with turns.turn():
        turns._waiting = 0
    assert clock.slept[-1] == pytest.approx(0.3 * REST)
    with turns.turn():  # the last turn had nobody waiting
        pass
    assert len(clock.slept) == 2


def test_where_none_may_wait_the_rest_is_a_503_not_a_held_thread():
    """Threads unknown: a request turned away during a turn earns that turn its rest,
    and a new listing asked for during the rest is a 503 at once (nothing sleeps)."""
    clock = Clock()
    turns = listing.Turns(None, clock=clock, sleep=clock.sleep)
    with turns.turn():
        clock.now += 0.2  # alone: no rest
    with turns.turn():
        clock.now += 0.2
        with pytest.raises(listing.Busy):  # another request, turned away
            turns.turn().__enter__()
    clock.now += 0.2 * REST - 0.01
    with pytest.raises(listing.Busy):  # during the rest
        turns.turn().__enter__()
    clock.now += 0.02
    with turns.turn():  # turned away during the rest: this turn earns one too
        clock.now += 0.1
    with pytest.raises(listing.Busy):
        turns.turn().__enter__()
    clock.now += 0.1 * REST + 0.01
    with turns.turn():
        pass
    assert clock.slept == []
    turn = turns._turn
    assert turn.acquire(blocking=False)  # given back after every 503
    turn.release()


ONE_AT_A_TIME_REST = 1 / listing.ONE_AT_A_TIME_SHARE - 1


def test_in_a_server_of_one_request_at_a_time_every_turn_earns_its_rest():
    """Its other clients wait outside the process, unseen: the rest follows every
    turn, longer than in a threaded server (a turn stops the whole worker), and a new
    listing asked for during it is a 503 at once."""
    assert ONE_AT_A_TIME_REST > REST
    clock = Clock()
    turns = listing.Turns(16, clock=clock, sleep=clock.sleep)
    with turns.turn(multithread=False):
        clock.now += 0.2
    clock.now += 0.2 * ONE_AT_A_TIME_REST - 0.01
    with pytest.raises(listing.Busy):
        turns.turn(multithread=False).__enter__()
    clock.now += 0.02
    with turns.turn(multithread=False):
        pass
    assert clock.slept == []


HOLD_THE_TURN = """
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT)
fcntl.flock(fd, fcntl.LOCK_EX)
print("held", flush=True)
sys.stdin.readline()
"""


def test_one_listing_is_found_at_a_time_across_the_server_processes(tmp_path):
    """gunicorn's workers each have their app: while one finds a listing, a new listing
    in another is a 503 at once where requests may not wait (a sync worker), and waits
    at most WAIT_SECONDS where they may; the rest a turn earns is kept across them."""
    clock = Clock()
    database = tmp_path / "catalogue.sqlite3"

    def worker(sleep=clock.sleep):
        server = listing.ServerTurn(f"{database}{listing.TURN_SUFFIX}")
        return listing.Turns(16, clock=clock, sleep=sleep, server=server)

    first, second = worker(), worker()
    began = clock.now
    with first.turn(multithread=False):
        with pytest.raises(listing.Busy):  # a sync worker: at once
            second.turn(multithread=False).__enter__()
        assert clock.slept == []
        with pytest.raises(listing.Busy):  # a threaded one: after waiting its time
            second.turn().__enter__()
        assert sum(clock.slept) == pytest.approx(listing.WAIT_SECONDS, abs=listing.SERVER_TURN_POLL)
        assert set(clock.slept) == {listing.SERVER_TURN_POLL}
        clock.now += 0.2
    took = clock.now - began
    clock.slept.clear()
    with pytest.raises(listing.Busy):  # the rest that first's turn earned, in second
        second.turn(multithread=False).__enter__()
    clock.now += took * ONE_AT_A_TIME_REST + 0.01
    with second.turn(multithread=False):
        pass
    assert clock.slept == []
    assert second._turn.acquire(blocking=False)  # given back after the 503s
    second._turn.release()

    # A threaded worker waiting for the turn gets it once the other gives it back.
    holding = first.turn(multithread=False)
    holding.__enter__()

    def other_ends(seconds):
        clock.sleep(seconds)
        if len(clock.slept) == 3:
            holding.__exit__(None, None, None)

    waiting = worker(sleep=other_ends)
    with waiting.turn():  # after three asks, and the rest the other's turn earned
        pass
    assert clock.slept[:3] == [listing.SERVER_TURN_POLL] * 3 and len(clock.slept) == 4

    # Another process holding the turn (an exclusive lock on the file beside the
    # database, as a worker finding a listing holds it).
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_TURN, f"{database}{listing.TURN_SUFFIX}"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        assert process.stdout.readline() == "held\n"
        with pytest.raises(listing.Busy):
            first.turn(multithread=False).__enter__()
        process.stdin.write("\n")
        process.stdin.flush()
        assert process.wait(timeout=30) == 0
    with first.turn(multithread=False):  # the other process has ended: the turn is free
        pass


def test_without_a_folder_to_share_the_turn_in_each_process_has_its_own(tmp_path, caplog):
    clock = Clock()
    server = listing.ServerTurn(tmp_path / "missing" / "catalogue.sqlite3.turn")
    turns = listing.Turns(16, clock=clock, sleep=clock.sleep, server=server)
    with turns.turn(multithread=False):
        clock.now += 0.2
    assert caplog.text.count("one at a time a process") == 1
    with pytest.raises(listing.Busy):  # the rest is kept in the process
        turns.turn(multithread=False).__enter__()
    clock.now += 0.2 * ONE_AT_A_TIME_REST + 0.01
    with turns.turn(multithread=False):
        pass
    assert caplog.text.count("one at a time a process") == 1  # said once


def test_the_app_shares_its_turn_beside_the_served_file_made_at_the_first_turn(
    make_app, catalogue_dir, tmp_path
):
    database = tmp_path / "catalogue.sqlite3"
    load_catalogue(catalogue_dir, database)
    app = make_app(database)
    turn_file = tmp_path / f"catalogue.sqlite3{listing.TURN_SUFFIX}"
    assert app.extensions["demoserv.turns"]._server.path == str(turn_file)
    client = app.test_client()
    assert client.get("/api/v1/platforms/").status_code == 200
    assert not turn_file.exists()  # nothing asked for a turn yet
    assert client.get(NEW_LISTING).status_code == 200
    assert turn_file.exists()


def test_under_waitress_the_app_learns_its_threads_from_the_server(
    make_app, loaded_database, monkeypatch
):
    """waitress-serve cannot tell the app its threads, but names them: with its default
    4, one request may wait for a turn (with none known, none may)."""
    app = make_app(loaded_database)
    turns = app.extensions["demoserv.turns"]
    assert turns.threads is None
    release = threading.Event()
    others = [
        threading.Thread(target=release.wait, name=f"waitress-{number}") for number in (1, 2, 3)
    ]
    answers = []

    def request():
        answers.append(app.test_client().get(NEW_LISTING, multithread=True).status_code)

    for other in others:
        other.start()
    try:
        served = threading.Thread(target=request, name="waitress-0")
        served.start()
        served.join()
    finally:
        release.set()
        for other in others:
            other.join()
    assert answers == [200]
    assert turns.threads == 4 and turns.waiters() == 1
    outside = make_app(loaded_database)  # not on a waitress thread: still unknown
    assert outside.test_client().get(NEW_LISTING, multithread=True).status_code == 200
    assert outside.extensions["demoserv.turns"].threads is None


def test_requests_turned_away_are_logged_at_most_one_a_second(
    make_app, loaded_database, monkeypatch, caplog
):
    """A client sending new listings without pause would fill the log: of the requests
    turned away, one a second is logged, and the next line says how many were not."""
    monkeypatch.setattr(access_log, "TURNED_AWAY_EVERY", 3600.0)  # all within one "second"
    caplog.set_level(logging.INFO, logger="demoserv.access")
    app = make_app(loaded_database)
    client = app.test_client()
    under_attack(app, monkeypatch, waiting=0)
    for day in range(1, 6):
        assert client.get(f"{NEW_LISTING}&title=x{day}").status_code == 503
    assert client.get("/api/v1/platforms/").status_code == 200
    assert client.get("/api/v1/platforms/").status_code == 200
    lines = [json.loads(r.getMessage()) for r in caplog.records if r.name == "demoserv.access"]
    assert [(line["status"], line.get("turned_away")) for line in lines] == [
        (503, None),
        (200, 4),
        (200, None),
    ]
    assert lines[0]["query"].endswith("title=x1")


def test_the_first_request_turned_away_after_a_quiet_second_is_logged():
    clock = Clock()
    left_out = access_log._LeftOut(clock)
    assert left_out.take(turned_away=True) == 0
    assert left_out.take(turned_away=True) is None
    clock.now += access_log.TURNED_AWAY_EVERY / 2
    assert left_out.take(turned_away=True) is None
    assert left_out.take(turned_away=False) == 2  # any request's line counts them
    clock.now += access_log.TURNED_AWAY_EVERY / 2
    assert left_out.take(turned_away=True) == 0
    assert left_out.take(turned_away=True) is None


def test_new_listings_are_found_on_a_thread_of_lower_cpu_priority(
    make_app, loaded_database, monkeypatch
):
    """So that the threads serving pages already found take a core from it at once."""
    seen = []
    order = listing.Columns.order

    def spied(self, *args):
        thread = threading.current_thread()
        seen.append((thread.name, os.getpriority(os.PRIO_PROCESS, thread.native_id)))
        return order(self, *args)

    monkeypatch.setattr(listing.Columns, "order", spied)
    client = make_app(loaded_database).test_client()
    assert client.get(NEW_LISTING).status_code == 200
    own = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    [(name, nice)] = seen
    assert name.startswith("demoserv-finder")
    assert nice == min(19, own + listing.FINDER_NICE)
    assert client.get(NEW_LISTING + "&page=1").status_code == 200  # found before: kept
    assert len(seen) == 1
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == own


def test_the_finder_gives_back_results_and_errors_and_is_made_anew_after_a_fork(monkeypatch):
    finder = listing.Finder()
    assert finder.run(pow, 2, 10) == 1024
    with pytest.raises(ZeroDivisionError):
        finder.run(divmod, 1, 0)
    first = finder.run(threading.get_ident)
    assert first != threading.get_ident() and finder.run(threading.get_ident) == first
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as in a process forked since
    assert finder.run(threading.get_ident) != first
