"""The error family every Clarion layer raises.

Hierarchy::

    ClarionError
    ├── NotFound              the bundle/task/session does not exist or the caller may not see it;
    │                         ``resource`` (a :class:`Resource`) says which kind of thing
    ├── NotActive             the bundle exists but no longer accepts a resolution (R2, no winner)
    ├── ValidationError       caller input is wrong; ``field`` names the offending field
    │   ├── InvalidOutcome    an answer/rejection does not fit the bundle (N6–N8b, L16)
    │   ├── InvalidQuestions  a question set for a new bundle is malformed (creation rules)
    │   └── InvalidArgument   a listing argument (``cursor``, ``created_since``, ...) is malformed
    ├── LimitExceeded         a count limit (active bundles, streams, sessions) is reached;
    │                         ``limit`` names the setting
    ├── PayloadTooLarge       a request body is over the surface's limit (CLARION_MAX_BODY_BYTES)
    ├── ClaimError            a store call failed (R4a); never the caller's fault. Its message
    │                         is the use case's fixed text for the operation (the driver's is
    │                         logged, never kept)
    ├── DeliveryError         a claimed resolution could not be delivered (R7); ``retryable``
    │                         says whether the bundle was restored to pending
    ├── WaitEnded             (defined in clarion.ports.waiters) a wait ended without a
    │                         resolution; ``reason`` (not found, timed out, cancelled, delivery
    │                         failed) and ``pending_id``
    └── ResumeRefused         (defined in clarion.ports.resume) a resume dispatcher did not accept
                              the resume; the resolver rolls the claim back and answers with a
                              DeliveryError, so a caller never sees this one

Every surface maps these through exactly one table (REST: the exception handlers of
``clarion.adapters.rest.errors``; MCP: ``clarion.adapters.mcp.errors``); docs/architecture.md
lists both. Messages are safe to show to the caller: they never carry database error text.
"""

from __future__ import annotations

import enum
import traceback


class Resource(enum.Enum):
    """What a :class:`NotFound` is about. The value is the text a caller is shown — never with
    the id, so a thing the caller may not see reads exactly like a missing one (A3)."""

    CLARIFICATION = "clarification request not found"
    WORKSPACE = "workspace not found"
    TASK = "task not found"
    SESSION = "session not found"
    TURN = "turn not found"
    USER = "user not found"
    NOTIFICATION_ROUTE = "notification route not found"
    NOTIFICATIONS = "notifications are not available with this storage"
    GROUP = "group not found"  # issue #33
    STANDING_APPROVAL = "standing approval not found"  # issue #33


class ClarionError(Exception):
    """Base class of every error Clarion raises on purpose."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class NotFound(ClarionError):
    """The thing does not exist, or the caller may not see it (the two are indistinguishable).

    ``resource`` says what was not found (surfaces answer with its text); ``key`` names the
    missing thing in ``message`` for logs and administrators. ``NotFound(message)`` alone, as a
    host's authorizer raises it, is about a clarification request.
    """

    def __init__(
        self, message: str = "", *, resource: Resource = Resource.CLARIFICATION, key: str = ""
    ) -> None:
        if not message:
            message = f"{resource.value}: {key}" if key else resource.value
        super().__init__(message)
        self.resource = resource


class NotActive(ClarionError):
    """The bundle exists but is no longer active and has no winner (R2 second branch).

    ``closed_reason`` (issue #30) says why, when the one re-read could tell — ``superseded``,
    ``session_ended``, ``expired`` or ``cancelled`` — and is "" otherwise; the message stays
    the one the spec pins (R10, R11), surfaces convey the reason beside it.
    """

    def __init__(self, message: str, *, closed_reason: str = "") -> None:
        super().__init__(message)
        self.closed_reason = closed_reason


class ValidationError(ClarionError):
    """Caller input is invalid. ``field`` names the offending field or argument."""

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message)
        self.field = field


class InvalidOutcome(ValidationError):
    """An outcome does not fit the bundle's questions (N6–N8b, L16)."""


class InvalidQuestions(ValidationError):
    """A question set submitted for a new bundle is malformed."""


class InvalidArgument(ValidationError):
    """A listing argument could not be parsed (L13)."""


class LimitExceeded(ClarionError):
    """A count limit is reached (REST 429); ``limit`` names the setting, e.g.
    ``CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION``."""

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class PayloadTooLarge(ClarionError):
    """The request body is larger than the surface accepts (REST 413)."""


class ClaimError(ClarionError):
    """The claim failed for a reason other than losing it (R4a). Not the caller's fault."""


class DeliveryError(ClarionError):
    """A claimed resolution could not be delivered (R7).

    ``retryable`` is true when the bundle was restored to pending and may be answered again.
    """

    def __init__(self, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.retryable = retryable


NOT_FOUND_MESSAGE = Resource.CLARIFICATION.value
NOT_ACTIVE_MESSAGE = "clarification request is no longer active"


def failure_fields(exc: BaseException) -> dict[str, str]:
    """How a failure is logged: the exception's type, Clarion's own message (only for
    :class:`ClarionError`, whose messages we write), and where it was raised as
    ``file:line function`` frames — never the text of a driver's or library's exception, which
    can quote stored values (answer text in a database's error context, for example)."""
    fields = {"error": f"{type(exc).__module__}.{type(exc).__qualname__}"}
    if isinstance(exc, ClarionError):
        fields["message"] = exc.message
    frames = traceback.extract_tb(exc.__traceback__)[-8:]
    fields["at"] = " < ".join(
        f"{frame.filename.rsplit('/', 1)[-1]}:{frame.lineno} {frame.name}"
        for frame in reversed(frames)
    )
    cause = exc.__cause__ if exc.__cause__ is not None else exc.__context__
    if cause is not None:
        fields["cause"] = f"{type(cause).__module__}.{type(cause).__qualname__}"
    return fields
