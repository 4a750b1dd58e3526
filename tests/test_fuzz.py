"""Fuzzing the HTTP surface from the OpenAPI document with schemathesis: generated
valid and invalid requests to every documented operation, every check on (the
document's answers, statuses, content types and schemas; valid data accepted, invalid
data rejected; no server error).

A short run is part of the suite (DEMOSERV_FUZZ_EXAMPLES cases per operation and mode,
in process); the long one, schemathesis's command against a server, over 5,000 cases
on each of a catalogue with every optional datum and one with none, is marked ``fuzz``
(``pytest -m fuzz``, run by .ci/run).
"""

import json
import os
import subprocess
import sysconfig
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.config import SchemathesisConfig

from demoserv import create_app
from demoserv.loader.sources import load_catalogue
from demoserv.server import launcher

SEED = Path(__file__).resolve().parent.parent / "seed"
EXAMPLES = int(os.environ.get("DEMOSERV_FUZZ_EXAMPLES", "4"))
LONG_EXAMPLES = 15  # per operation in the long run's random phase: over 5,000 cases in all
# What a valid request may get besides a 2xx, each documented: 304 (not asked here), a
# page past the last or an unknown record (404), the upstream's staff-only path (403),
# too long a query to read (414), too many new listings at once (503); and on the
# changes feed, a well-formed version its history does not hold (410). An invalid one
# is a 400 (404 for a page or a path), or a 414 before any parameter is read.
CHECKS = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "403", "404", "414", "503"]
[checks.negative_data_rejection]
expected-statuses = ["400", "404", "414"]
[[operations]]
include-path-regex = "^/api/v1/changes[/.]"
checks.positive_data_acceptance.expected-statuses = ["2xx", "3xx", "404", "410", "414", "503"]
"""


def document_of(database):
    app = create_app({"TESTING": True, "DATABASE": str(database), "SEED_DIR": ""})
    return schemathesis.openapi.from_wsgi(
        "/api/v1/openapi.json", app, config=SchemathesisConfig.from_str(CHECKS)
    )


def run(schema, mode, examples):
    """``examples`` cases of ``mode`` for each operation of ``schema``, every check on;
    the number of cases sent."""
    sent = 0
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 30
    for operation in operations:
        if mode is GenerationMode.NEGATIVE and not (
            len(operation.query) or len(operation.path_parameters)
        ):
            continue  # no parameter to get wrong

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=examples,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case):
            nonlocal sent
            sent += 1
            # The WSGI client does not decode brotli: compression has tests of its own.
            headers = {"Accept-Encoding": "identity"}
            case.validate_response(case.call(headers=headers), headers=headers)

        check()
    return sent


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_conforms_to_its_document(loaded_database, mode):
    assert run(document_of(loaded_database), mode, EXAMPLES)


@pytest.mark.fuzz
@pytest.mark.parametrize("source", ["test catalogue", "seed"])
def test_a_long_run_finds_no_failure(source, catalogue_dir, tmp_path):
    """Schemathesis's own command, every phase (the examples, the boundary values of
    every parameter, random cases, sequences of calls) and every check, against
    ``demoserv serve`` over HTTP: over the test catalogue (every filter offered) and
    the seed (which records neither when records were added or updated nor releasers'
    countries: the document does not offer those filters)."""
    database = tmp_path / "catalogue.sqlite3"
    load_catalogue(SEED if source == "seed" else catalogue_dir, database)
    config, report = tmp_path / "schemathesis.toml", tmp_path / "report.json"
    config.write_text(CHECKS)
    with launcher.Demoserv(f"--database={database}") as server:
        finished = subprocess.run(
            [
                os.path.join(sysconfig.get_path("scripts"), "st"),
                f"--config-file={config}",
                "run",
                f"{server.url}/api/v1/openapi.json",
                "--checks=all",
                f"--max-examples={LONG_EXAMPLES}",
                "--workers=1",
                "--seed=1",
                "--continue-on-failure",
                "--report=json",
                f"--report-json-path={report}",
            ],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=600,
        )
    ran = json.loads(report.read_text())
    assert finished.returncode == 0, finished.stdout[-20_000:]
    assert not ran["failures"] and not ran["errors"], finished.stdout[-20_000:]
    assert {phase["status"] for phase in ran["phases"].values()} == {"success"}
    assert ran["test_cases"]["generated"] >= 5000, ran["test_cases"]
