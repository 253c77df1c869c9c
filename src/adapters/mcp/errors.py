"""The one error table of the MCP surfaces: every failure a tool reports goes through here.

A tool error is a ``CallToolResult`` with ``is_error`` set, the caller-facing message as its
text, and ``_meta["clarion/error"]`` carrying a stable ``code`` (plus ``field`` for validation
errors and ``retryable`` for delivery failures) so programs can branch without reading prose.

- ``NotFound`` → ``NOT_FOUND``, its message: "clarification request not found" for every
  unknown or foreign bundle alike (N5).
- ``NotActive`` → ``CONFLICT``, "clarification request is no longer active" (N4a), plus
  ``closed_reason`` when the re-read could tell why (issue #30: ``superseded``,
  ``session_ended``, ``expired``, ``cancelled``; REST's ``Clarion-Closed-Reason``).
- ``ValidationError`` → ``VALIDATION_ERROR``, its message naming the field, plus ``field``.
- ``LimitExceeded`` → ``LIMIT_EXCEEDED``, its message naming the limit, plus ``limit`` (the
  setting, e.g. ``CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION``; REST answers 429).
- ``DeliveryError`` → ``INTERNAL_ERROR``, its message (safe by construction), plus
  ``retryable`` (R7a).
- ``WaitEnded`` → ``WAIT_ENDED``, :data:`WAIT_ENDED_MESSAGE` (an ask that ended unanswered),
  plus ``reason`` and ``pending_id``.
- ``VoteRecorded`` → ``VOTE_RECORDED`` (issue #33: an answer to an approval request that is
  a vote and did not decide it — REST answers 202), its message, plus ``pending_id``,
  ``approvals``, ``required`` and ``counted`` (false: this person had voted already).
- anything else, ``ClaimError`` included → ``INTERNAL_ERROR``, :data:`INTERNAL_MESSAGE`; the
  cause is logged with the pending id and never shown (R4a, fixes §9.3).

Two codes come from the surfaces rather than from an exception: ``UNAUTHORIZED`` (a call
with no authenticated caller) and ``CANCELLED`` (the client disconnected mid-call).
"""

from __future__ import annotations

from typing import Any, Final

import structlog
from mcp.types import CallToolResult, TextContent

from clarion.app.usecases.resolve import VoteRecorded
from clarion.domain.errors import (
    DeliveryError,
    LimitExceeded,
    NotActive,
    NotFound,
    ValidationError,
    failure_fields,
)
from clarion.ports.waiters import WaitEnded

ERROR_META_KEY: Final = "clarion/error"
INTERNAL_MESSAGE: Final = "internal error: the request could not be completed"
WAIT_ENDED_MESSAGE: Final = "clarification request timed out or was cancelled"

_log = structlog.get_logger(__name__)


def error_result(code: str, message: str, **details: Any) -> CallToolResult:
    """A tool error carrying ``message`` as text and ``code`` (and ``details``) in ``_meta``."""
    return CallToolResult(
        content=[TextContent(type="text", text=message)],
        is_error=True,
        _meta={ERROR_META_KEY: {"code": code, **details}},
    )


def tool_error(exc: BaseException, *, tool: str, pending_id: str = "") -> CallToolResult:
    """Map ``exc`` through the table above. Internal failures are logged with the pending id."""
    if isinstance(exc, NotFound):
        return error_result("NOT_FOUND", exc.message)
    if isinstance(exc, NotActive):
        why = {"closed_reason": exc.closed_reason} if exc.closed_reason else {}
        return error_result("CONFLICT", exc.message, **why)
    if isinstance(exc, ValidationError):
        return error_result("VALIDATION_ERROR", exc.message, field=exc.field)
    if isinstance(exc, LimitExceeded):
        return error_result("LIMIT_EXCEEDED", exc.message, limit=exc.limit)
    if isinstance(exc, WaitEnded):
        _log.info("mcp_ask_wait_ended", pending_id=exc.pending_id, reason=exc.reason.value)
        return error_result(
            "WAIT_ENDED", WAIT_ENDED_MESSAGE, reason=exc.reason.value, pending_id=exc.pending_id
        )
    if isinstance(exc, VoteRecorded):
        return error_result(
            "VOTE_RECORDED",
            exc.message,
            pending_id=exc.pending_id,
            approvals=exc.result.approvals,
            required=exc.result.required,
            counted=exc.counted,
        )
    if isinstance(exc, DeliveryError):
        _log.warning(
            "mcp_tool_delivery_failed", tool=tool, pending_id=pending_id, retryable=exc.retryable
        )
        return error_result("INTERNAL_ERROR", exc.message, retryable=exc.retryable)
    _log.error(
        "mcp_tool_failed",
        tool=tool,
        pending_id=pending_id,
        **failure_fields(exc),
    )
    return error_result("INTERNAL_ERROR", INTERNAL_MESSAGE)
