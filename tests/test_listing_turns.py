"""New listings are found one at a time: a client asking only for new listings waits
its turn, boundedly, and never holds up pages already found."""

import pytest

from demoserv import listing


@pytest.fixture
def turn_taken(monkeypatch):
    """Another request is finding a new listing (the turn is taken)."""
    monkeypatch.setattr(listing, "WAIT_SECONDS", 0.05)
    assert listing.TURNS._turn.acquire(blocking=False)
    yield
    listing.TURNS._turn.release()


def test_found_listings_never_wait(client, turn_taken):
    page = client.get("/api/v1/productions/?ordering=-release_date_date&page=2")
    assert page.status_code == 200  # a single key's rank range: nothing to find
    assert client.get(page.json["results"][0]["url"]).status_code == 200


def test_a_new_listing_waits_its_turn_then_gets_503(client, monkeypatch):
    path = "/api/v1/productions/?released_since=1994-02-03"
    monkeypatch.setattr(listing, "WAIT_SECONDS", 0.05)
    assert listing.TURNS._turn.acquire(blocking=False)
    try:
        busy = client.get(path)
        assert busy.status_code == 503
        assert busy.headers["Retry-After"] == "1"
        assert "new listings" in busy.json["detail"].lower()
        monkeypatch.setattr(listing, "MAX_WAITING", 0)  # a full queue: no wait at all
        assert client.get(path).status_code == 503
    finally:
        listing.TURNS._turn.release()
    found = client.get(path)
    assert found.status_code == 200 and found.json["count"] >= 0
    # Once found, it is served while the turn is taken again.
    assert listing.TURNS._turn.acquire(blocking=False)
    try:
        assert client.get(path + "&page=1").status_code == 200
    finally:
        listing.TURNS._turn.release()


def test_the_turn_is_given_back(client):
    for day in range(1, 6):
        assert client.get(f"/api/v1/productions/?released_since=1993-01-0{day}").status_code == 200
    assert listing.TURNS._turn.acquire(blocking=False)
    listing.TURNS._turn.release()


def test_finding_new_listings_takes_at_most_its_share_of_the_time_while_others_queue():
    """After a turn that took t while others waited for theirs, the next one starts
    t × (1 / LISTING_SHARE - 1) later at the soonest; with nobody waiting, at once (on a clock
    of the test's own, so nothing here sleeps)."""
    now, slept = [100.0], []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    turns = listing._Turns(clock=lambda: now[0], sleep=sleep)
    rest = 1 / listing.LISTING_SHARE - 1
    with turns:
        now[0] += 0.2  # finding a listing took 0.2 s, nobody waiting
    with turns:
        now[0] += 0.2
        turns._waiting = 1  # another request queued meanwhile
    assert slept == []
    now[0] += 0.05  # the next turn comes 0.05 s later
    with turns:
        now[0] += 0.1
        turns._waiting = 1
    assert slept == [pytest.approx(0.2 * rest - 0.05)]
    now[0] += 0.1 * rest + 0.01  # after the rest that turn earned: no wait
    with turns:
        turns._waiting = 1
    assert len(slept) == 1
    with pytest.raises(ZeroDivisionError), turns:  # a turn that failed counts too
        now[0] += 0.3
        turns._waiting = 1
        1 / 0
    with turns:
        turns._waiting = 0
    assert slept[-1] == pytest.approx(0.3 * rest)
    with turns:  # the last turn had nobody waiting
        pass
    assert len(slept) == 2
