"""Never-seen listings are found one at a time an app, on a thread of lower priority,
with at most ``QUEUE`` requests held for them; a client sending one request at a time is
never turned away, whether the server runs one request at a time or many."""

import os
import threading

import pytest

from demoserv.listings import columns as listing_columns
from demoserv.listings import guard as listing_guard
from demoserv.listings import kept as listing_kept

NEW_LISTING = "/api/v1/productions/?released_since=1994-02-03"
OTHER_NEW_LISTING = "/api/v1/productions/?released_before=1994-02-03"
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


@pytest.mark.parametrize("multithread", [False, True], ids=["one-at-a-time", "threaded"])
def test_a_client_sending_one_request_at_a_time_is_never_turned_away(
    make_app, loaded_database, multithread
):
    """A crawler following listing after listing, each never asked for before, alone on
    the server: a worker of one request at a time (gunicorn's sync workers, the Flask
    test client) or a threaded one."""
    app = make_app(loaded_database)
    client = app.test_client()
    paths = [
        f"/api/v1/productions/?released_since=1993-{month:02}&ordering={ordering}"
        for month in range(1, 6)
        for ordering in ("sortable_title", "-id", "supertype,sortable_title")
    ]
    for path in paths:
        response = client.get(path, environ_overrides={"wsgi.multithread": multithread})
        assert response.status_code == 200, (path, response.json)
    assert len(kept(app)) == len(paths)  # each one found anew


class Gate:
    """Holds every listing found in ``Columns.order`` until opened; says when one is
    held and when a request's listing has been handed to the finding thread."""

    def __init__(self, monkeypatch, guard):
        self.held, self.opened, self.submitted = threading.Event(), threading.Event(), []
        self.handed = threading.Semaphore(0)  # released at each listing handed over
        self.calls = 0
        order = listing_columns.Columns.order

        def held_order(columns, *args):
            self.calls += 1
            self.held.set()
            assert self.opened.wait(timeout=30)
            return order(columns, *args)

        monkeypatch.setattr(listing_columns.Columns, "order", held_order)
        finder = guard._finder

        def counted_finder():
            executor = finder()
            submit = executor.submit

            def counted_submit(*args):
                future = submit(*args)
                self.submitted.append(future)
                self.handed.release()
                return future

            executor.submit = counted_submit
            return executor

        monkeypatch.setattr(guard, "_finder", counted_finder)


def in_thread(app, path):
    answers = []
    thread = threading.Thread(target=lambda: answers.append(app.test_client().get(path)))
    thread.start()
    return thread, answers


def test_a_threaded_worker_queues_new_listings_and_serves_readers_meanwhile(
    make_app, loaded_database, monkeypatch
):
    app = make_app(loaded_database)
    guard = app.extensions[listing_guard.EXTENSION] = listing_guard.ListingGuard(queue=2)
    client = app.test_client()
    assert client.get(FOUND_BEFORE).status_code == 200
    gate = Gate(monkeypatch, guard)

    first, first_answers = in_thread(app, NEW_LISTING)
    assert gate.held.wait(timeout=30)  # its listing is being found
    second, second_answers = in_thread(app, NEW_LISTING)  # the same: it waits
    try:
        for path in READERS:  # pages found before and single-key listings never wait
            assert client.get(path).status_code == 200, path
        assert gate.handed.acquire(timeout=30) and gate.handed.acquire(timeout=30)
        assert second.is_alive()  # in the queue
        busy = client.get(OTHER_NEW_LISTING)  # the queue of 2 is full: at once
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
        assert "new listings" in busy.json["detail"].lower()
    finally:
        gate.opened.set()
        first.join()
        second.join()
    [first_answer], [second_answer] = first_answers, second_answers
    assert first_answer.status_code == second_answer.status_code == 200
    assert first_answer.json == second_answer.json
    assert gate.calls == 1  # the waiting request found it kept
    assert client.get(OTHER_NEW_LISTING).status_code == 200  # the queue is free again


def test_a_request_whose_listing_cannot_start_in_time_is_turned_away(
    make_app, loaded_database, monkeypatch
):
    app = make_app(loaded_database)
    guard = app.extensions[listing_guard.EXTENSION]
    client = app.test_client()
    gate = Gate(monkeypatch, guard)
    first, first_answers = in_thread(app, NEW_LISTING)
    assert gate.held.wait(timeout=30)
    monkeypatch.setattr(guard, "wait_seconds", 0)  # no time to wait for the finder
    try:
        busy = client.get(OTHER_NEW_LISTING)
        assert busy.status_code == 503 and busy.headers["Retry-After"] == "1"
        assert gate.submitted[1].cancelled()  # never started
    finally:
        gate.opened.set()
        first.join()
    assert first_answers[0].status_code == 200
    assert gate.calls == 1


def test_the_guard_gives_back_results_and_errors_and_frees_its_queue():
    guard = listing_guard.ListingGuard(queue=1)
    assert guard.run(pow, 2, 10) == 1024
    with pytest.raises(ZeroDivisionError):
        guard.run(divmod, 1, 0)
    assert guard.run(pow, 3, 2) == 9  # the queue of one is free after an error


def test_new_listings_are_found_on_one_thread_that_yields_to_any_other(monkeypatch):
    """So that the threads serving pages already found take a core from it at once."""
    guard = listing_guard.ListingGuard()

    def where():
        thread = threading.current_thread()
        return thread.name, thread.ident, os.sched_getscheduler(thread.native_id)

    name, ident, policy = guard.run(where)
    assert name.startswith("demoserv-finder") and ident != threading.get_ident()
    assert policy == os.SCHED_IDLE
    assert os.sched_getscheduler(threading.get_native_id()) == os.SCHED_OTHER  # the caller's
    assert guard.run(where)[1] == ident  # one thread
    monkeypatch.setattr(os, "getpid", lambda: -1)  # as in a process forked since
    assert guard.run(where)[1] != ident


def test_each_app_has_its_own_guard(make_app, loaded_database):
    first, second = make_app(loaded_database), make_app(loaded_database)
    extension = listing_guard.EXTENSION
    assert first.extensions[extension] is not second.extensions[extension]
