"""The default resume dispatcher: the durable outbox.

A resume is recorded as a new turn of the agent's session carrying one user message — the
prompt — of type :data:`clarion.ports.resume.RESUME_MESSAGE_TYPE`. Whatever runs the agent
reads it from the transcript (``GET /sessions/{id}/resumes``) and continues.

The new turn, the resume message and the end of the claim's delivery marker are ONE transaction
(:meth:`clarion.ports.ClaimRepository.record_resume`): a crash leaves all of them or none, and
start-up recovery, which finalizes a claim only when its resume record exists, can never settle
a bundle whose agent was not told. A failing write refuses the resume, so the resolver restores
the bundle and the answer can be given again (R7).

Starting the new turn supersedes the clarification's turn, exactly as upstream's successor turn
does; by then the bundle is terminal, so nothing active is lost.
"""

from __future__ import annotations

from typing import Any

import structlog

from clarion.app.usecases.runner import Runner
from clarion.domain.errors import ClarionError, failure_fields
from clarion.domain.rows import ClarificationRow, response_metadata
from clarion.ports.claims import ClaimRepository, ResumeRecord
from clarion.ports.resume import ResumeRefused, ResumeRequest
from clarion.ports.threads import Offload

log = structlog.get_logger(__name__)


def resume_metadata(request: ResumeRequest) -> dict[str, Any]:
    """What the outbox stores next to the prompt (never the answers' text in logs); with
    the claim's signed ``receipt`` when there is one (issue #34, additive)."""
    metadata = {
        "pending_id": request.pending_id,
        "clarification_turn_id": request.turn_id,
        "task_id": request.task_id,
        "rejected": request.rejected,
        "answers": [response_metadata(answer) for answer in request.answers],
    }
    if request.receipt is not None:
        metadata["receipt"] = dict(request.receipt)
    return metadata


class OutboxResumeDispatcher:
    """:class:`clarion.ports.ResumeDispatcher` writing the resume, and finalizing the claim
    with it, through the claim repository."""

    def __init__(self, claims: ClaimRepository, offload: Offload | None = None) -> None:
        """``offload`` runs the store write (a Runner of its own when None)."""
        self._claims = claims
        self._offload = offload if offload is not None else Runner()

    async def dispatch(self, request: ResumeRequest) -> tuple[ClarificationRow, ...]:
        """Record the resume durably and finalize the claim, in one transaction; returns the
        finalized rows.

        Raises:
            ResumeRefused: the session is gone, the claim is no longer held, or the write
                failed (nothing was written).
        """
        try:
            return await self._offload(self._record, request)
        except ResumeRefused:
            raise
        except Exception as exc:  # a driver error is a refusal, never a crash (R7)
            log.warning(
                "resume.outbox_failed", pending_id=request.pending_id, **failure_fields(exc)
            )
            raise ResumeRefused("the resume could not be recorded") from exc

    def _record(self, request: ResumeRequest) -> tuple[ClarificationRow, ...]:
        record = ResumeRecord(
            session_id=request.session_id,
            task_id=request.task_id or None,
            prompt=request.prompt,
            metadata=resume_metadata(request),
        )
        try:
            rows = self._claims.record_resume(
                request.pending_id, request.status, request.claimed_ids, record
            )
        except ClarionError as exc:
            raise ResumeRefused(f"cannot resume session: {exc.message}") from exc
        if rows is None:
            raise ResumeRefused("the claim is no longer held; nothing was recorded")
        log.info("resume.recorded", pending_id=request.pending_id)
        return rows
