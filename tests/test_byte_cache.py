"""The one cache (demoserv/byte_cache.py): its segments, its budget, the order in which
values go, a new served file, and threads sharing it. Its uses are tested with them:
answers in tests/test_answer_cache.py, listings in tests/test_db.py, the OpenAPI
document and the status page in tests/test_openapi.py."""

import threading

from demoserv.byte_cache import PROTECTED_SHARE, ByteCache

FILE = ("dev", "inode", "size", "mtime")


def _cache(budget=100_000):
    cache = ByteCache(budget)
    cache.find(("warm",), FILE)  # the cache's file is FILE from now on
    return cache


def test_a_value_asked_for_again_is_protected_and_kept_in_eviction_order():
    cache = _cache(10_000)
    for name in "abcd":
        cache.keep(name, name.upper(), 1000, FILE)
    assert cache.find("b", FILE) == "B"  # asked for again: protected
    assert cache.peek("c", FILE) == "C"  # looked at, not a use: still on probation
    assert cache.keys() == ["a", "c", "d", "b"]
    assert cache.find("a", FILE) == "A"
    assert cache.keys() == ["c", "d", "b", "a"]
    assert cache.find("b", FILE) == "B"  # the most recently used protected goes last
    assert cache.keys() == ["c", "d", "a", "b"]
    assert cache.find("nothing", FILE) is None and len(cache) == 4
    assert cache.kept_bytes == 4000


def test_the_budget_bounds_what_is_kept():
    cache = _cache()
    for number in range(500):
        cache.keep((number,), number, 3000, FILE)
        cache.find((number,), FILE)  # asked for twice: protected
        assert cache.kept_bytes <= 100_000
    assert len(cache) == 100_000 // 3000  # a full budget
    assert cache.find((499,), FILE) is not None
    assert cache.find((0,), FILE) is None


def test_a_value_over_probations_share_is_not_kept():
    cache = _cache()
    cache.keep(("large",), "large", int(100_000 * (1 - PROTECTED_SHARE)) + 1, FILE)
    assert len(cache) == 0 and cache.kept_bytes == 0
    cache.keep(("fits",), "fits", int(100_000 * (1 - PROTECTED_SHARE)), FILE)
    assert cache.keys() == [("fits",)]


def test_no_budget_keeps_nothing():
    cache = _cache(0)
    cache.keep(("one",), "x", 1, FILE)
    assert len(cache) == 0 and cache.find(("one",), FILE) is None


def test_new_keys_never_push_out_values_asked_for_again():
    """A stranger sending ever new addresses (or never-seen listings) evicts only values
    asked for once."""
    cache = _cache()
    readers = [("reader", number) for number in range(10)]
    for key in readers:
        cache.keep(key, key, 5000, FILE)
        assert cache.find(key, FILE) == key
    for number in range(10_000):
        cache.keep(("stranger", number), number, 1000 + number % 7000, FILE)
        assert cache.kept_bytes <= 100_000
    assert all(cache.find(key, FILE) == key for key in readers)


def test_protected_values_past_their_share_go_back_on_probation():
    cache = _cache()
    for number in range(20):
        cache.keep((number,), number, 5000, FILE)
        cache.find((number,), FILE)
    assert cache.kept_bytes <= 100_000
    # The oldest protected went back on probation; new values push them out first.
    for number in range(20, 40):
        cache.keep((number,), number, 5000, FILE)
    assert cache.find((0,), FILE) is None
    assert cache.find((19,), FILE) == 19


def test_a_value_kept_again_replaces_the_one_on_probation_only():
    cache = _cache()
    cache.keep("page", "first", 100, FILE)
    cache.keep("page", "second", 300, FILE)
    assert cache.peek("page", FILE) == "second" and cache.kept_bytes == 300
    cache.find("page", FILE)  # protected: kept as it is
    cache.keep("page", "third", 500, FILE)
    assert cache.find("page", FILE) == "second" and cache.kept_bytes == 300


def test_a_new_file_empties_the_cache_and_values_of_the_old_one_are_not_kept():
    old, new = ("old",), ("new",)
    cache = ByteCache(100_000)
    cache.find(("warm",), old)
    cache.keep(("page",), "old page", 10, old)
    assert cache.peek(("page",), new) is None and len(cache) == 1  # a look changes nothing
    assert cache.find(("page",), new) is None and len(cache) == 0
    cache.keep(("page",), "old page", 10, old)  # built from the old file, finished late
    assert len(cache) == 0 and cache.find(("page",), old) is None
    cache.keep(("page",), "old page", 10, old)
    assert cache.find(("page",), old) == "old page"  # old is the cache's file again
    cache.clear()
    assert len(cache) == 0 and cache.kept_bytes == 0
    cache.keep(("page",), "old page", 10, old)  # the file stays the cache's after clear
    assert len(cache) == 1


def test_threads_sharing_the_cache_keep_it_whole():
    """Threads keeping, finding and switching files at once: every value found is the one
    kept under its key, and the cache counts exactly the bytes it holds, within budget."""
    cache, errors = ByteCache(50_000), []
    start = threading.Barrier(8)

    def work(worker):
        start.wait(timeout=30)
        for number in range(3000):
            served = ("file", number // 1000)  # each thread switches files twice
            key = (worker % 4, number % 60)
            size = 100 + number % 900
            found = cache.find(key, served)
            if found is not None and found[:2] != (key, served):
                errors.append((key, served, found))
            cache.keep(key, (key, served, size), size, served)

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert errors == [] and not any(thread.is_alive() for thread in threads)
    last = ("file", 2)  # every thread's last lookup
    values = [cache.peek(key, last) for key in cache.keys()]
    assert len(values) == len(cache) and all(value[1] == last for value in values)
    assert cache.kept_bytes == sum(value[2] for value in values) <= 50_000
