"""The guard of never-seen listings: finding one takes a core for milliseconds to a few
hundred, so each app finds one at a time, on a thread of its own that yields the
processor to any other, and holds at most ``QUEUE`` requests for new listings at once
(one being found, the others waiting for it, each at most ``WAIT_SECONDS`` before its
own starts). A request past the queue, or one that waited its time, is answered 503
with ``Retry-After``. A bounded executor and nothing else: it knows nothing of the server,
and shares nothing between processes, so a client that sends one request at a time
always finds the queue empty and is never turned away, under any server.

Pages of listings found before (``listing_cache``) never come here."""

import concurrent.futures
import logging
import os
import threading

from ..api.error import APIError

QUEUE = 8  # new listings held at once: half of demoserv-serve's 16 threads stay free
WAIT_SECONDS = 2.0  # the longest a request waits for its new listing to be started
EXTENSION = "demoserv.listings.guard"

log = logging.getLogger(__name__)


class Busy(APIError):
    """New listings are being found for other requests; retry in a second."""

    def __init__(self):
        super().__init__(
            503,
            "New listings are being found for other clients; try again in a second.",
            {"Retry-After": "1"},
        )


class ListingGuard:
    """One new listing found at a time (a one-thread executor), at most ``queue``
    requests held, each waiting at most ``wait_seconds`` for its listing to start."""

    def __init__(self, queue=QUEUE, wait_seconds=WAIT_SECONDS):
        self.wait_seconds = wait_seconds
        self._held = threading.BoundedSemaphore(queue)
        self._executor, self._pid = None, None
        self._lock = threading.Lock()

    def run(self, function, *args):
        """``function(*args)`` on the finding thread: its result, or its exception;
        Busy if the queue is full or the listing could not start in time."""
        if not self._held.acquire(blocking=False):
            raise Busy
        try:
            future = self._finder().submit(function, *args)
            try:
                return future.result(timeout=self.wait_seconds)
            except concurrent.futures.TimeoutError:
                if future.cancel():  # still waiting: it never starts
                    raise Busy from None
                return future.result()  # started in time: it is worth its result
        finally:
            self._held.release()

    def _finder(self):
        """The executor of this process: one made before a fork has no thread in it."""
        with self._lock:
            if self._pid != os.getpid():
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="demoserv-finder", initializer=_idle
                )
                self._pid = os.getpid()
            return self._executor


def _idle():
    """The calling thread under Linux's SCHED_IDLE policy: any other thread that wakes
    up takes the processor from it at once."""
    try:
        os.sched_setscheduler(threading.get_native_id(), os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError) as error:  # not Linux: the process's own priority
        log.warning("new listings are found at the server's CPU priority: %s", error)


def init_app(app):
    app.extensions[EXTENSION] = ListingGuard()
