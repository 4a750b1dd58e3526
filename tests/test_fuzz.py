"""Fuzzing the HTTP surface from the OpenAPI document with schemathesis: generated
valid and invalid requests to every documented operation must never get a server
error, and must conform to the document (status, content type, body).

A bounded run is part of the suite (DEMOSERV_FUZZ_EXAMPLES cases per operation and
mode, 25 by default); README gives the command for a longer run.
"""

import os

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from demoserv import create_app

EXAMPLES = int(os.environ.get("DEMOSERV_FUZZ_EXAMPLES", "12"))


@pytest.fixture
def api_schema(loaded_database):
    app = create_app({"TESTING": True, "DATABASE": str(loaded_database), "SEED_DIR": ""})
    return schemathesis.openapi.from_wsgi("/api/v1/openapi.json", app)


def operations(schema):
    found = [result.ok() for result in schema.get_all_operations()]
    assert len(found) >= 30
    return found


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_api_conforms_to_its_document(api_schema, mode):
    for operation in operations(api_schema):
        if mode is GenerationMode.NEGATIVE and not (
            len(operation.query) or len(operation.path_parameters)
        ):
            continue  # no parameter to get wrong

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def check(case):
            # A schema-valid page number can still be past the last page (404), so
            # answers to valid data need not be 2xx; everything else is checked. The
            # WSGI client does not decode brotli: compression has tests of its own.
            # A request too long to read is refused with 414 before any parameter is
            # looked at (documented for every operation), so it rejects invalid data too.
            headers = {"Accept-Encoding": "identity"}
            response = case.call(headers=headers)
            excluded = [positive_data_acceptance]
            if response.status_code == 414:
                excluded.append(negative_data_rejection)
            case.validate_response(response, headers=headers, excluded_checks=excluded)

        check()
