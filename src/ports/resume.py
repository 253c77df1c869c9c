"""Resuming an agent that is no longer waiting when its answer arrives (spec R7, R9)."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

import attrs

from clarion.domain.errors import ClarionError
from clarion.domain.model import RESUME, Answer
from clarion.domain.rows import ClarificationRow


@attrs.frozen
class ResumeRequest:
    """Everything a dispatcher needs to resume the agent with the answer."""

    task_id: str  # M5-resolved (fixes upstream §9.28)
    session_id: str
    pending_id: str
    turn_id: str  # the clarification's turn
    prompt: str  # the resume prompt (upstream facts §2.10)
    answers: tuple[Answer, ...]
    rejected: bool
    # The claim being delivered: its rows and the timestamp it wrote. A dispatcher that
    # records the resume in the same store finalizes exactly these rows with it.
    claimed_ids: tuple[str, ...] = ()
    claimed_at: datetime | None = None
    # Issue #34: the claim's signed receipt (docs/receipts.md); None when none is signed.
    receipt: Mapping[str, Any] | None = None

    @property
    def status(self) -> str:
        """The claimed rows' terminal status."""
        return "rejected" if self.rejected else "answered"

    @property
    def idempotency_key(self) -> str:
        """Stable for one claim (every retry of it carries the same key), new for a new claim
        of the same bundle after a roll-back (the claim stamps a new ``claimed_at``)."""
        stamp = self.claimed_at.isoformat() if self.claimed_at is not None else ""
        digest = hashlib.sha256(f"{self.pending_id}\n{stamp}".encode()).hexdigest()
        return f"clarion-resume-{digest[:32]}"


RESUME_MESSAGE_TYPE = RESUME
"""The transcript message type under which a durable outbox records a resume prompt."""


class ResumeRefused(ClarionError):
    """The dispatcher did not accept the resume; the claim is rolled back and can be retried
    (the resolver turns it into a :class:`~clarion.domain.errors.DeliveryError`)."""


class ResumeDispatcher(Protocol):
    """Hands a resume prompt to whatever runs the agent.

    Contract: ``dispatch`` returns once the resume is *accepted* (durably recorded, or
    acknowledged by the receiver) and raises :class:`ResumeRefused` when it was not. The caller
    bounds the wait (30 s) and treats a timeout as a refusal. A dispatcher must not accept a
    resume it will not deliver.

    A dispatcher that records the resume in the claim store itself (the outbox) finalizes the
    claim in the same transaction and returns the finalized rows; every other dispatcher
    returns None and the caller finalizes after the acceptance.
    """

    async def dispatch(self, request: ResumeRequest) -> tuple[ClarificationRow, ...] | None: ...
