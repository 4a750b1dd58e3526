"""The guard of never-seen listings: finding one takes a core for milliseconds to a few
hundred, so each app finds one at a time, through a thread of its own that hands it to
the finder process (``finder``), and holds at most half the threads it has been called
on (at most ``QUEUE``, at least one) for new listings at once: one being found, the
others waiting for it, each at most ``WAIT_SECONDS`` before its own starts; while others
wait, the finder works at most ``SHARE`` of the time. A request past that, or one that
waited its time, is answered 503 with ``Retry-After``; while the guard holds all it may,
``web/admission.py`` answers that before Flask (``admits``).

A server's threads are its own business: the guard only counts those that requests
reaching it came on, so that under a server of few threads (waitress's default 4) held
requests never take them all from readers, and under one of many (``demoserv serve``'s
16) clients flooding new listings are held at the pace of listings found rather than
answered at once, again and again. It shares nothing between processes, so a client
that sends one request at a time always finds the guard empty and is never turned away,
under any server.

Pages of listings found before (``kept``) never come here."""

import concurrent.futures
import os
import threading
import time

from ..api.error import APIError

QUEUE = 8  # the most requests held for new listings at once: half of 16 threads
WAIT_SECONDS = 2.0  # the longest a request waits for its new listing to be started
# While other requests wait for it, the finder works at most this share of the time.
# Even at SCHED_IDLE, a process sorting tens of megabytes slows the other core's threads
# (memory and caches are shared): beside a finder never resting, a reader's p99 was 5
# to 6 times its idle p99 at full size; with a tenth of the time, within 1.2 times.
SHARE = 0.1
EXTENSION = "demoserv.listings.guard"


class Busy(APIError):
    """New listings are being found for other requests; retry in a second."""

    def __init__(self):
        super().__init__(
            503,
            "New listings are being found for other clients; try again in a second.",
            {"Retry-After": "1"},
        )


class ListingGuard:
    """One new listing found at a time (a one-thread executor), with at most half the
    threads requests came on (at most ``queue``, at least one) held at once, each
    waiting at most ``wait_seconds`` for its listing to start, and while others wait,
    the finding at most ``share`` of the time (of ``clock``, resting with ``sleep``)."""

    def __init__(
        self,
        queue=QUEUE,
        wait_seconds=WAIT_SECONDS,
        share=SHARE,
        clock=time.monotonic,
        sleep=time.sleep,
    ):
        self.queue, self.wait_seconds, self.share = queue, wait_seconds, share
        self._clock, self._sleep = clock, sleep
        self._threads = set()  # those requests came on, up to twice the queue
        self._held = 0
        self._rested = 0.0  # when the finding thread may start a listing others waited for
        self._executor, self._pid = None, None
        self._lock = threading.Lock()

    @property
    def limit(self):
        """How many requests may be held now."""
        return max(1, min(self.queue, len(self._threads) // 2))

    def admits(self):
        """Whether a request for a new listing, on this thread, would be held now rather
        than turned away (what the next request finds may differ)."""
        with self._lock:
            self._count_thread()
            return self._held < self.limit

    def run(self, function, *args):
        """``function(*args)`` on the finding thread: its result, or its exception;
        Busy if the guard holds its limit or the listing could not start in time."""
        with self._lock:
            self._count_thread()
            if self._held >= self.limit:
                raise Busy
            self._held += 1
        try:
            future = self._finder().submit(self._paced, function, *args)
            try:
                return future.result(timeout=self.wait_seconds)
            except concurrent.futures.TimeoutError:
                if future.cancel():  # still waiting: it never starts
                    raise Busy from None
                return future.result()  # started in time: it is worth its result
        finally:
            with self._lock:
                self._held -= 1

    def _paced(self, function, *args):
        """``function(*args)``, on the finding thread: while other requests wait, it
        starts no sooner than the last listing's time × (1 / share - 1) after it, so
        that the finder works at most ``share`` of the time; a request alone, never
        waited for, starts at once."""
        if self._held > 1:
            rest = self._rested - self._clock()
            if rest > 0:
                self._sleep(rest)  # the requests queued behind wait, each within its own time
        started = self._clock()
        try:
            return function(*args)
        finally:
            ended = self._clock()
            self._rested = ended + (ended - started) * (1 / self.share - 1)

    def _count_thread(self):
        if len(self._threads) < 2 * self.queue:
            self._threads.add(threading.get_ident())

    def _finder(self):
        """The executor of this process: one made before a fork has no thread in it."""
        with self._lock:
            if self._pid != os.getpid():
                self._executor = concurrent.futures.ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="demoserv-finder"
                )
                self._pid = os.getpid()
            return self._executor


def init_app(app):
    app.extensions[EXTENSION] = ListingGuard()
