"""The durable per-question row, read from message metadata, and the bundle built from rows.

Every reader (listing, validation, claim, replay) goes through :func:`parse_row`, so they can
never disagree on a question's id (fixes upstream §9.13) or on what counts as pending.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

import attrs

from clarion.domain.approvals import (
    NO_CANDIDATES,
    ApprovalRecord,
    Candidates,
    Decision,
    decision_of_answer,
)
from clarion.domain.model import (
    ANSWERED,
    CLARIFICATION_REQUEST,
    PENDING,
    REJECTED,
    Answer,
    Identity,
    Option,
    Question,
    is_pendingish,
)
from clarion.domain.resolved_by import ResolvedBy

# A JSON object as a reader may hold it; ``dict`` first, so the usual case is decided before
# the slower abstract-class check.
_OBJECT = (dict, Mapping)

ASKED_BY_REQUEST = "request"  # created by a request that returns at once (REST ``POST /request``)
ASKED_BY_ASK = "ask"  # created by a blocking ask (MCP): only that ask call waits live


@attrs.frozen
class Asker:
    """Who asked a bundle, stored with its rows when it is created (issue #13).

    ``user_id`` is the asking identity's user id ("" for an internal caller); ``via`` says how
    it asked: :data:`ASKED_BY_REQUEST` (its later ``wait`` is the live waiter) or
    :data:`ASKED_BY_ASK` (only the blocking ask itself waits live)."""

    user_id: str
    via: str


def is_askers_wait(asker: Asker | None, identity: Identity) -> bool:
    """Issue #13: whether ``identity``'s wait on a bundle asked by ``asker`` is the live
    waiter. With an unscoped identity (auth disabled, internal) every wait is; otherwise only
    the wait of the user who created the bundle by a request. A bundle without a stored asker
    (created before the asker was stored) has no live waiter among scoped callers."""
    if not identity.is_scoped:
        return True
    return asker is not None and asker.via == ASKED_BY_REQUEST and asker.user_id == identity.user_id


@attrs.frozen
class MessageRecord:
    """A stored ``task_session_messages`` row as repositories hold it (metadata kept raw;
    ``asker`` on clarification rows only, None on other rows and on rows stored before it
    was; ``resolved_by`` on claimed rows)."""

    id: str
    session_id: str
    task_id: str
    turn_id: str
    type: str
    metadata: Mapping[str, Any]
    created_at: datetime
    updated_at: datetime
    author_type: str = "agent"
    content: str = ""
    asker: Asker | None = None
    # Who resolved the row, as the claim stored it (its time is ``updated_at``); None when not
    # stored: pending rows, other rows, rows resolved before it was recorded (issue #20).
    resolved_by: ResolvedBy | None = None


@attrs.frozen
class ClarificationRow:
    """The view of one clarification row that every rule in Clarion reads."""

    id: str
    pending_id: str
    session_id: str
    task_id: str  # may be "" on legacy rows (M5)
    turn_id: str
    question_id: str  # flat ``question_id``, else ``question.id``, else ""
    question: Question | None  # None when the ``question`` metadata is absent or unparseable
    question_index: int  # 0 when absent or unparseable (D2)
    status: str | None  # raw stored status; None when absent or JSON null
    response: Answer | None  # parsed ``response`` object; None when absent or not an object
    context: str
    created_at: datetime
    updated_at: datetime
    detached: bool
    delivery_pending: bool
    asker: Asker | None = None
    # Who resolved the row (issue #20): on answered and rejected rows only ("unknown" when
    # resolved before it was recorded), None otherwise.
    resolved_by: ResolvedBy | None = None

    @property
    def is_pending(self) -> bool:
        return is_pendingish(self.status)

    @property
    def is_resolved(self) -> bool:
        return self.status in (ANSWERED, REJECTED)

    @property
    def display_status(self) -> str:
        """L4a: an absent or empty status is reported as ``pending``; any other value verbatim."""
        return display_status(self.status)


def display_status(status: str | None) -> str:
    """L4a: an absent or empty status is reported as ``pending``; any other value verbatim."""
    return PENDING if status is None or status == "" else status


def context_from_metadata(metadata: Mapping[str, Any]) -> str:
    """The row's ``context`` string ("" when absent or not a string)."""
    return _string(metadata.get("context"))


def is_truthy(value: Any) -> bool:
    """Upstream's truthy flag: JSON true, the strings "true"/"1", and numeric 1."""
    if value is True:
        return True
    if isinstance(value, bool) or value is None:
        return False
    if isinstance(value, int):
        return value == 1
    return isinstance(value, str) and value in ("true", "1")


def question_id_from_metadata(metadata: Mapping[str, Any]) -> str:
    """The one reading of a row's question id: flat ``question_id``, else ``question.id``."""
    flat = metadata.get("question_id")
    if isinstance(flat, str) and flat:
        return flat
    nested = metadata.get("question")
    if isinstance(nested, _OBJECT):
        nested_id = nested.get("id")
        if isinstance(nested_id, str):
            return nested_id
    return ""


def question_index_from_metadata(metadata: Mapping[str, Any]) -> int:
    """D2: numeric ``question_index`` (int or float), else 0."""
    raw = metadata.get("question_index")
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return 0
    try:
        return int(raw)
    except (OverflowError, ValueError):  # inf / nan
        return 0


def _string(value: Any) -> str:
    return value if isinstance(value, str) else ""


def status_from_metadata(metadata: Mapping[str, Any]) -> str | None:
    """The raw status: None when absent or null; non-string values as their JSON text."""
    raw = metadata.get("status")
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw
    return json.dumps(raw)


def parse_question(raw: Any, question_id: str) -> Question | None:
    """Parse ``metadata.question``; options that are not objects are skipped (L15)."""
    if not isinstance(raw, _OBJECT):
        return None
    options_raw = raw.get("options")
    options: list[Option] = []
    if isinstance(options_raw, list):
        for entry in options_raw:
            if isinstance(entry, _OBJECT):
                options.append(
                    Option(
                        option_id=_string(entry.get("option_id")),
                        label=_string(entry.get("label")),
                        description=_string(entry.get("description")),
                    )
                )
    return Question(
        id=question_id,
        prompt=_string(raw.get("prompt")),
        title=_string(raw.get("title")),
        options=tuple(options),
    )


def parse_response(raw: Any, question_id: str) -> Answer | None:
    """Parse a stored ``response`` object; a non-object response yields None (R2b)."""
    if not isinstance(raw, _OBJECT):
        return None
    selected = raw.get("selected_options")
    options = tuple(s for s in selected if isinstance(s, str)) if isinstance(selected, list) else ()
    return Answer(
        question_id=question_id,
        selected_options=options,
        custom_text=_string(raw.get("custom_text")),
    )


def parse_row(record: MessageRecord) -> ClarificationRow:
    """Build the clarification view of a stored message row."""
    metadata = record.metadata
    question_id = question_id_from_metadata(metadata)
    status = status_from_metadata(metadata)
    resolved = status in (ANSWERED, REJECTED)
    return ClarificationRow(
        id=record.id,
        pending_id=_string(metadata.get("pending_id")),
        session_id=record.session_id,
        task_id=record.task_id,
        turn_id=record.turn_id,
        question_id=question_id,
        question=parse_question(metadata.get("question"), question_id),
        question_index=question_index_from_metadata(metadata),
        status=status,
        response=parse_response(metadata.get("response"), question_id),
        context=context_from_metadata(metadata),
        created_at=record.created_at,
        updated_at=record.updated_at,
        detached=is_truthy(metadata.get("agent_disconnected")),
        delivery_pending=is_truthy(metadata.get("response_delivery_pending")),
        asker=record.asker,
        resolved_by=(record.resolved_by or ResolvedBy.unknown()).stamped(record.updated_at)
        if resolved
        else None,
    )


def d2_key(row: ClarificationRow) -> tuple[int, datetime, str]:
    """D2: ``question_index``, then ``created_at``, then message ``id`` — a total order."""
    return (row.question_index, row.created_at, row.id)


def order_rows(rows: Iterable[ClarificationRow]) -> tuple[ClarificationRow, ...]:
    """Rows in D2 order (a new tuple; the input is not changed)."""
    return tuple(sorted(rows, key=d2_key))


def bundle_questions(rows: Sequence[ClarificationRow]) -> tuple[Question, ...]:
    """The bundle's question set in D2 order; an unparseable question keeps only its id."""
    return tuple(row.question or Question(id=row.question_id) for row in order_rows(rows))


@attrs.frozen
class Bundle:
    """A bundle as read by ``pending_id``: its clarification rows plus its session's task id.

    ``rows`` are in D2 order. ``session_task_id`` is the session row's ``task_id`` (None when
    the session row is missing), used by M5 when the rows carry no task id.

    Issue #33: ``approval`` holds an approval request's terms (None on a plain question) and
    ``candidates`` its assignment (empty: anyone who sees the task may decide), both read from
    the extras a store keeps beside the rows.
    """

    pending_id: str
    rows: tuple[ClarificationRow, ...]
    session_task_id: str | None
    approval: ApprovalRecord | None = None
    candidates: Candidates = NO_CANDIDATES

    @property
    def session_id(self) -> str:
        return self.rows[0].session_id if self.rows else ""

    @property
    def task_id(self) -> str:
        """M5: the rows' task id (the smallest non-empty one if they disagree), else the
        session row's; "" when neither yields one (M5a)."""
        return resolve_task_id((row.task_id for row in self.rows), self.session_task_id)

    @property
    def questions(self) -> tuple[Question, ...]:
        return bundle_questions(self.rows)

    @property
    def context(self) -> str:
        return first_context(self.rows)

    @property
    def asker(self) -> Asker | None:
        """Who asked the bundle (every row of it carries the same); None when not stored."""
        return next((row.asker for row in self.rows if row.asker is not None), None)

    @property
    def created_at(self) -> datetime:
        """D1: the minimum ``created_at`` of the bundle's rows."""
        return min(row.created_at for row in self.rows)

    @property
    def decision(self) -> Decision | None:
        """Issue #33: an approval request's decision as its rows record it (a rejection, as a
        generic client may send, denies); None for a plain question or while undecided."""
        if self.approval is None:
            return None
        for row in self.rows:
            if row.is_resolved:
                return decision_of_answer(row.response, row.status == REJECTED)
        return None


def resolve_task_id(row_task_ids: Iterable[str], session_task_id: str | None) -> str:
    """M5 as one rule for every reader: smallest non-empty row task id, else the session's."""
    non_empty = [task_id for task_id in row_task_ids if task_id]
    if non_empty:
        return min(non_empty)
    return session_task_id or ""


def first_context(rows: Sequence[ClarificationRow]) -> str:
    """The bundle context: the earliest row's ``context`` string."""
    ordered = sorted(rows, key=lambda r: (r.created_at, r.id))
    return ordered[0].context if ordered else ""


def make_bundle(
    pending_id: str,
    rows: Iterable[ClarificationRow],
    session_task_id: str | None,
    approval: ApprovalRecord | None = None,
    candidates: Candidates = NO_CANDIDATES,
) -> Bundle:
    return Bundle(
        pending_id=pending_id,
        rows=order_rows(rows),
        session_task_id=session_task_id,
        approval=approval,
        candidates=candidates,
    )


def pending_ids_in_creation_order(rows: Iterable[ClarificationRow]) -> tuple[str, ...]:
    """The distinct non-empty pending ids of ``rows``, ordered by each one's first row
    (``created_at``, then ``id``; ties by pending id): the order of ``active_pending_ids``."""
    first_seen: dict[str, tuple[datetime, str]] = {}
    for row in rows:
        if row.pending_id:
            key = (row.created_at, row.id)
            first_seen[row.pending_id] = min(first_seen.get(row.pending_id, key), key)
    return tuple(sorted(first_seen, key=lambda pid: (first_seen[pid], pid)))


def question_json(question: Question) -> dict[str, Any]:
    """A question as stored in ``metadata.question`` and sent on the wire (facts §2.1): every
    key always present."""
    return {
        "id": question.id,
        "title": question.title,
        "prompt": question.prompt,
        "options": [
            {
                "option_id": option.option_id,
                "label": option.label,
                "description": option.description,
            }
            for option in question.options
        ],
    }


def clarification_metadata(
    *,
    pending_id: str,
    question: Question,
    index: int,
    total: int,
    context: str,
) -> dict[str, Any]:
    """The metadata of a new clarification row (upstream facts §1.3)."""
    return {
        "pending_id": pending_id,
        "question_id": question.id,
        "question": question_json(question),
        "question_index": index,
        "question_total": total,
        "context": context,
        "status": PENDING,
    }


def response_metadata(answer: Answer) -> dict[str, Any]:
    """How a normalized answer is stored in ``metadata.response`` (every key always written)."""
    return {
        "question_id": answer.question_id,
        "selected_options": list(answer.selected_options),
        "custom_text": answer.custom_text,
    }


__all__ = [
    "ASKED_BY_ASK",
    "ASKED_BY_REQUEST",
    "CLARIFICATION_REQUEST",
    "Asker",
    "Bundle",
    "ClarificationRow",
    "MessageRecord",
    "bundle_questions",
    "clarification_metadata",
    "d2_key",
    "first_context",
    "is_askers_wait",
    "is_truthy",
    "make_bundle",
    "order_rows",
    "parse_row",
    "pending_ids_in_creation_order",
    "question_id_from_metadata",
    "question_json",
    "resolve_task_id",
    "response_metadata",
]
