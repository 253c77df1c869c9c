"""The OpenAPI contract against the live application: schemathesis generates requests for
every operation from ``/openapi.json`` (valid and invalid ones) and checks that nothing
answers 5xx and nothing contradicts the document (status, content type, headers, body
schema), and that invalid input is refused — in both auth modes.

Bounded on purpose: 25 derandomized examples per operation and mode. The event stream is
left out (an endless response); ``test_events`` covers it.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.generation import GenerationMode
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from clarion.adapters.rest.openapi import openapi_document
from tests.integration.rest.harness import RestWorld

CHECKS: list[Any] = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    response_schema_conformance,
    negative_data_rejection,
]
SKIPPED = {"/api/v1/events"}


def _negatable(operation: dict[str, Any]) -> bool:
    """Whether invalid input exists for an operation: a body, or a parameter that is not a
    plain string (any text is a valid string in a path or a query)."""
    return "requestBody" in operation or any(
        parameter["schema"].get("type") != "string" for parameter in operation.get("parameters", ())
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
def test_generated_requests_never_get_a_5xx_or_a_response_the_document_does_not_allow(
    auth_enabled: bool, mode: GenerationMode
) -> None:
    # Schemathesis calls the application as http://testserver: a configured host name.
    world = RestWorld.build(auth_enabled=auth_enabled, allowed_hosts=("testserver",))
    headers = world.bearer("fuzzer")[1] if auth_enabled else {}
    schema = schemathesis.openapi.from_asgi("/openapi.json", world.app)
    operations = [result.ok() for result in schema.get_all_operations() if isinstance(result, Ok)]
    documented = {
        f"{method.upper()} {path}": definition
        for path, methods in openapi_document(auth_enabled=auth_enabled)["paths"].items()
        for method, definition in methods.items()
    }
    # Schemathesis leaves out the document's own path; everything else is exercised.
    assert {operation.label for operation in operations} == set(documented) - {"GET /openapi.json"}
    for operation in operations:
        if operation.path in SKIPPED:
            continue
        if mode is GenerationMode.NEGATIVE and not _negatable(documented[operation.label]):
            continue

        @settings(
            max_examples=25,
            derandomize=True,
            database=None,
            deadline=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(generation_mode=mode))
        def exercise(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(headers=headers, checks=CHECKS)

        exercise()
