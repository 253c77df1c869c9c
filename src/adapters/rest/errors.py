"""The REST surface's one error → response table.

Every failure body is ``{"error": "<text>"}`` (spec R10). The table::

    NotFound              404  resource-specific fixed text; a resource the caller may not see
                               gets the same bytes as a missing one (A3, A5, A5a)
    NotActive             409  its message: "clarification request is no longer active" (R2,
                               R11), or why a session takes no new bundle
    ValidationError       400  its own message, which names the offending field (R10, N8d)
    PayloadTooLarge       413  its message: "request body too large: the limit is N bytes
                               (CLARION_MAX_BODY_BYTES)"
    LimitExceeded         429  its message, naming the limit's setting
    WaitEnded             504  why the wait ended, with the pending id (A7: authorized only)
    ClaimError            500  the route's fixed store-failure text; the pending id and the
                               error are logged, the error's own text is never sent (R4a)
    DeliveryError         500  its message — one of the resolver's fixed texts (facts §5.8),
                               saying whether the answer can be retried (R7, R7a)
    anything else         500  "internal server error"; logged, never echoed (fixes §9.3)

The 401 and 403 answers of the authentication middleware are built here too, so no other
module writes an error body by hand.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Awaitable, Callable, Mapping
from typing import Final

import structlog
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clarion.adapters import wire
from clarion.adapters.wire import models
from clarion.domain.errors import (
    NOT_ACTIVE_MESSAGE,
    NOT_FOUND_MESSAGE,
    ClaimError,
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
CLAIM_FAILED: Final = "failed to update clarification state"
AUTHORIZE_FAILED: Final = "failed to authorize clarification request"
CREATE_FAILED: Final = "failed to create clarification request"


class Resource(enum.Enum):
    """What a route is about; decides the text of its 404."""

    CLARIFICATION = NOT_FOUND_MESSAGE
    WORKSPACE = "workspace not found"
    TASK = "task not found"
    SESSION = "session not found"
    NONE = "not found"


_WAIT_TEXT: Final = {
    WaitEnd.NOT_FOUND: "clarification request not found: {}",
    WaitEnd.TIMEOUT: "clarification request timed out: {}",
    WaitEnd.CANCELLED: "clarification cancelled (agent moved on): {}",
    WaitEnd.DELIVERY_FAILED: "clarification response delivery failed: {}",
}


def failure(status: int, message: str, *, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A ``{"error": message}`` response."""
    return JSONResponse(
        wire.unstructure(models.Error(message)), status_code=status, headers=headers
    )


def unauthenticated(message: str = AUTHENTICATION_REQUIRED) -> JSONResponse:
    """401 with the bearer challenge."""
    return failure(401, message, headers={"WWW-Authenticate": "Bearer"})


def error_response(
    exc: BaseException,
    *,
    resource: Resource,
    pending_id: str = "",
    store_failure: str = INTERNAL_ERROR,
) -> Response:
    """Map any exception raised by a route to its response (the table above)."""
    if isinstance(exc, NotFound):
        return failure(404, resource.value)
    if isinstance(exc, NotActive):
        return failure(409, exc.message or NOT_ACTIVE_MESSAGE)
    if isinstance(exc, ValidationError):
        return failure(400, exc.message)
    if isinstance(exc, PayloadTooLarge):
        return failure(413, exc.message or BODY_TOO_LARGE)
    if isinstance(exc, LimitExceeded):
        return failure(429, exc.message)
    if isinstance(exc, WaitEnded):
        return failure(504, _WAIT_TEXT[exc.reason].format(exc.pending_id))
    if isinstance(exc, ClaimError):
        # The type only: a driver's message may quote statement parameters (answer text).
        log.error(
            "store_failed", pending_id=pending_id, error_type=type(exc.__cause__ or exc).__name__
        )
        return failure(500, store_failure)
    if isinstance(exc, DeliveryError):
        log.error(
            "delivery_failed", pending_id=pending_id, error=exc.message, retryable=exc.retryable
        )
        return failure(500, exc.message)
    log.error("request_failed", pending_id=pending_id, **failure_fields(exc))
    return failure(500, INTERNAL_ERROR)


Endpoint = Callable[[Request], Awaitable[Response]]


def guarded(
    resource: Resource, *, store_failure: str = INTERNAL_ERROR
) -> Callable[[Endpoint], Endpoint]:
    """Wrap an endpoint so every exception it raises goes through :func:`error_response`;
    ``store_failure`` is the route's 500 text for a failed store."""

    def decorate(endpoint: Endpoint) -> Endpoint:
        @functools.wraps(endpoint)
        async def run(request: Request) -> Response:
            try:
                return await endpoint(request)
            except Exception as exc:  # noqa: BLE001 — the surface's top-level error boundary
                pending_id = request.path_params.get("pending_id", "")
                return error_response(
                    exc,
                    resource=resource,
                    pending_id=str(pending_id),
                    store_failure=store_failure,
                )

        return run

    return decorate
