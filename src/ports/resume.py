"""Resuming an agent that is no longer waiting when its answer arrives (spec R7, R9)."""

from __future__ import annotations

from typing import Protocol

import attrs

from clarion.domain.model import Answer


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


RESUME_MESSAGE_TYPE = "resume"
"""The transcript message type under which a durable outbox records a resume prompt."""


class ResumeRefused(Exception):
    """The dispatcher did not accept the resume; the claim is rolled back and can be retried."""


class ResumeDispatcher(Protocol):
    """Hands a resume prompt to whatever runs the agent.

    Contract: ``dispatch`` returns once the resume is *accepted* (durably recorded, or
    acknowledged by the receiver) and raises :class:`ResumeRefused` when it was not. The caller
    bounds the wait (30 s) and treats a timeout as a refusal. A dispatcher must not accept a
    resume it will not deliver.
    """

    async def dispatch(self, request: ResumeRequest) -> None: ...
