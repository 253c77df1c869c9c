"""The default resume dispatcher: the durable outbox.

A resume is recorded as a new turn of the agent's session carrying one user message — the
prompt — of type :data:`clarion.ports.resume.RESUME_MESSAGE_TYPE`. Whatever runs the agent
reads it from the transcript (``GET /sessions/{id}/resumes``) and continues. The resume is
accepted once both writes are durable; a failing write refuses it, so the resolver restores the
bundle and the answer can be given again (R7).

Starting the new turn supersedes the clarification's turn, exactly as upstream's successor turn
does; by then the bundle is terminal, so nothing active is lost.
"""

from __future__ import annotations

import functools
from typing import Any

import anyio
import structlog

from clarion.domain.errors import ClarionError
from clarion.domain.rows import response_metadata
from clarion.ports.host import HostRepository
from clarion.ports.resume import RESUME_MESSAGE_TYPE, ResumeRefused, ResumeRequest

log = structlog.get_logger(__name__)


def resume_metadata(request: ResumeRequest) -> dict[str, Any]:
    """What the outbox stores next to the prompt (never the answers' text in logs)."""
    return {
        "pending_id": request.pending_id,
        "clarification_turn_id": request.turn_id,
        "task_id": request.task_id,
        "rejected": request.rejected,
        "answers": [response_metadata(answer) for answer in request.answers],
    }


class OutboxResumeDispatcher:
    """:class:`clarion.ports.ResumeDispatcher` writing the resume through a host repository."""

    def __init__(self, host: HostRepository, limiter: anyio.CapacityLimiter | None = None) -> None:
        self._host = host
        self._limiter = limiter

    async def dispatch(self, request: ResumeRequest) -> None:
        """Record the resume durably.

        Raises:
            ResumeRefused: the session is gone or a write failed.
        """
        try:
            await anyio.to_thread.run_sync(
                functools.partial(self._record, request), limiter=self._limiter
            )
        except ResumeRefused:
            raise
        except Exception as exc:  # a driver error is a refusal, never a crash (R7)
            log.warning("resume.outbox_failed", pending_id=request.pending_id, exc_info=True)
            raise ResumeRefused("the resume could not be recorded") from exc

    def _record(self, request: ResumeRequest) -> None:
        try:
            turn = self._host.start_turn(request.session_id)
        except ClarionError as exc:
            raise ResumeRefused(f"cannot resume session: {exc.message}") from exc
        self._host.append_message(
            request.session_id,
            turn_id=turn.id,
            content=request.prompt,
            author_type="user",
            type=RESUME_MESSAGE_TYPE,
            metadata=resume_metadata(request),
            task_id=request.task_id or None,
        )
        log.info("resume.recorded", pending_id=request.pending_id, turn_id=turn.id)
