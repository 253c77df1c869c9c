"""The MCP surfaces' one error table (errors.py): codes, fields, and no leaked internals."""

from __future__ import annotations

import pytest

from clarion.adapters.mcp.errors import ERROR_META_KEY, INTERNAL_MESSAGE, tool_error
from clarion.domain.errors import (
    NOT_ACTIVE_MESSAGE,
    NOT_FOUND_MESSAGE,
    ClaimError,
    DeliveryError,
    InvalidArgument,
    InvalidOutcome,
    NotActive,
    NotFound,
)


@pytest.mark.parametrize(
    ("error", "text", "details"),
    [
        (NotFound(NOT_FOUND_MESSAGE), NOT_FOUND_MESSAGE, {"code": "NOT_FOUND"}),
        (NotActive(NOT_ACTIVE_MESSAGE), NOT_ACTIVE_MESSAGE, {"code": "CONFLICT"}),
        (  # issue #30: the spec's text (N4a), and why the bundle closed
            NotActive(NOT_ACTIVE_MESSAGE, closed_reason="superseded"),
            NOT_ACTIVE_MESSAGE,
            {"code": "CONFLICT", "closed_reason": "superseded"},
        ),
        (
            InvalidOutcome("answer 1 is missing question_id", field="answers[0].question_id"),
            "answer 1 is missing question_id",
            {"code": "VALIDATION_ERROR", "field": "answers[0].question_id"},
        ),
        (
            InvalidArgument("cursor: malformed cursor", field="cursor"),
            "cursor: malformed cursor",
            {"code": "VALIDATION_ERROR", "field": "cursor"},
        ),
        (
            DeliveryError(
                "failed to resume clarification; response can be retried", retryable=True
            ),
            "failed to resume clarification; response can be retried",
            {"code": "INTERNAL_ERROR", "retryable": True},
        ),
    ],
    ids=["not-found", "not-active", "closed-with-reason", "outcome", "argument", "delivery"],
)
def test_clarion_errors_map_to_their_code_and_caller_safe_text(
    error: Exception, text: str, details: dict[str, object]
) -> None:
    result = tool_error(error, tool="answer_question_kandev", pending_id="p-1")
    assert result.is_error is True
    assert [(block.type, getattr(block, "text", None)) for block in result.content] == [
        ("text", text)
    ]
    assert result.structured_content is None
    assert result.meta == {ERROR_META_KEY: details}


@pytest.mark.parametrize(
    "error",
    [
        ClaimError("failed to update clarification state"),
        RuntimeError("psycopg.OperationalError: connection to 10.0.0.5 refused"),
    ],
)
def test_claim_errors_and_unexpected_failures_get_one_fixed_text_and_leak_nothing(
    error: Exception,
) -> None:
    """R4a, fixes §9.3: the cause is logged, never shown."""
    result = tool_error(error, tool="answer_question_kandev", pending_id="p-1")
    assert result.is_error is True
    assert [getattr(block, "text", None) for block in result.content] == [INTERNAL_MESSAGE]
    assert result.meta == {ERROR_META_KEY: {"code": "INTERNAL_ERROR"}}
