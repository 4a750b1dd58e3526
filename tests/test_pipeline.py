"""The request pipeline (demoserv/web/pipeline.py), step by step: each step has a check of
what it does, and each check is shown to fail when its step is taken out."""

import gc
import gzip
import logging
import sys

import pytest
from flask import g

import demoserv
import demoserv.web.factory
from demoserv import SWITCH_INTERVAL, create_app, serving_app
from demoserv.listings import guard as listing_guard
from demoserv.loader.sources import load_catalogue
from demoserv.web import pipeline

from .conftest import suite_app

_make = suite_app


def access_log(make, caplog):
    caplog.set_level(logging.INFO, logger="demoserv.access")
    make().test_client().get("/api/v1/platforms/?page=1", headers={"Host": "bad/host"})
    lines = [r.getMessage() for r in caplog.records if r.name == "demoserv.access"]
    assert len(lines) == 1 and '"status": 400' in lines[0], lines


def proxy_headers(make, caplog):
    client = make(TRUSTED_PROXIES=1).test_client()
    root = client.get(
        "/api/v1/", headers={"X-Forwarded-Host": "mirror.example", "X-Forwarded-Proto": "https"}
    ).json
    assert root["platforms"] == "https://mirror.example/api/v1/platforms/"


def kept_answers(make, caplog):
    app = make()
    response = app.test_client().get("/api/v1/parties/")
    kept = app.extensions["demoserv.web.kept_answers"]
    assert len(kept) == 1 and kept.kept_bytes > len(response.data)


def refuse_unusable(make, caplog):
    response = make().test_client().get("/api/v1/", headers={"Host": "evil.example/path"})
    assert response.status_code == 400 and "Host" in response.json["detail"]


def negotiate(make, caplog):
    client = make().test_client()
    assert client.get("/api/v1/platforms/", headers={"Accept": "text/csv"}).status_code == 406
    assert client.get("/api/v1/platforms/?format=xml").status_code == 400


def answer_conditional(make, caplog):
    client = make().test_client()
    tag = client.get("/api/v1/parties/").headers["ETag"]
    again = client.get("/api/v1/parties/", headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.headers["ETag"] == tag


def represent(make, caplog):
    client = make().test_client()
    response = client.get("/api/v1/platforms/?format=jsonp&callback=cb")
    assert response.data.startswith(b"cb({") and response.data.endswith(b"});")
    indented = client.get("/api/v1/platforms/", headers={"Accept": "application/json; indent=2"})
    assert indented.data.startswith(b'{\n  "count": ')


def render(make, caplog):
    response = make().test_client().get("/api/v1/platforms/", headers={"Accept": "text/html"})
    assert response.data.startswith(b"<!DOCTYPE html>") and b'"count": ' in response.data


def label_fresh(make, caplog):
    response = make().test_client().get("/api/v1/platforms/")
    assert response.headers["ETag"].startswith('"')
    assert response.headers["Cache-Control"].startswith("public, max-age=")
    assert "Last-Modified" in response.headers and "X-Catalogue-Version" in response.headers


def label(make, caplog):
    response = make().test_client().get("/api/v1/platforms/")
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Allow"] == "GET, HEAD, OPTIONS"


def compress(make, caplog):
    client = make().test_client()
    response = client.get("/api/v1/productions/", headers={"Accept-Encoding": "gzip"})
    assert response.headers["Content-Encoding"] == "gzip"
    assert response.headers["ETag"].endswith('-gzip"')
    assert gzip.decompress(response.data).startswith(b'{"count":')


def close_connection(make, caplog):
    app = make()
    with app.app_context():  # many requests in one app context, as a test may run them
        client = app.test_client()
        client.get("/api/v1/platforms/")
        assert "db_connection" not in g and "catalogue" not in g


def admission(make, caplog):
    """While the guard holds all it may, a refusal is answered before Flask: the second
    one of a form is the first's bytes, without the guard being asked again."""
    app = make()
    guard = app.extensions[listing_guard.EXTENSION]
    asked = []

    def refuse(*args):
        asked.append(args)
        raise listing_guard.Busy

    guard.admits, guard.run = (lambda: False), refuse
    client = app.test_client()
    first = client.get("/api/v1/productions/?released_since=1994-02-03")
    second = client.get("/api/v1/productions/?released_before=1994-02-03")
    assert first.status_code == second.status_code == 503 and first.data == second.data
    assert len(asked) == 1


CHECKS = {
    pipeline.access_log: ("MIDDLEWARE", access_log),
    pipeline.proxy_headers: ("MIDDLEWARE", proxy_headers),
    pipeline.kept_answers: ("MIDDLEWARE", kept_answers),
    pipeline.admission: ("MIDDLEWARE", admission),
    pipeline.request_limits.refuse_unusable: ("BEFORE", refuse_unusable),
    pipeline.negotiation.negotiate: ("BEFORE", negotiate),
    pipeline.conditional.answer_conditional: ("BEFORE", answer_conditional),
    pipeline.negotiation.represent: ("AFTER", represent),
    pipeline.browsable.render: ("AFTER", render),
    pipeline.conditional.label_fresh: ("AFTER", label_fresh),
    pipeline.negotiation.label: ("AFTER", label),
    pipeline.compression.compress: ("AFTER", compress),
    pipeline.db.close_connection: ("TEARDOWN", close_connection),
}


def test_every_step_has_a_check():
    steps = {
        (stage, step)
        for stage in ("MIDDLEWARE", "BEFORE", "AFTER", "TEARDOWN")
        for step in getattr(pipeline, stage)
    }
    assert steps == {(stage, step) for step, (stage, _) in CHECKS.items()}


@pytest.mark.parametrize("step", CHECKS, ids=lambda step: step.__name__)
def test_step_does_its_work(step, loaded_database, caplog):
    CHECKS[step][1](lambda **config: _make(loaded_database, **config), caplog)


@pytest.mark.parametrize("step", CHECKS, ids=lambda step: step.__name__)
def test_check_fails_without_its_step(step, loaded_database, caplog, monkeypatch):
    stage, check = CHECKS[step]
    monkeypatch.setattr(pipeline, stage, tuple(s for s in getattr(pipeline, stage) if s != step))
    with pytest.raises((AssertionError, KeyError, TypeError)):
        check(lambda **config: _make(loaded_database, **config), caplog)


def test_hooks_run_in_the_pipelines_order(loaded_database):
    app = _make(loaded_database)
    assert app.before_request_funcs[None] == list(pipeline.BEFORE)
    # Flask runs after_request functions in the reverse of the order they were added.
    assert list(reversed(app.after_request_funcs[None])) == list(pipeline.AFTER)
    assert pipeline.db.close_connection in app.teardown_request_funcs[None]


def test_a_load_leaves_request_addresses_alone(make_app, catalogue_dir, tmp_path):
    # Records are built with markers in place of addresses; a load in this thread
    # must not leave the markers in force for the requests that follow in it.
    database = tmp_path / "db.sqlite3"
    load_catalogue(catalogue_dir, database)
    root = make_app(database).test_client().get("/api/v1/").json
    assert root["platforms"] == "http://localhost/api/v1/platforms/"


def bare_logging(monkeypatch):
    """Logging as a fresh process has it: no handlers anywhere (pytest adds its own,
    at each phase of a test, so this is called in the test's body)."""
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    for name in ("demoserv", "demoserv.access"):
        logger = logging.getLogger(name)
        monkeypatch.setattr(logger, "handlers", [])
        monkeypatch.setattr(logger, "level", logging.NOTSET)
        monkeypatch.setattr(logger, "propagate", True)
    return logging.getLogger("demoserv")


def test_create_app_leaves_the_process_alone(loaded_database, monkeypatch):
    package = bare_logging(monkeypatch)
    calls = []
    monkeypatch.setattr(demoserv.web.factory, "give_back_large_blocks", lambda: calls.append(1))
    frozen, interval = gc.get_freeze_count(), sys.getswitchinterval()
    app = create_app({"DATABASE": str(loaded_database), "SEED_DIR": ""})  # not TESTING
    assert not app.testing
    assert gc.get_freeze_count() == frozen and sys.getswitchinterval() == interval
    assert (package.handlers, package.propagate) == ([], True)
    assert calls == []


def test_serving_app_sets_up_the_process(loaded_database, monkeypatch):
    package = bare_logging(monkeypatch)
    monkeypatch.setenv("DEMOSERV_DATABASE", str(loaded_database))
    monkeypatch.setenv("DEMOSERV_SEED_DIR", "")
    calls = []
    monkeypatch.setattr(demoserv.web.factory, "give_back_large_blocks", lambda: calls.append(1))
    interval = sys.getswitchinterval()
    try:
        serving_app()
        assert calls == [1]
        assert gc.get_freeze_count() > 0
        assert len(package.handlers) == 1 and not package.propagate
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL) != interval
    finally:
        gc.unfreeze()
        sys.setswitchinterval(interval)


class FakeLibc:
    def __init__(self, answer):
        self.answer, self.calls = answer, []

    def mallopt(self, parameter, value):
        self.calls.append((parameter, value))
        return self.answer


def test_large_blocks_are_given_back_where_the_c_library_can():
    libc = FakeLibc(1)
    assert demoserv.give_back_large_blocks(libc) is True
    assert libc.calls == [(-3, 128 * 1024)]  # M_MMAP_THRESHOLD, fixed at 128 KiB
    assert demoserv.give_back_large_blocks(FakeLibc(0)) is False  # refused
    assert demoserv.give_back_large_blocks(object()) is False  # no mallopt: left alone
    assert demoserv.give_back_large_blocks() is True  # this machine's glibc
