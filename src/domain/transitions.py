"""The transitions of a clarification row, written once (issue #16).

What each transition writes into a row's metadata, the metadata keys they write, and how new
transcript records (a bundle's rows, a resume message, any appended message) are built. Both
the in-memory reference and the SQL adapter use these functions, so the differential test
compares their *queries* — which rows a transition touches — not two copies of a rule. Which
rows change, and whether a change takes effect at all, stays with each adapter (for SQL, the
conditional ``UPDATE`` that writes these values; the claim is one such statement).

Every function is pure: metadata in, a new metadata dict out; ids and timestamps are passed in.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from clarion.domain.errors import ClaimError
from clarion.domain.host import Session
from clarion.domain.model import (
    ANSWERED,
    CLARIFICATION_REQUEST,
    PENDING,
    REJECTED,
    Answer,
    Question,
    SessionState,
)
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import (
    Asker,
    ClarificationRow,
    MessageRecord,
    clarification_metadata,
    response_metadata,
)

STATUS = "status"
RESPONSE = "response"
DELIVERY_PENDING = "response_delivery_pending"  # set by the claim until delivery is settled
DETACHED = "agent_disconnected"  # nobody waits live; the answer resumes through the dispatcher

Metadata = Mapping[str, Any]


def claimed_answer(
    row_id: str, question_id: str, terminal: str, responses: Mapping[str, Answer] | None
) -> Answer | None:
    """The answer a claimed row takes (None for a rejection), checked before anything counts.

    Raises:
        ClaimError: the row has no question id, or (answered) no response for it (R4a); the
            whole claim is then rolled back.
    """
    if not question_id:
        raise ClaimError(f"clarification message {row_id} is missing question_id")
    if terminal != ANSWERED:
        return None
    answer = (responses or {}).get(question_id)
    if answer is None:
        raise ClaimError(f"missing response for clarification question {question_id}")
    return answer


def claim_values(terminal: str, answer: Answer | None) -> dict[str, Any]:
    """The keys the claim sets: the terminal status, the delivery marker and — answered only —
    the stored response."""
    values: dict[str, Any] = {STATUS: terminal, DELIVERY_PENDING: True}
    if answer is not None:
        values[RESPONSE] = response_metadata(answer)
    return values


def claimed(metadata: Metadata, terminal: str, answer: Answer | None) -> dict[str, Any]:
    """The claim (facts §4.5)."""
    return {**metadata, **claim_values(terminal, answer)}


def delivered(metadata: Metadata) -> dict[str, Any]:
    """Finalize (facts §4.6): the delivery marker goes; status and response stay."""
    return {key: value for key, value in metadata.items() if key != DELIVERY_PENDING}


def restored(metadata: Metadata) -> dict[str, Any]:
    """Back to pending: the response and the marker go, ``agent_disconnected`` stays."""
    kept = {k: v for k, v in metadata.items() if k not in (RESPONSE, DELIVERY_PENDING)}
    return {**kept, STATUS: PENDING}


def ended(status: str) -> Callable[[Metadata], dict[str, Any]]:
    """Expire or cancel (facts §4.3, A9): the row takes ``status`` and is detached."""

    def change(metadata: Metadata) -> dict[str, Any]:
        return {**metadata, STATUS: status, DETACHED: True}

    return change


def detached(metadata: Metadata) -> dict[str, Any]:
    """Detach (facts §4.2): the row is marked ``agent_disconnected``, status untouched."""
    return {**metadata, DETACHED: True}


def rewritten(
    record: MessageRecord,
    metadata: Metadata,
    updated_at: datetime | None,
    resolved_by: ResolvedBy | None = None,
) -> MessageRecord:
    """The record after a transition wrote ``metadata`` (``updated_at`` kept when None).

    The claim passes who resolved (issue #20); any other transition keeps the stored record
    while the row stays answered or rejected and drops it otherwise (a restore to pending)."""
    kept = record.resolved_by if metadata.get(STATUS) in (ANSWERED, REJECTED) else None
    return attrs.evolve(
        record,
        metadata=metadata,
        updated_at=record.updated_at if updated_at is None else updated_at,
        resolved_by=kept if resolved_by is None else resolved_by,
    )


def is_exact_claim(
    wanted: Iterable[str], marked: Sequence[ClarificationRow], terminal: str
) -> bool:
    """Finalize's and the resume's precondition: the rows still marked are exactly the claimed
    ids (no duplicates) and all still carry ``terminal``."""
    wanted_ids = list(wanted)
    return (
        bool(wanted_ids)
        and len(set(wanted_ids)) == len(wanted_ids)
        and set(wanted_ids) == {row.id for row in marked}
        and all(row.status == terminal for row in marked)
    )


def new_session(
    session_id: str, task_id: str, now: datetime, *, is_primary: bool, agent_token_hash: str
) -> Session:
    """A new session of ``task_id``: running, created and updated at ``now``."""
    return Session(
        id=session_id,
        task_id=task_id,
        state=SessionState.RUNNING,
        is_primary=is_primary,
        created_at=now,
        updated_at=now,
        agent_token_hash=agent_token_hash,
    )


def new_message(
    *,
    message_id: str,
    session_id: str,
    task_id: str,
    turn_id: str,
    now: datetime,
    content: str,
    author_type: str,
    type: str,
    metadata: Metadata,
    asker: Asker | None = None,
) -> MessageRecord:
    """A new transcript record, created and updated at ``now``."""
    return MessageRecord(
        id=message_id,
        session_id=session_id,
        task_id=task_id,
        turn_id=turn_id,
        type=type,
        metadata=dict(metadata),
        created_at=now,
        updated_at=now,
        author_type=author_type,
        content=content,
        asker=asker,
    )


def new_bundle_records(
    *,
    pending_id: str,
    session_id: str,
    task_id: str,
    turn_id: str,
    questions: Sequence[Question],
    context: str,
    asker: Asker | None,
    new_id: Callable[[], str],
    now: Callable[[], datetime],
) -> list[MessageRecord]:
    """A new bundle (upstream facts §1.3): one pending clarification row per question, in
    question order, each with its own id and timestamp, all carrying ``asker``."""
    return [
        new_message(
            message_id=new_id(),
            session_id=session_id,
            task_id=task_id,
            turn_id=turn_id,
            now=now(),
            content=question.prompt,
            author_type="agent",
            type=CLARIFICATION_REQUEST,
            metadata=clarification_metadata(
                pending_id=pending_id,
                question=question,
                index=index,
                total=len(questions),
                context=context,
            ),
            asker=asker,
        )
        for index, question in enumerate(questions)
    ]


__all__ = [
    "DELIVERY_PENDING",
    "DETACHED",
    "RESPONSE",
    "STATUS",
    "claim_values",
    "claimed",
    "claimed_answer",
    "delivered",
    "detached",
    "ended",
    "is_exact_claim",
    "new_bundle_records",
    "new_message",
    "new_session",
    "restored",
    "rewritten",
]
