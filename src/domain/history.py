"""The resolved list and the audit export (issue #20): resolved bundles, newest first.

A bundle is *resolved* once its claim has settled: it has answered or rejected rows and none
of them still carries the delivery marker (a claim whose delivery is in flight may yet be
restored to pending, so it is not history yet). Its resolution time is the newest
``updated_at`` among its resolved rows — the claim's time — and the list runs by
(resolution time, pending id) descending, keyset-paged with the same opaque cursor shape and
limit rules as the pending list (L9, L10, L13). Visibility is the pending list's (L1c, M5a):
foreign and absent are the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import attrs

from clarion.domain.cursor import encode_cursor
from clarion.domain.listing import (
    BUNDLE_OVERHEAD,
    DEFAULT_LIMIT,
    QUESTION_OVERHEAD,
    ListedQuestion,
    Visibility,
    listed_bundle,
    questions_bytes,
    text_bytes,
)
from clarion.domain.model import Resolution
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


@attrs.frozen
class ResolvedBundle:
    """One resolved bundle: what was asked, the outcome (R2b's replay of the winner), and who
    resolved it, where and when."""

    pending_id: str
    task_id: str
    session_id: str
    created_at: datetime
    context: str
    questions: tuple[ListedQuestion, ...]
    resolution: Resolution
    resolved_by: ResolvedBy

    @property
    def resolved_at(self) -> datetime:
        return self.resolution.responded_at

    @property
    def cursor(self) -> str:
        return encode_cursor(self.resolved_at, self.pending_id)


@attrs.frozen
class ResolvedPage:
    """A page in (resolution time, pending id) descending order; ``has_more`` when older
    resolved bundles exist."""

    bundles: tuple[ResolvedBundle, ...]
    has_more: bool

    @property
    def next_cursor(self) -> str:
        return self.bundles[-1].cursor if self.has_more and self.bundles else ""


# The resolution's and the resolver's keys, statuses and timestamps in JSON.
RESOLUTION_OVERHEAD = 320


def resolved_bundle_bytes(bundle: ResolvedBundle) -> int:
    """About how many bytes ``bundle`` takes in the resolved list's JSON (#29 F8's budget):
    as :func:`~clarion.domain.listing.listed_bundle_bytes`, plus the answers (selected
    option ids, free text), the rejection reason and who resolved it."""
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
    listed = listed_bundle(pending_id, task_id, ordered)
    return ResolvedBundle(
        pending_id=pending_id,
        task_id=task_id,
        session_id=listed.session_id,
        created_at=listed.created_at,
        context=listed.context,
        questions=listed.questions,
        resolution=attrs.evolve(winner, responded_at=resolved_at),
        resolved_by=latest.resolved_by or ResolvedBy.unknown(resolved_at),
    )


def before_position(bundle: ResolvedBundle, query: ResolvedQuery) -> bool:
    """Strictly older than the cursor and at/after ``resolved_since``."""
    if query.resolved_since is not None and bundle.resolved_at < query.resolved_since:
        return False
    return query.before is None or (bundle.resolved_at, bundle.pending_id) < query.before


__all__ = [
    "ResolvedBundle",
    "ResolvedPage",
    "ResolvedQuery",
    "before_position",
    "is_settled",
    "resolution_key",
    "resolved_bundle",
]
