"""Loser replay (R2, R2b): what a caller that lost the claim is told, from re-read rows."""

from __future__ import annotations

from collections.abc import Sequence

from clarion.domain.model import REJECTED, Resolution, resolution_status
from clarion.domain.rows import ClarificationRow, order_rows


def replay_winner(pending_id: str, rows: Sequence[ClarificationRow]) -> Resolution | None:
    """The winner's resolution reconstructed from durable rows, or None when there is no winner.

    R2b: ``status`` is the first answered/rejected row in D2 order; ``answers`` walk the rows in
    D2 order taking each stored response; ``reject_reason`` is always "" (never stored);
    ``responded_at`` is that first terminal row's ``updated_at`` (the claim's commit time).
    """
    ordered = order_rows(rows)
    winner = next((row for row in ordered if row.is_resolved), None)
    status = resolution_status(winner.status) if winner is not None else None
    if winner is None or status is None:
        return None
    answers = tuple(row.response for row in ordered if row.response is not None)
    return Resolution(
        pending_id=pending_id,
        status=status,
        answers=answers,
        rejected=status == REJECTED,
        reject_reason="",
        responded_at=winner.updated_at,
        claimed=False,
    )
