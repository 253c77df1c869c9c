"""The metadata each transition writes, computed from a row read inside the transaction.

The same changes as the in-memory reference (``clarion.adapters.memory.claims``), expressed
as pure functions from a stored record to its new metadata dict. Only the conditional
``UPDATE`` that writes them decides whether they take effect.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime
from types import MappingProxyType
from typing import Any

import attrs

from clarion.domain.errors import ClaimError
from clarion.domain.model import ANSWERED, PENDING, Answer
from clarion.domain.rows import (
    MessageRecord,
    parse_row,
    question_id_from_metadata,
    response_metadata,
)

DELIVERY_PENDING = "response_delivery_pending"
DETACHED = "agent_disconnected"


def _copy(record: MessageRecord) -> dict[str, Any]:
    return dict(record.metadata)


def claim_parameters(
    terminal: str, responses: Mapping[str, Answer] | None
) -> tuple[int, dict[str, Any]]:
    """Bound values of :func:`clarion.adapters.sql.statements.claim`: the number of answers
    and ``question_<n>``/``response_<n>`` pairs (the stored response shape, as JSON text)."""
    if terminal != ANSWERED:
        return 0, {}
    params: dict[str, Any] = {}
    for n, (question_id, answer) in enumerate(sorted((responses or {}).items())):
        params[f"question_{n}"] = question_id
        params[f"response_{n}"] = json.dumps(response_metadata(answer), ensure_ascii=False)
    return len(params) // 2, params


def check_claimed(
    record: MessageRecord, terminal: str, responses: Mapping[str, Answer] | None
) -> None:
    """A claimed row must have a question id and (answered) a response for it.

    Raises:
        ClaimError: otherwise (R4a); the caller rolls the whole claim back.
    """
    question_id = question_id_from_metadata(record.metadata)
    if not question_id:
        raise ClaimError(f"clarification message {record.id} is missing question_id")
    if terminal == ANSWERED and question_id not in (responses or {}):
        raise ClaimError(f"missing response for clarification question {question_id}")


def drop_delivery_marker(record: MessageRecord) -> dict[str, Any]:
    metadata = _copy(record)
    metadata.pop(DELIVERY_PENDING, None)
    return metadata


def restore(record: MessageRecord) -> dict[str, Any]:
    """Back to pending: the response and the marker go, ``agent_disconnected`` stays."""
    metadata = _copy(record)
    metadata["status"] = PENDING
    metadata.pop("response", None)
    metadata.pop(DELIVERY_PENDING, None)
    return metadata


def end(status: str) -> Callable[[MessageRecord], dict[str, Any]]:
    """Expire or cancel: the row takes ``status`` and is detached."""

    def change(record: MessageRecord) -> dict[str, Any]:
        metadata = _copy(record)
        metadata["status"] = status
        metadata[DETACHED] = True
        return metadata

    return change


def detach(record: MessageRecord) -> dict[str, Any]:
    metadata = _copy(record)
    metadata[DETACHED] = True
    return metadata


def evolve_record(
    record: MessageRecord, metadata: dict[str, Any], updated_at: datetime | None
) -> MessageRecord:
    """The record as the UPDATE left it (``updated_at`` unchanged when None)."""
    return attrs.evolve(
        record,
        metadata=MappingProxyType(metadata),
        updated_at=record.updated_at if updated_at is None else updated_at,
    )


def is_exact_claim(wanted: Iterable[str], marked: Sequence[MessageRecord], terminal: str) -> bool:
    """The marked rows are exactly the claimed ids (no duplicates) and all carry ``terminal``."""
    wanted_ids = list(wanted)
    return (
        bool(wanted_ids)
        and len(set(wanted_ids)) == len(wanted_ids)
        and set(wanted_ids) == {record.id for record in marked}
        and all(parse_row(record).status == terminal for record in marked)
    )
