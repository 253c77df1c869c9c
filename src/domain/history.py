"""The resolved list and the audit export (issue #20): resolved bundles, newest first.

A bundle is *resolved* once its claim has settled: it has answered or rejected rows and none
of them still carries the delivery marker (a claim whose delivery is in flight may yet be
restored to pending, so it is not history yet). Its resolution time is the newest
``updated_at`` among its resolved rows — the claim's time — and the list runs by
(resolution time, pending id) descending, keyset-paged with the same opaque cursor shape and
limit rules as the pending list (L9, L10, L13). Visibility is the pending list's (L1c, M5a):
foreign and absent are the same.

Issue #30: with ``include_closed`` the list also holds the bundles that left the pending list
without an answer — *closed* (:class:`ClosedBundle`), with a reason and the time they closed,
both derived when read from durable state (:func:`closed_reason`): nothing is written when a
bundle is superseded (facts §4.4, D4), so the history reads the turns instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any, Final, Literal

import attrs

from clarion.domain.cursor import encode_cursor
from clarion.domain.listing import (
    BUNDLE_OVERHEAD,
    DEFAULT_LIMIT,
    QUESTION_OVERHEAD,
    AskedBundle,
    BundlePage,
    ListedBundle,
    Visibility,
    listed_bundle,
    questions_bytes,
    text_bytes,
)
from clarion.domain.model import CANCELLED, EXPIRED, Resolution
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import ClarificationRow, order_rows


@attrs.frozen
class ResolvedQuery:
    """One page request of resolved bundles: strictly older than ``before`` (a decoded
    cursor), resolved at or after ``resolved_since`` (the audit export's ``--since``)."""

    visibility: Visibility
    limit: int = DEFAULT_LIMIT
    before: tuple[datetime, str] | None = None
    resolved_since: datetime | None = None
    include_closed: bool = False  # issue #30: also the bundles closed without an answer


# Issue #30: why a bundle left the pending list without an answer.
ClosedReason = Literal["superseded", "session_ended", "expired", "cancelled"]
SUPERSEDED: Final = "superseded"  # a newer turn of its session started (no write, facts §4.4)
SESSION_ENDED: Final = "session_ended"  # its session reached a terminal state
EXPIRED_REASON: Final = EXPIRED  # a deadline (or an operator's expire) ended it
CANCELLED_REASON: Final = CANCELLED  # an operator cancelled it (A9)
CLOSED_REASONS: tuple[ClosedReason, ...] = (
    SUPERSEDED,
    SESSION_ENDED,
    EXPIRED_REASON,
    CANCELLED_REASON,
)
CLOSED = "closed"  # the history status of a bundle closed without an answer
# What each reason means to a person (the CLI's and the inbox's wording, docs/web-inbox.md).
CLOSED_WHY = {
    SUPERSEDED: "the agent moved on to a newer turn",
    SESSION_ENDED: "the session ended",
    EXPIRED_REASON: "it expired",
    CANCELLED_REASON: "it was cancelled",
}


@attrs.frozen
class SessionFacts:
    """What deciding a bundle's closing reads besides its rows: whether its session is in a
    terminal state and since when (the session's ``updated_at``), and — when the bundle's turn
    is no longer the current one — when the turn after it started (None otherwise)."""

    terminal: bool
    state_changed_at: datetime | None
    next_turn_started_at: datetime | None


def as_closed_reason(text: str) -> ClosedReason:
    """``text`` (a store's column) as a closing reason (#32: typed, like a resolution's status).

    Raises:
        ValueError: ``text`` is none of :data:`CLOSED_REASONS`.
    """
    for reason in CLOSED_REASONS:
        if text == reason:
            return reason
    raise ValueError(f"not a closing reason: {text!r}")


def closed_reason(
    rows: Sequence[ClarificationRow], facts: SessionFacts
) -> tuple[ClosedReason, datetime] | None:
    """Why and when a bundle whose rows are ``rows`` closed without an answer; None when it
    did not (it is still active, was answered or rejected, or is being delivered).

    - rows ``cancelled`` (A9): ``cancelled``, at their write;
    - rows ``expired``: ``session_ended`` when the session is terminal and entered that state
      no later than the expiry (the lifecycle expires a terminal session's bundles, facts
      §4.3), otherwise ``expired`` (a deadline); at the expiry's write;
    - pending rows on a turn that is no longer current: ``superseded``, when the next turn
      started (nothing was written: D4, facts §4.4);
    - pending rows on the current turn of a terminal session: ``session_ended``, when the
      session entered that state.
    """
    if not rows or any(row.is_resolved or row.delivery_pending for row in rows):
        return None
    ended = [row for row in rows if row.status in (EXPIRED, CANCELLED)]
    if ended:
        latest = max(ended, key=lambda row: row.updated_at)
        if latest.status == CANCELLED:
            return CANCELLED_REASON, latest.updated_at
        changed = facts.state_changed_at
        if facts.terminal and changed is not None and changed <= latest.updated_at:
            return SESSION_ENDED, latest.updated_at
        return EXPIRED_REASON, latest.updated_at
    if not any(row.is_pending for row in rows):
        return None  # a status this version does not know: neither pending nor closed
    if facts.next_turn_started_at is not None:
        return SUPERSEDED, facts.next_turn_started_at
    if facts.terminal and facts.state_changed_at is not None:
        return SESSION_ENDED, facts.state_changed_at
    return None


@attrs.frozen
class ClosedBundle(AskedBundle):
    """One bundle closed without an answer (issue #30): what was asked, why it closed
    (one of :data:`CLOSED_REASONS`) and when. It sits in the history at ``closed_at``."""

    reason: ClosedReason
    closed_at: datetime

    @property
    def resolved_at(self) -> datetime:
        """The history's position (named as the resolved entries' for one keyset order)."""
        return self.closed_at

    @property
    def cursor(self) -> str:
        return encode_cursor(self.closed_at, self.pending_id)


def _asked(listed: ListedBundle) -> dict[str, Any]:
    """The fields of what ``listed`` asked, for a history entry of the same bundle."""
    return {field.name: getattr(listed, field.name) for field in attrs.fields(AskedBundle)}


def closed_bundle(
    pending_id: str, task_id: str, rows: Sequence[ClarificationRow], facts: SessionFacts
) -> ClosedBundle | None:
    """The history view of a bundle closed without an answer; None when it is not closed."""
    closed = closed_reason(rows, facts)
    if closed is None:
        return None
    return closed_bundle_at(pending_id, task_id, rows, *closed)


def closed_bundle_at(
    pending_id: str,
    task_id: str,
    rows: Sequence[ClarificationRow],
    reason: ClosedReason,
    closed_at: datetime,
) -> ClosedBundle:
    """The history view of a bundle known to have closed for ``reason`` at ``closed_at`` —
    decided by :func:`closed_reason` here, or by a store's own query (SQL decides it in the
    statement that pages the history)."""
    asked = _asked(listed_bundle(pending_id, task_id, order_rows(rows)))
    return ClosedBundle(**asked, reason=reason, closed_at=closed_at)


@attrs.frozen
class ResolvedBundle(AskedBundle):
    """One resolved bundle: what was asked, the outcome (R2b's replay of the winner), and who
    resolved it, where and when."""

    resolution: Resolution
    resolved_by: ResolvedBy

    @property
    def resolved_at(self) -> datetime:
        return self.resolution.responded_at

    @property
    def cursor(self) -> str:
        return encode_cursor(self.resolved_at, self.pending_id)


HistoryEntry = ResolvedBundle | ClosedBundle


@attrs.frozen
class ResolvedPage(BundlePage[HistoryEntry]):
    """A page in (resolution time, pending id) descending order; ``has_more`` when older
    resolved bundles exist."""


# The resolution's and the resolver's keys, statuses and timestamps in JSON.
RESOLUTION_OVERHEAD = 320


def resolved_bundle_bytes(bundle: HistoryEntry) -> int:
    """About how many bytes ``bundle`` takes in the resolved list's JSON (#29 F8's budget):
    as :func:`~clarion.domain.listing.listed_bundle_bytes`, plus the answers (selected
    option ids, free text), the rejection reason and who resolved it (a closed bundle: its
    reason in place of them)."""
    if isinstance(bundle, ClosedBundle):
        texts = [bundle.pending_id, bundle.task_id, bundle.session_id, bundle.context]
        return (
            BUNDLE_OVERHEAD
            + RESOLUTION_OVERHEAD
            + sum(text_bytes(t) for t in texts)
            + questions_bytes(bundle.questions)
        )
    resolution, by = bundle.resolution, bundle.resolved_by
    texts = [
        bundle.pending_id,
        bundle.task_id,
        bundle.session_id,
        bundle.context,
        resolution.reject_reason,
        by.identity_id,
        by.display_name,
    ]
    answers = 0
    for answer in resolution.answers:
        answers += QUESTION_OVERHEAD + text_bytes(answer.question_id)
        answers += text_bytes(answer.custom_text)
        answers += sum(text_bytes(option) + 1 for option in answer.selected_options)
    return (
        BUNDLE_OVERHEAD
        + RESOLUTION_OVERHEAD
        + sum(text_bytes(t) for t in texts)
        + questions_bytes(bundle.questions)
        + answers
    )


def is_settled(rows: Sequence[ClarificationRow]) -> bool:
    """Resolved rows exist and none still waits for its delivery to settle."""
    return any(row.is_resolved for row in rows) and not any(row.delivery_pending for row in rows)


def resolution_key(rows: Sequence[ClarificationRow]) -> datetime:
    """The bundle's resolution time: the newest ``updated_at`` of its resolved rows."""
    return max(row.updated_at for row in rows if row.is_resolved)


def resolved_bundle(
    pending_id: str, task_id: str, rows: Sequence[ClarificationRow]
) -> ResolvedBundle | None:
    """The history view of a bundle's rows; None when it is not settled."""
    if not is_settled(rows):
        return None
    ordered = order_rows(rows)
    winner = replay_winner(pending_id, ordered)
    if winner is None:
        return None
    resolved_at = resolution_key(ordered)
    latest = max((row for row in ordered if row.is_resolved), key=lambda row: row.updated_at)
    return ResolvedBundle(
        **_asked(listed_bundle(pending_id, task_id, ordered)),
        resolution=attrs.evolve(winner, responded_at=resolved_at),
        resolved_by=latest.resolved_by or ResolvedBy.unknown(resolved_at),
    )


def before_position(bundle: HistoryEntry, query: ResolvedQuery) -> bool:
    """Strictly older than the cursor and at/after ``resolved_since``."""
    if query.resolved_since is not None and bundle.resolved_at < query.resolved_since:
        return False
    return query.before is None or (bundle.resolved_at, bundle.pending_id) < query.before


__all__ = [
    "CANCELLED_REASON",
    "CLOSED",
    "CLOSED_REASONS",
    "CLOSED_WHY",
    "EXPIRED_REASON",
    "SESSION_ENDED",
    "SUPERSEDED",
    "ClosedBundle",
    "ClosedReason",
    "HistoryEntry",
    "ResolvedBundle",
    "ResolvedPage",
    "ResolvedQuery",
    "SessionFacts",
    "as_closed_reason",
    "before_position",
    "closed_bundle",
    "closed_bundle_at",
    "closed_reason",
    "is_settled",
    "resolution_key",
    "resolved_bundle",
]
