"""The REST surface's one error → response table, installed as Starlette exception handlers.

Every failure body is ``{"error": "<text>"}`` (spec R10); a validation failure's also names the
offending field's JSON path, ``{"error": "<text>", "field": "answers[0].custom_text"}`` (issue #32:
an additive key, as R11 allows; the ``error`` text is unchanged). Routes raise;
:data:`EXCEPTION_HANDLERS` answers. The table::

    NotFound              404  its resource's fixed text (``NotFound.resource``), never the id:
                               a thing the caller may not see gets the same bytes as a missing
                               one (A3, A5, A5a)
    NotActive             409  its message: "clarification request is no longer active" (R2,
                               R11), or why a session takes no new bundle; a bundle closed
                               without an answer adds the header Clarion-Closed-Reason (#30)
    ValidationError       400  its own message, which names the offending field (R10, N8d), and
                               ``field``: that field's JSON path
    PayloadTooLarge       413  its message: "request body too large: the limit is N bytes
                               (CLARION_MAX_BODY_BYTES)"
    LimitExceeded         429  its message, naming the limit's setting
    WaitEnded             504  why the wait ended, with the pending id (A7: authorized only)
    VoteRecorded          202  not a failure: an approval request's vote that did not decide it
                               (issue #33), ``{"status": "pending", "approvals", "required",
                               "counted"}``
    ClaimError            500  its message: the use case's fixed text for the failed store
                               operation (the runner logged the cause; R4a)
    DeliveryError         500  its message — one of the resolver's fixed texts (facts §5.8),
                               saying whether the answer can be retried (R7, R7a)
    anything else         500  "internal server error"; logged, never echoed (fixes §9.3)

``ResumeRefused`` never reaches a route (the resolver answers it with a ``DeliveryError``); were
it to, it is "anything else". Unknown paths and methods (Starlette's ``HTTPException``) answer in
the same shape. The 401 and 403 answers of the authentication middleware are built here too, so
no other module writes an error body by hand.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import structlog
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clarion.adapters import wire
from clarion.adapters.wire import models
from clarion.app.usecases.resolve import VoteRecorded
from clarion.domain.errors import (
    NOT_ACTIVE_MESSAGE,
    ClaimError,
    ClarionError,
    DeliveryError,
    LimitExceeded,
    NotActive,
    NotFound,
    PayloadTooLarge,
    ValidationError,
    failure_fields,
)
from clarion.ports.waiters import WaitEnd, WaitEnded

log = structlog.get_logger(__name__)

AUTHENTICATION_REQUIRED: Final = "authentication required"
INVALID_TOKEN: Final = "invalid or expired token"
CSRF_FAILED: Final = "CSRF token missing or invalid"
BODY_TOO_LARGE: Final = "request body too large"
INTERNAL_ERROR: Final = "internal server error"
CLOSED_REASON_HEADER: Final = "Clarion-Closed-Reason"
"""On a 409 for a bundle closed without an answer (issue #30): ``superseded``,
``session_ended``, ``expired`` or ``cancelled``."""


_WAIT_TEXT: Final = {
    WaitEnd.NOT_FOUND: "clarification request not found: {}",
    WaitEnd.TIMEOUT: "clarification request timed out: {}",
    WaitEnd.CANCELLED: "clarification cancelled (agent moved on): {}",
    WaitEnd.DELIVERY_FAILED: "clarification response delivery failed: {}",
}


def failure(
    status: int, message: str, *, headers: Mapping[str, str] | None = None, field: str = ""
) -> JSONResponse:
    """A ``{"error": message}`` response, with ``"field": field`` when one is named."""
    return JSONResponse(
        wire.unstructure(models.Error(message, field)), status_code=status, headers=headers
    )


def unauthenticated(message: str = AUTHENTICATION_REQUIRED) -> JSONResponse:
    """401 with the bearer challenge."""
    return failure(401, message, headers={"WWW-Authenticate": "Bearer"})


def _pending_id(request: Request) -> str:
    return str(request.path_params.get("pending_id", ""))


async def clarion_error(request: Request, exc: Exception) -> Response:
    """Answer one of Clarion's own errors (the table above)."""
    if isinstance(exc, NotFound):
        return failure(404, exc.resource.value)
    if isinstance(exc, NotActive):
        # Issue #30: why, beside the body R10/R11 pin byte for byte.
        reason = {CLOSED_REASON_HEADER: exc.closed_reason} if exc.closed_reason else None
        return failure(409, exc.message or NOT_ACTIVE_MESSAGE, headers=reason)
    if isinstance(exc, ValidationError):
        return failure(400, exc.message, field=exc.field)
    if isinstance(exc, PayloadTooLarge):
        return failure(413, exc.message or BODY_TOO_LARGE)
    if isinstance(exc, LimitExceeded):
        return failure(429, exc.message)
    if isinstance(exc, WaitEnded):
        return failure(504, _WAIT_TEXT[exc.reason].format(exc.pending_id))
    if isinstance(exc, VoteRecorded):
        result = exc.result
        pending = models.VotePending("pending", result.approvals, result.required, exc.counted)
        return JSONResponse(wire.unstructure(pending), status_code=202)
    if isinstance(exc, ClaimError):
        return failure(500, exc.message)  # a fixed text: the runner logged the cause
    if isinstance(exc, DeliveryError):
        log.error(
            "delivery_failed",
            pending_id=_pending_id(request),
            error=exc.message,
            retryable=exc.retryable,
        )
        return failure(500, exc.message)
    return await unexpected_error(request, exc)


async def unexpected_error(request: Request, exc: Exception) -> Response:
    """Anything else: logged without its text, answered with a fixed 500."""
    log.error("request_failed", pending_id=_pending_id(request), **failure_fields(exc))
    return failure(500, INTERNAL_ERROR)


async def http_error(request: Request, exc: Exception) -> Response:
    """Unknown paths and methods answer in the surface's ``{"error"}`` shape too."""
    assert isinstance(exc, HTTPException)
    return failure(exc.status_code, str(exc.detail).lower(), headers=exc.headers)


EXCEPTION_HANDLERS: Final[Mapping[Any, Callable[[Request, Exception], Awaitable[Response]]]] = {
    HTTPException: http_error,
    ClarionError: clarion_error,
    Exception: unexpected_error,
}
"""The REST surface's exception handlers (pass them to ``Starlette(exception_handlers=...)``).
Starlette answers ``Exception`` in its outermost middleware and then re-raises it to the
server; routes wrap every store call (the runner), so only a bug gets there."""
