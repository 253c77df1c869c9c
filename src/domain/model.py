"""Core values: questions, answers, outcomes, resolutions, statuses and identities."""

from __future__ import annotations

from datetime import datetime
from typing import Final, Literal

import attrs

# D3: the status vocabulary of a clarification row. An absent status counts as pending (D4).
PENDING: Final = "pending"
ANSWERED: Final = "answered"
REJECTED: Final = "rejected"
CANCELLED: Final = "cancelled"
EXPIRED: Final = "expired"
KNOWN_STATUSES: Final = frozenset({PENDING, ANSWERED, REJECTED, CANCELLED, EXPIRED})
TERMINAL_OUTCOMES: Final = frozenset({ANSWERED, REJECTED})

ResolutionStatus = Literal["answered", "rejected"]
"""D3's terminal outcomes: the status a claim's winner writes and a :class:`Resolution`
reports (R10/N3's ``status``)."""


def resolution_status(status: str | None) -> ResolutionStatus | None:
    """``status`` as a terminal outcome; None for any other status (pending, expired, ...)."""
    if status == ANSWERED:
        return ANSWERED
    if status == REJECTED:
        return REJECTED
    return None


CLARIFICATION_REQUEST: Final = "clarification_request"
MESSAGE: Final = "message"
RESUME: Final = "resume"  # the transcript message a durable outbox records a resume as

MAX_TEXT_CODE_POINTS: Final = 2000  # N8b


class SessionState:
    """Session states (upstream facts §1.2). The last three are terminal."""

    CREATED: Final = "CREATED"
    STARTING: Final = "STARTING"
    RUNNING: Final = "RUNNING"
    IDLE: Final = "IDLE"
    WAITING_FOR_INPUT: Final = "WAITING_FOR_INPUT"
    COMPLETED: Final = "COMPLETED"
    FAILED: Final = "FAILED"
    CANCELLED: Final = "CANCELLED"

    ALL: Final = (
        CREATED,
        STARTING,
        RUNNING,
        IDLE,
        WAITING_FOR_INPUT,
        COMPLETED,
        FAILED,
        CANCELLED,
    )
    TERMINAL: Final = frozenset({COMPLETED, FAILED, CANCELLED})
    INPUT_CAPABLE: Final = frozenset({RUNNING, WAITING_FOR_INPUT})


def is_terminal_state(state: str) -> bool:
    """True for COMPLETED, FAILED and CANCELLED."""
    return state in SessionState.TERMINAL


def is_pendingish(status: str | None) -> bool:
    """D3/D4: an absent, empty or ``pending`` status counts as pending; anything else does not."""
    return status is None or status in ("", PENDING)


@attrs.frozen
class Option:
    """One choice of a question, addressed by ``option_id``."""

    option_id: str
    label: str = ""
    description: str = ""


@attrs.frozen
class Question:
    """One question of a bundle."""

    id: str
    prompt: str = ""
    title: str = ""
    options: tuple[Option, ...] = ()

    def option_ids(self) -> tuple[str, ...]:
        return tuple(option.option_id for option in self.options)


@attrs.frozen
class Answer:
    """The answer to one question: any selected option ids and/or free text (N7)."""

    question_id: str
    selected_options: tuple[str, ...] = ()
    custom_text: str = ""


@attrs.frozen
class Outcome:
    """What a caller submits: answers, or a rejection with an optional reason (N1)."""

    answers: tuple[Answer, ...] = ()
    rejected: bool = False
    reject_reason: str = ""

    @classmethod
    def answer(cls, *answers: Answer) -> Outcome:
        return cls(answers=tuple(answers))

    @classmethod
    def reject(cls, reason: str = "") -> Outcome:
        return cls(rejected=True, reject_reason=reason)


@attrs.frozen
class Resolution:
    """The settled outcome of a bundle as reported to a caller (winner or replaying loser)."""

    pending_id: str
    status: ResolutionStatus
    answers: tuple[Answer, ...]
    rejected: bool
    reject_reason: str
    responded_at: datetime
    claimed: bool


SYNTHETIC_USER_ID: Final = "clarion:synthetic"


@attrs.frozen
class Identity:
    """Who is calling. ``None`` user id means an internal caller (no identity in context).

    A synthetic identity (auth disabled) and an internal caller are unscoped: they see
    everything (spec "Permissions", A4). Every other identity is scoped to its user id.
    """

    user_id: str | None
    synthetic: bool = False
    is_admin: bool = False
    # Who this is for the record of who resolved a bundle (issue #20): "user" or "agent" (an
    # agent's session token), and a display name. Not part of equality: the same user is the
    # same identity however it authenticated.
    kind: str = attrs.field(default="user", eq=False)
    display_name: str = attrs.field(default="", eq=False)

    @property
    def is_scoped(self) -> bool:
        return self.user_id is not None and not self.synthetic

    @classmethod
    def synthetic_admin(cls) -> Identity:
        return cls(
            user_id=SYNTHETIC_USER_ID,
            synthetic=True,
            is_admin=True,
            display_name="anonymous (auth disabled)",
        )

    @classmethod
    def internal(cls) -> Identity:
        return cls(user_id=None)

    @classmethod
    def user(cls, user_id: str, *, is_admin: bool = False, display_name: str = "") -> Identity:
        return cls(user_id=user_id, is_admin=is_admin, display_name=display_name)

    @classmethod
    def agent(cls, user_id: str, *, display_name: str = "") -> Identity:
        """An agent acting with its session's token, as the workspace owner ``user_id``."""
        return cls(user_id=user_id, kind="agent", display_name=display_name)
