"""One in-memory world shared by the in-memory repositories, guarded by one re-entrant lock.

Every repository method takes ``store.lock`` for its whole read-modify-write, which is what
makes the in-memory claim a single atomic step (the analogue of one SQL transaction).
"""

from __future__ import annotations

import copy
import threading
import uuid
from collections.abc import Callable, Collection, Iterator, Mapping
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

import attrs

from clarion.domain.activeness import bundle_is_well_formed, current_turn_id, row_is_active
from clarion.domain.approvals import (
    NO_CANDIDATES,
    ApprovalRecord,
    Candidates,
    Group,
    StandingApproval,
    Vote,
)
from clarion.domain.audit_chain import ChainRecord
from clarion.domain.host import AccessToken, Session, Task, Turn, User, Workspace
from clarion.domain.model import CLARIFICATION_REQUEST
from clarion.domain.notifications import SUPERSEDED_EVENT, OutboxEntry, Route, event_entry
from clarion.domain.rows import (
    ClarificationRow,
    MessageRecord,
    parse_row,
    pending_ids_in_creation_order,
)
from clarion.ports.notifications import ChatUserLink, PostedMessage
from clarion.ports.system import Clock, IdGenerator


def frozen_metadata(metadata: Mapping[str, Any]) -> Mapping[str, Any]:
    """A private deep copy behind a read-only view: callers can neither change what they
    passed in after the write nor change the stored row through what they read."""
    return MappingProxyType(copy.deepcopy(dict(metadata)))


_T = TypeVar("_T")
_K = TypeVar("_K")


class _Identified(Protocol):
    @property
    def id(self) -> str: ...


_R = TypeVar("_R", bound=_Identified)


@attrs.define
class InMemoryStore:
    """Workspaces, tasks, sessions, turns, messages, users and tokens, keyed by id.

    Values are immutable records; writers replace them. Turns and messages are written through
    :meth:`put_turn` and :meth:`put_message`, which keep the per-session and per-pending-id
    indexes that make lookups independent of the size of the whole store.
    """

    workspaces: dict[str, Workspace] = attrs.field(factory=dict)
    # owner id → the id of that owner's agents workspace (the SQL unique key, issue #29 S6).
    agents_workspaces: dict[str, str] = attrs.field(factory=dict)
    tasks: dict[str, Task] = attrs.field(factory=dict)
    sessions: dict[str, Session] = attrs.field(factory=dict)
    turns: dict[str, Turn] = attrs.field(factory=dict)
    messages: dict[str, MessageRecord] = attrs.field(factory=dict)
    users: dict[str, User] = attrs.field(factory=dict)
    tokens: dict[str, AccessToken] = attrs.field(factory=dict)
    notification_routes: dict[str, Route] = attrs.field(factory=dict)
    notification_outbox: dict[str, OutboxEntry] = attrs.field(factory=dict)
    # The recorded events' idempotency keys (see ``record_event``) and their entries' ids.
    recorded_events: dict[str, str] = attrs.field(factory=dict)
    # An outbox entry's lease end (the SQL ``locked_until``), kept beside the entry.
    outbox_leases: dict[str, datetime] = attrs.field(factory=dict)
    # Messages channels posted (keyed by kind, conversation, message id) and chat accounts
    # linked to users (keyed by provider, account id): issue #18.
    posted_messages: dict[tuple[str, str, str], PostedMessage] = attrs.field(factory=dict)
    chat_user_links: dict[tuple[str, str], ChatUserLink] = attrs.field(factory=dict)
    # The lease process id each row in delivery was claimed under (the SQL
    # ``delivery_process`` column, issue #28), kept beside the row while it is marked.
    delivery_processes: dict[str, str] = attrs.field(factory=dict)
    # Issue #33, beside the rows and keyed by pending id: an approval's terms and a bundle's
    # candidates (the SQL ``bundle_extras`` / ``bundle_candidates``), the votes in voting
    # order; and the groups and standing approvals by id.
    bundle_extras: dict[str, BundleExtras] = attrs.field(factory=dict)
    approval_votes: dict[str, list[Vote]] = attrs.field(factory=dict)
    groups: dict[str, Group] = attrs.field(factory=dict)
    standing_approvals: dict[str, StandingApproval] = attrs.field(factory=dict)
    # The audit chain (issue #34): each scope's records in seq order (the last is the head).
    audit_chain: dict[str, list[ChainRecord]] = attrs.field(factory=dict)
    lock: threading.RLock = attrs.field(factory=threading.RLock)
    _turns_by_session: dict[str, dict[str, None]] = attrs.field(factory=dict, init=False)
    _messages_by_session: dict[str, dict[str, None]] = attrs.field(factory=dict, init=False)
    _messages_by_pending: dict[Any, dict[str, None]] = attrs.field(factory=dict, init=False)

    def collection_names(self) -> tuple[str, ...]:
        """The stores this world keeps (the P1 structural check reads this)."""
        return (
            "workspaces",
            "tasks",
            "sessions",
            "turns",
            "messages",
            "users",
            "tokens",
            "notification_routes",
            "notification_outbox",
            "posted_messages",
            "chat_user_links",
            "bundle_extras",
            "approval_votes",
            "groups",
            "standing_approvals",
        )

    def insert(self, records: dict[str, _R], record: _R) -> _R:
        """Keep ``record`` in ``records`` (one of this store's collections) under its id;
        return it."""
        with self.lock:
            records[record.id] = record
        return record

    def lookup(self, records: Mapping[_K, _T], key: _K) -> _T | None:
        """``records[key]`` (one of this store's collections), None when absent; read under
        the lock, so never half-way through a writer's change."""
        with self.lock:
            return records.get(key)

    def extras_of(self, pending_id: str) -> BundleExtras:
        """The bundle's approval terms and candidates (none stored: a plain question)."""
        return self.bundle_extras.get(pending_id, NO_EXTRAS)

    def groups_of(self, user_id: str) -> frozenset[str]:
        """The ids of the groups ``user_id`` belongs to (hold ``lock``)."""
        return frozenset(g.id for g in self.groups.values() if user_id in g.member_ids)

    def assignment_admits(self, assignee: str | None, pending_id: str) -> bool:
        """Issue #33: whether the caller ``assignee`` (None: no filter) may see the bundle, by
        its candidates (hold ``lock``)."""
        if assignee is None:
            return True
        candidates = self.extras_of(pending_id).candidates
        return not candidates.assigned or candidates.admits(assignee, self.groups_of(assignee))

    def record_event(self, entry_id: str, pending_id: str, event: str, now: datetime) -> None:
        """Record a notification event (the caller holds ``lock`` for its transition); an
        occurrence already recorded (the same ``event_key``) is not recorded again."""
        entry = event_entry(entry_id, pending_id, event, now)
        if entry.idempotency_key not in self.recorded_events:
            self.recorded_events[entry.idempotency_key] = entry_id
            self.notification_outbox[entry_id] = entry

    def active_on_current_turn(self, session_id: str) -> tuple[str, ...]:
        """The pending ids with a pending row on the session's current turn (the workflow
        guard's reading; hold ``lock``)."""
        session = self.sessions.get(session_id)
        current = self.current_turn_id(session_id)
        rows = (
            parse_row(record)
            for record in self.session_messages(session_id)
            if record.type == CLARIFICATION_REQUEST
        )
        active = (
            row for row in rows if row_is_active(row, session, current, require_live_session=False)
        )
        return pending_ids_in_creation_order(active)

    def record_superseded(self, pending_ids: Collection[str], turn: Turn) -> None:
        """Issue #30, with the new ``turn`` (the caller holds ``lock``): a ``superseded``
        notification event, at the turn's start, for each of ``pending_ids`` (the bundles
        active on the turn before it) — recorded with the turn, since their rows are not
        written (facts §4.4)."""
        for pending_id in pending_ids:
            self.record_event(uuid.uuid4().hex, pending_id, SUPERSEDED_EVENT, turn.started_at)

    def put_turn(self, turn: Turn) -> None:
        self.turns[turn.id] = turn
        self._turns_by_session.setdefault(turn.session_id, {})[turn.id] = None

    def put_message(self, record: MessageRecord) -> None:
        old = self.messages.get(record.id)
        if old is not None:
            self._unindex(old)
        self.messages[record.id] = record
        self._messages_by_session.setdefault(record.session_id, {})[record.id] = None
        key = _pending_key(record)
        if key is not None:
            self._messages_by_pending.setdefault(key, {})[record.id] = None

    def _unindex(self, record: MessageRecord) -> None:
        self._messages_by_session.get(record.session_id, {}).pop(record.id, None)
        key = _pending_key(record)
        if key is not None:
            self._messages_by_pending.get(key, {}).pop(record.id, None)

    def set_session_state(
        self, session_id: str, state: str, now: datetime, expected: Collection[str] | None = None
    ) -> Session | None:
        """Compare-and-set a session's state (the caller holds :attr:`lock`): the updated
        session, or None when it is missing or not in ``expected`` (nothing written)."""
        session = self.sessions.get(session_id)
        if session is None or (expected is not None and session.state not in expected):
            return None
        updated = attrs.evolve(session, state=state, updated_at=now)
        self.sessions[session_id] = updated
        return updated

    def session_turns(self, session_id: str) -> Iterator[Turn]:
        return (self.turns[tid] for tid in self._turns_by_session.get(session_id, {}))

    def session_messages(self, session_id: str) -> Iterator[MessageRecord]:
        return (self.messages[mid] for mid in self._messages_by_session.get(session_id, {}))

    def current_turn_id(self, session_id: str) -> str | None:
        """D4's current turn: newest by ``started_at``, ``created_at``, ``id``."""
        return current_turn_id(self.session_turns(session_id))

    def row_is_active(self, row: ClarificationRow, *, live_session: bool = True) -> bool:
        """D4 for one row against this world (``live_session=False``: the guard variant)."""
        session = self.sessions.get(row.session_id)
        current = self.current_turn_id(row.session_id)
        return row_is_active(row, session, current, require_live_session=live_session)

    def bundle_is_well_formed(self, pending_id: str) -> bool:
        """The malformed-bundle guard over every message carrying ``pending_id``."""
        return bundle_is_well_formed(pending_id, self.records_with_pending_id(pending_id))

    def session_task_id(self, session_id: str) -> str | None:
        """The session row's task id (M5's fallback); None without the session."""
        session = self.sessions.get(session_id)
        return session.task_id if session is not None else None

    def records_with_pending_id(self, pending_id: str) -> list[MessageRecord]:
        """Every message carrying ``pending_id`` (any type) — the malformed guard's input."""
        ids = self._messages_by_pending.get(pending_id, {})
        return [self.messages[mid] for mid in ids]

    def clarification_records(self) -> Iterator[MessageRecord]:
        return (m for m in self.messages.values() if m.type == CLARIFICATION_REQUEST)

    def rows_by_bundle(self) -> dict[str, list[ClarificationRow]]:
        """Every clarification row that carries a pending id, grouped by it (hold ``lock``)."""
        grouped: dict[str, list[ClarificationRow]] = {}
        for row in map(parse_row, self.clarification_records()):
            if row.pending_id:
                grouped.setdefault(row.pending_id, []).append(row)
        return grouped

    def pick_bundles(self, pick: Callable[[str, list[ClarificationRow]], _T | None]) -> list[_T]:
        """What ``pick(pending_id, rows)`` makes of each bundle, where it makes something (takes
        ``lock``)."""
        with self.lock:
            return [
                picked
                for pending_id, rows in self.rows_by_bundle().items()
                if (picked := pick(pending_id, rows)) is not None
            ]

    def delete_task(self, task_id: str) -> bool:
        """Cascade: task → its sessions → their turns and messages."""
        if self.tasks.pop(task_id, None) is None:
            return False
        doomed = [sid for sid, session in self.sessions.items() if session.task_id == task_id]
        for session_id in doomed:
            del self.sessions[session_id]
            for turn_id in self._turns_by_session.pop(session_id, {}):
                del self.turns[turn_id]
            for message_id in list(self._messages_by_session.get(session_id, {})):
                self._unindex(self.messages.pop(message_id))
            self._messages_by_session.pop(session_id, None)
        return True


@attrs.frozen
class BundleExtras:
    """What issue #33 keeps beside a bundle's rows."""

    approval: ApprovalRecord | None = None
    candidates: Candidates = NO_CANDIDATES


NO_EXTRAS = BundleExtras()


def _pending_key(record: MessageRecord) -> Any:
    """The raw ``pending_id`` value when it is hashable text (the only kind a lookup asks for)."""
    value = record.metadata.get("pending_id")
    return value if isinstance(value, str) and value else None


class InMemoryRepository:
    """The base of the repositories over one :class:`InMemoryStore` that keep ids and
    timestamps of their own (host, tokens, notifications), as the SQL adapter's ``SqlStore`` is:
    the store, and the injected clock and id generator."""

    def __init__(self, store: InMemoryStore, clock: Clock, ids: IdGenerator) -> None:
        self._store = store
        self._clock = clock
        self._ids = ids
