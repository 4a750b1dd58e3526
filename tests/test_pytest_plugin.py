"""The pytest plugin a client project gets with the package, run by pytest's own
pytester: active through the package's entry point with nothing configured, it serves
the seed catalogue, or the catalogue an ini option or a fixture parameter names, from a
real ``demoserv serve`` that is stopped when the session ends. The docs' examples of a
client's tests and of its ini file are run here as written (tests/docs_blocks.py)."""

import fnmatch
import json
import os
import re
from pathlib import Path

import pytest

from demoserv.loader.sources import load_catalogue

from . import catalogue_factory, docs_blocks

SEED = Path(__file__).resolve().parent.parent / "seed"
SAMPLE = Path(__file__).resolve().parent / "data" / "upstream" / "demozoo-export-sample.sql.gz"

# A client project's tests: each notes what it was served, for the test that ran them.
CLIENT_TESTS = """
import json
import urllib.error
import urllib.request

def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as error:
        with error:
            return error.code, json.load(error)

def note(server, url):
    status, record = get(url + "/api/v1/productions/108/")
    observed = {
        "url": url,
        "pid": server.pid,
        "database": str(server.database),
        "count": get(url + "/api/v1/productions/")[1]["count"],
        "title": record.get("title") if status == 200 else status,
    }
    with open("observed.jsonl", "a", encoding="utf-8") as file:
        file.write(json.dumps(observed) + "\\n")
"""


def observed(pytester):
    lines = (pytester.path / "observed.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines]


def assert_stopped(pid):
    # The fixture waited for the process, so its PID is gone, not merely dying.
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def count(catalogue_folder_or_export, tmp_path):
    counts, _ = load_catalogue(catalogue_folder_or_export, tmp_path / "counted.sqlite3")
    return counts["productions"]


def docs_examples():
    """The docs' examples of a client's tests (README's, docs/testing-clients.md's), as
    {module name: source}."""
    return {
        "test_docs_" + re.sub(r"\W", "_", block.where.lower()): block.text
        for block in docs_blocks.plugin_examples()
    }


def test_the_seed_is_served_with_nothing_configured(pytester):
    """Two tests of a client project, and the docs' examples beside them, in one session."""
    examples = docs_examples()
    assert len(examples) >= 2
    pytester.makepyfile(
        CLIENT_TESTS
        + """
def test_one(demoserv_server, demoserv_url):
    note(demoserv_server, demoserv_url)

def test_two(demoserv_server, demoserv_url):
    note(demoserv_server, demoserv_url)
""",
        **examples,
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2 + len(examples))
    first, second = observed(pytester)
    lines = (SEED / "productions.jsonl").read_text(encoding="utf-8").splitlines()
    seed = [json.loads(line) for line in lines]
    assert first["count"] == len(seed)
    assert first["title"] == next(r["title"] for r in seed if r["id"] == 108)
    assert first["url"].startswith("http://127.0.0.1:")
    assert second == first  # one server for the session
    assert_stopped(first["pid"])
    # The database is in pytest's temporary folder, not in the project's tree.
    assert "runpytest-" in Path(first["database"]).parent.parent.name
    assert sorted(
        p.name
        for p in pytester.path.iterdir()
        if p.name not in ("stdout", "stderr") and not p.name.startswith("runpytest-")
    ) == sorted(
        [
            "observed.jsonl",
            "test_the_seed_is_served_with_nothing_configured.py",
            *(f"{name}.py" for name in examples),
        ]
    )


def test_the_ini_option_names_a_catalogue_folder(pytester, tmp_path):
    catalogue = catalogue_factory.write(
        catalogue_factory.build(seed=5, productions=40), pytester.path / "data" / "catalogue"
    )
    pytester.makeini("[pytest]\ndemoserv_catalogue = data/catalogue\n")
    pytester.makepyfile(
        CLIENT_TESTS
        + "def test_it(demoserv_server, demoserv_url):\n    note(demoserv_server, demoserv_url)\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    (seen,) = observed(pytester)
    assert seen["count"] == count(catalogue, tmp_path) == 40
    assert_stopped(seen["pid"])


def test_a_fixture_parameter_names_an_export_file_or_a_folder(pytester, tmp_path):
    folder = catalogue_factory.write(
        catalogue_factory.build(seed=6, productions=33), tmp_path / "catalogue"
    )
    pytester.makepyfile(
        CLIENT_TESTS
        + f"""
import pytest

@pytest.mark.parametrize("demoserv_catalogue", [{str(SAMPLE)!r}, {str(folder)!r}], indirect=True)
def test_it(demoserv_server, demoserv_url):
    note(demoserv_server, demoserv_url)
"""
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)
    from_export, from_folder = observed(pytester)
    assert from_export["count"] == count(SAMPLE, tmp_path / "sample") > 0
    assert from_folder["count"] == 33
    assert from_export["pid"] != from_folder["pid"]
    assert_stopped(from_export["pid"])
    assert_stopped(from_folder["pid"])


def test_an_overriding_fixture_names_the_catalogue(pytester, tmp_path):
    folder = catalogue_factory.write(
        catalogue_factory.build(seed=7, productions=21), tmp_path / "catalogue"
    )
    pytester.makeconftest(
        f"""
import pytest

@pytest.fixture(scope="session")
def demoserv_catalogue():
    return {str(folder)!r}
"""
    )
    pytester.makepyfile(
        CLIENT_TESTS
        + "def test_it(demoserv_server, demoserv_url):\n    note(demoserv_server, demoserv_url)\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert observed(pytester)[0]["count"] == 21


TWO_TESTS = "def test_one(demoserv_url):\n    pass\n\ndef test_two(demoserv_url):\n    pass\n"


def said_once(result, pattern):
    """The session stopped with ``pattern`` said on one line, once."""
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    lines = [line for line in result.outlines if fnmatch.fnmatch(line, pattern)]
    assert len(lines) == 1, result.outlines
    return lines[0]


def test_a_catalogue_that_cannot_be_loaded_is_said_once(pytester):
    broken = pytester.path / "broken"
    broken.mkdir()
    (broken / "productions.jsonl").write_text("{not json\n", encoding="utf-8")
    pytester.makeini("[pytest]\ndemoserv_catalogue = broken\n")
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    said_once(result, "*demoserv could not load*broken*productions.jsonl*")


def test_a_missing_catalogue_is_said_once(pytester):
    pytester.makeini("[pytest]\ndemoserv_catalogue = nowhere\n")
    pytester.makepyfile(TWO_TESTS)
    result = pytester.runpytest("-p", "no:cacheprovider")
    said_once(result, "*demoserv_catalogue: *nowhere does not exist*")


def test_the_ini_option_names_the_packaged_sample(pytester):
    """As the docs' ini block (README's, docs/command-line.md's) names it."""
    (ini,) = {block.text for block in docs_blocks.plugin_ini()}
    pytester.makeini(ini)
    pytester.makepyfile(
        CLIENT_TESTS
        + "def test_it(demoserv_server, demoserv_url):\n    note(demoserv_server, demoserv_url)\n"
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert observed(pytester)[0]["count"] == 2350


def test_a_server_that_stops_before_it_is_ready_is_reported_with_its_log(tmp_path, monkeypatch):
    from demoserv.pytest_plugin import DemoservError, DemoservServer

    monkeypatch.setenv("DEMOSERV_SERVICE_URL_FIELD", "no_such_field")  # stops it at start
    with pytest.raises(DemoservError) as raised:
        DemoservServer(tmp_path).start()
    assert "stopped (exit 1) before it was ready" in str(raised.value)
    assert "SERVICE_URL_FIELD is 'no_such_field'" in str(raised.value)  # the log's end
    assert not (tmp_path / "ready").exists()
