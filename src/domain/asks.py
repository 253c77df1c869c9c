"""Agent asks as durable records (issue #28): what lets an agent's wait survive its call.

An :class:`AskRecord` is written when an agent asks over MCP. It points at the bundle the ask
created (never a copy of the answer: the claimed rows stay the one source of truth, and the
resume record mirrors them) and says who asked and how the ask can be found again:

- ``owner``: the credential that asked (the identity plus a digest of its token), so only
  that credential can read the record back — as an MCP task (``tasks/get``) or by retrying;
- ``scope``: where the ask was made (one in-session endpoint's session, or the agent
  endpoint as a whole);
- ``retry_key``: what makes a later call *the same ask*: the idempotency key the client sent
  in the call's ``_meta``, else a digest of the exact arguments. Turns do not end an ask's
  identity: a late answer recorded by the outbox starts a turn itself, and the retry that
  picks that answer up must still find its ask.

A record is ``open`` until a call has handed the agent its outcome (``returned``) or the agent
said it no longer wants it (``cancelled``, the MCP ``tasks/cancel``). A retry finds the open
record, or a returned one when it carries the same idempotency key, and gets that bundle's
wait or stored outcome instead of a second question.
"""

from __future__ import annotations

import enum
import hashlib
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any, Final

import attrs

from clarion.domain.history import SessionFacts, closed_reason
from clarion.domain.rows import ClarificationRow

IDEMPOTENCY_PREFIX: Final = "key:"
ARGUMENTS_PREFIX: Final = "args:"
MAX_IDEMPOTENCY_KEY: Final = 200


class AskState(enum.Enum):
    """Where an agent's ask stands from the agent's point of view."""

    OPEN = "open"  # the agent has not received an outcome yet
    RETURNED = "returned"  # a call handed the agent its outcome
    CANCELLED = "cancelled"  # the agent said it no longer wants the answer


@attrs.frozen
class AskRecord:
    """One agent ask; ``id`` is also its MCP task id (unguessable: it is a bearer of state)."""

    id: str
    owner: str
    scope: str
    retry_key: str
    pending_id: str
    session_id: str
    created_at: datetime
    state: AskState = AskState.OPEN
    as_task: bool = False  # created as an MCP task (the call returned at once)

    @property
    def keyed(self) -> bool:
        """True when the client named the ask with an idempotency key."""
        return self.retry_key.startswith(IDEMPOTENCY_PREFIX)


@attrs.frozen
class AskProbe:
    """An ask's record and, from the same read, whether its bundle surely still waits
    (:meth:`clarion.ports.asks.AskRecords.probe`): ``waits`` is True only when the store saw,
    in one snapshot of the bundle's rows and session, what :func:`still_waiting` calls waiting;
    False when the bundle may be settled or the store cannot tell. A ``tasks/get`` poll of a
    question nobody has answered yet needs nothing more (issue #35)."""

    record: AskRecord
    waits: bool


def arguments_digest(arguments: Mapping[str, Any]) -> str:
    """A digest of a call's exact arguments (key order does not matter, everything else does)."""
    text = json.dumps(arguments, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode()).hexdigest()


def retry_key(idempotency_key: str, arguments: Mapping[str, Any]) -> str:
    """What identifies an ask among its scope's asks: the client's idempotency key when it
    sent one, else the arguments' digest."""
    if idempotency_key:
        return IDEMPOTENCY_PREFIX + idempotency_key
    return ARGUMENTS_PREFIX + arguments_digest(arguments)


def owner_key(user_id: str, credential: str) -> str:
    """The owner of an ask: the identity and the credential it used ("" for each when
    authentication is disabled — every caller is then the same synthetic identity)."""
    return f"{user_id}\n{credential}"


def still_waiting(rows: Sequence[ClarificationRow], facts: SessionFacts | None) -> bool:
    """Whether an ask on the bundle whose rows are ``rows`` still waits for its outcome, from
    one snapshot of the rows and of their session's ``facts`` (None: not read): a row is being
    delivered (the claim may yet be restored), or no row was answered or rejected and the
    bundle is still open — a row is pending and it did not close
    (:func:`~clarion.domain.history.closed_reason`). A bundle without rows is gone: it does
    not wait."""
    if any(row.delivery_pending for row in rows):
        return True
    if not rows or any(row.is_resolved for row in rows):
        return False
    closed = closed_reason(rows, facts) if facts is not None else None
    return closed is None and any(row.is_pending for row in rows)
