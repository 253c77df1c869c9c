"""The durable schema (SQLAlchemy Core), following upstream facts §1.1 for the columns that
matter, plus ``users`` and ``access_tokens`` for authentication.

There is no ``clarification_resolutions`` table and there never will be (spec P1): the claim
writes its terminal state into ``task_session_messages.metadata``, the sole authority on
whether a bundle is resolved.

The migrations in ``migrations/`` create exactly this metadata; a test compares the two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import JSONB

from clarion.adapters.sql.metadata_sql import (
    const,
    is_clarification,
    is_delivery_pending,
    is_ended,
    is_pendingish,
    is_resolved,
    pending_id_of,
)
from clarion.adapters.sql.types import EMPTY, PAT_KIND_DEFAULT, Key, UtcDateTime
from clarion.domain.model import SessionState

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = sa.MetaData(naming_convention=NAMING_CONVENTION)

JsonDocument = sa.JSON().with_variant(JSONB(), "postgresql")


def partial_index(
    name: str,
    *columns: str | sa.ColumnElement[Any],
    where: sa.ColumnElement[bool] | sa.TextClause,
    **kw: Any,
) -> sa.Index:
    """An index over the rows ``where`` holds, on SQLite and PostgreSQL alike: each dialect
    reads the predicate from its own keyword, and one left out makes that dialect's index
    whole (larger, and a unique one then refuses rows the predicate leaves out)."""
    return sa.Index(name, *columns, sqlite_where=where, postgresql_where=where, **kw)


workspaces = sa.Table(
    "workspaces",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("owner_id", Key, nullable=False, server_default=EMPTY),  # "" = visible to everyone
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    # The owner id of the owner's one agents workspace ("" for the unowned one), NULL on every
    # other workspace; unique, so two processes cannot create two (issue #29 S6).
    sa.Column("agents_owner", Key, nullable=True),
    # The paged list walks this index from its cursor (issue #14).
    sa.Index("ix_workspaces_created", "created_at", "id"),
    sa.Index("ix_workspaces_agents_owner", "agents_owner", unique=True),
)

tasks = sa.Table(
    "tasks",
    metadata,
    sa.Column("id", Key, primary_key=True),
    # No foreign key: "" is legal and a value may name a deleted workspace (L1c, D5).
    sa.Column("workspace_id", Key, nullable=False, server_default=EMPTY),
    sa.Column("title", sa.Text, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Index("ix_tasks_workspace_id", "workspace_id"),
    # The paged list walks one of these from its cursor: all tasks, or one workspace's.
    sa.Index("ix_tasks_created", "created_at", "id"),
    sa.Index("ix_tasks_workspace_created", "workspace_id", "created_at", "id"),
)

task_sessions = sa.Table(
    "task_sessions",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column(
        "task_id",
        Key,
        sa.ForeignKey("tasks.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("state", sa.Text, nullable=False, server_default="CREATED"),
    sa.Column("is_primary", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("agent_token_hash", sa.Text, nullable=False, server_default=EMPTY),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    sa.Index("ix_task_sessions_task_id", "task_id"),
)


# Issue #30: the history walks the sessions that ended, newest state change first (their
# unexpired bundles closed then), and the turns by start (each one closes the pending
# bundles of the turn before it, with no write: facts §4.4).
def session_has_ended(session: sa.FromClause) -> sa.ColumnElement[bool]:
    """The session's state is COMPLETED, FAILED or CANCELLED (constants inline, so the partial
    index below applies)."""
    return session.c.state.in_([const(state) for state in sorted(SessionState.TERMINAL)])


partial_index(
    "ix_task_sessions_ended",
    task_sessions.c.updated_at,
    where=session_has_ended(task_sessions),
)

task_session_turns = sa.Table(
    "task_session_turns",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column(
        "task_session_id",
        Key,
        sa.ForeignKey("task_sessions.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("task_id", Key, nullable=False, server_default=EMPTY),
    sa.Column("started_at", UtcDateTime, nullable=False),
    sa.Column("completed_at", UtcDateTime, nullable=True),  # NULL = open turn
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    # The current-turn lookup reads this index backwards and stops at the first entry.
    sa.Index(
        "ix_task_session_turns_current",
        "task_session_id",
        "started_at",
        "created_at",
        "id",
    ),
    sa.Index("ix_task_session_turns_started", "started_at"),
)

task_session_messages = sa.Table(
    "task_session_messages",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column(
        "task_session_id",
        Key,
        sa.ForeignKey("task_sessions.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # No foreign key and may be "" on legacy rows (M5).
    sa.Column("task_id", Key, nullable=False, server_default=EMPTY),
    sa.Column(
        "turn_id",
        Key,
        sa.ForeignKey("task_session_turns.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("author_type", sa.Text, nullable=False, server_default="user"),
    sa.Column("content", sa.Text, nullable=False, server_default=EMPTY),
    sa.Column("type", sa.Text, nullable=False, server_default="message"),
    sa.Column("metadata", JsonDocument, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("updated_at", UtcDateTime, nullable=False),
    # Derived, on clarification rows only (NULL on others), rewritten for every row of a
    # pending id whenever a row of it is inserted or deleted (records.BundleKeys,
    # records.refresh_bundle_keys): the bundle's D1 created_at, its pending id as a byte-wise
    # column (L6's tie-break), a digest of its question set (domain.questions_digest), its M5
    # task id from the rows ("" when none carries one: the session's then) and whether every
    # row has a question id (L16) — facts of the set of rows, which no update changes. Never
    # an authority on activeness, which is judged from the rows themselves (P1, L2a).
    sa.Column("bundle_created_at", UtcDateTime, nullable=True),
    sa.Column("bundle_pending_id", Key, nullable=True),
    sa.Column("bundle_digest", sa.Text, nullable=True),
    sa.Column("bundle_task_id", Key, nullable=True),
    sa.Column("bundle_complete", sa.Boolean, nullable=True),
    # Who asked the bundle (domain.rows.Asker), on clarification rows written since migration
    # 0004 (NULL on other rows and older ones): the asking user's id and how it asked.
    sa.Column("asker_id", Key, nullable=True),
    sa.Column("asker_via", sa.Text, nullable=True),
    # Who resolved the row (domain.resolved_by.ResolvedBy), written by the claim's own UPDATE
    # and cleared by a restore to pending (migration 0005; issue #20). NULL on other rows and
    # on rows resolved before it was recorded, which read as "unknown". Beside the metadata,
    # not inside it, so transcripts read exactly as before. Its time is ``updated_at``.
    sa.Column("resolver_id", Key, nullable=True),
    sa.Column("resolver_kind", sa.Text, nullable=True),
    sa.Column("resolver_name", sa.Text, nullable=True),
    sa.Column("resolver_surface", sa.Text, nullable=True),
    # The notification events this row's transitions caused that the outbox has not taken
    # yet, one bit each (adapters.sql.outbox.EVENT_BITS); NULL when none. Written by the
    # transition's own statement (so the claim records its event and stays one UPDATE, P1)
    # and cleared when the notification store takes the events into the outbox (migration
    # 0011; issues #15, #17).
    sa.Column("unannounced_events", sa.Integer, nullable=True),
    # The liveness lease of the serving process whose claim put the row in delivery (issue
    # #28): written by the claim's own UPDATE (P1), cleared with the delivery marker; NULL when
    # not recorded (SQLite, older rows), which keeps recovery's grace period (migration 0013).
    sa.Column("delivery_process", sa.Text, nullable=True),
    sa.Index("ix_task_session_messages_session_created", "task_session_id", "created_at"),
    sa.Index("ix_task_session_messages_turn_id", "turn_id"),
)

messages = task_session_messages


def clarification_index(
    name: str,
    rows: Callable[[sa.Table], sa.ColumnElement[bool]],
    *columns: sa.ColumnElement[Any],
) -> sa.Index:
    """A :func:`partial_index` of ``messages`` over its clarification rows that ``rows``
    (a status predicate of :mod:`clarion.adapters.sql.metadata_sql`) admits."""
    return partial_index(name, *columns, where=sa.and_(is_clarification(messages), rows(messages)))


# Lookups by pending id (load, claim, the malformed-bundle guard) cost one index probe however
# long the history grows; the guard needs rows of every type, so this index is not partial.
sa.Index("ix_task_session_messages_pending_id", pending_id_of(messages))

# Only pending clarification rows: the per-session active reads scan this index (and create's
# deduplication probes it down to the question-set digest), so their cost follows the pending
# work, not the message history.
clarification_index(
    "ix_task_session_messages_pending_rows",
    is_pendingish,
    messages.c.task_session_id,
    messages.c.turn_id,
    messages.c.bundle_digest,
)

# The list walks this index in L6 order — (D1 created_at, pending id byte-wise) over pending
# clarification rows — and stops after one page of bundles (docs/performance.md).
clarification_index(
    "ix_task_session_messages_pending_order",
    is_pendingish,
    messages.c.bundle_created_at,
    messages.c.bundle_pending_id,
)

# The per-identity active-bundle limit counts one asker's pending bundles on this index and
# stops after the limit (ClaimRepository.count_active_asked).
clarification_index(
    "ix_task_session_messages_pending_asker",
    is_pendingish,
    messages.c.asker_id,
    messages.c.bundle_pending_id,
)

# The resolved list (newest first) and the audit export walk this index backwards in
# (resolution time, pending id) order over resolved clarification rows and stop after a page;
# a resolved row's ``updated_at`` is its claim's time (finalize keeps it; nothing else writes
# a resolved row).
clarification_index(
    "ix_task_session_messages_resolved_order",
    is_resolved,
    messages.c.updated_at,
    messages.c.bundle_pending_id,
)

# Issue #30: the history's closed bundles — expired and cancelled clarification rows walked
# backwards by (closing time, pending id), as the resolved ones above; an ended row's
# ``updated_at`` is its expiry's or cancellation's (nothing writes an ended row again).
clarification_index(
    "ix_task_session_messages_ended_order",
    is_ended,
    messages.c.updated_at,
    messages.c.bundle_pending_id,
)

# The notification store finds the marked rows here, by bundle (adapters.sql.outbox).
partial_index(
    "ix_task_session_messages_unannounced",
    messages.c.bundle_pending_id,
    where=messages.c.unannounced_events.is_not(None),
)

# Recovery finds the rows still in delivery here, every few seconds on PostgreSQL (issue #28):
# its cost follows the deliveries in flight, not the message history.
clarification_index(
    "ix_task_session_messages_in_delivery",
    is_delivery_pending,
    messages.c.updated_at,
)

users = sa.Table(
    "users",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("is_admin", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("active", sa.Boolean, nullable=False, server_default=sa.true()),
    sa.Column("created_at", UtcDateTime, nullable=False),
)

access_tokens = sa.Table(
    "access_tokens",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column(
        "user_id",
        Key,
        sa.ForeignKey("users.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("name", sa.Text, nullable=False, server_default=EMPTY),
    # Only the SHA-256 hex of the token text is ever stored.
    sa.Column("token_hash", sa.Text, nullable=False, unique=True),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("expires_at", UtcDateTime, nullable=True),
    sa.Column("revoked_at", UtcDateTime, nullable=True),
    sa.Column("last_used_at", UtcDateTime, nullable=True),
    # "pat" (personal access token) or "session" (browser login session), never the name.
    sa.Column("kind", sa.Text, nullable=False, server_default=PAT_KIND_DEFAULT),
    # A session's personal access token ("" for a token); no foreign key, like task ids.
    sa.Column("parent_id", Key, nullable=False, server_default=EMPTY),
    sa.Index("ix_access_tokens_user_id", "user_id"),
)

# Used signed answer links (issue #17): the link's nonce, what it was bound to, when it was used
# and when its token expires (rows past that are purged; the token no longer verifies).
answer_link_uses = sa.Table(
    "answer_link_uses",
    metadata,
    sa.Column("link_id", Key, primary_key=True),
    sa.Column("pending_id", Key, nullable=False),
    sa.Column("user_id", Key, nullable=False),
    sa.Column("used_at", UtcDateTime, nullable=False),
    sa.Column("expires_at", UtcDateTime, nullable=False),
    sa.Index("ix_answer_link_uses_expires_at", "expires_at"),
)

# Notifications (issue #17): routes, and the outbox the claim repository writes in the same
# transaction as the transition that causes an event (migration 0006_notifications).
notification_routes = sa.Table(
    "notification_routes",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("workspace_id", Key, nullable=False, server_default=EMPTY),  # "" = default route
    sa.Column("channel", sa.Text, nullable=False),
    sa.Column("user_id", Key, nullable=False, server_default=EMPTY),  # on whose behalf
    sa.Column("created_by", Key, nullable=False, server_default=EMPTY),
    sa.Column("events", JsonDocument, nullable=False),
    sa.Column("remind_after_s", sa.Float, nullable=True),
    sa.Column("escalate_after_s", sa.Float, nullable=True),
    sa.Column("escalate_to", Key, nullable=False, server_default=EMPTY),
    sa.Column("deadline_after_s", sa.Float, nullable=True),
    sa.Column("on_deadline", sa.Text, nullable=False),
    sa.Column("include_answers", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("created_at", UtcDateTime, nullable=False),
    # A webhook route's own signing secret (issue #29; "" for the other channels).
    sa.Column("secret", sa.Text, nullable=False, server_default=EMPTY),
    sa.Index("ix_notification_routes_workspace_id", "workspace_id"),
)

notification_outbox = sa.Table(
    "notification_outbox",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("pending_id", Key, nullable=False),
    sa.Column("event", sa.Text, nullable=False),
    sa.Column("route_id", Key, nullable=False, server_default=EMPTY),  # "" = still to fan out
    sa.Column("sequence", sa.Integer, nullable=False, server_default=sa.text("0")),
    sa.Column("status", sa.Text, nullable=False),
    sa.Column("due_at", UtcDateTime, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, server_default=sa.text("0")),
    sa.Column("idempotency_key", sa.Text, nullable=False, unique=True),
    # The lease of the worker holding the entry: it comes back once locked_until passes.
    sa.Column("lease_token", sa.Text, nullable=False, server_default=EMPTY),
    sa.Column("locked_until", UtcDateTime, nullable=True),
    sa.Column("last_error", sa.Text, nullable=False, server_default=EMPTY),
    sa.Column("created_at", UtcDateTime, nullable=False),
    # The key of the event an entry follows from ("" for an event; migration 0017).
    sa.Column("origin_key", sa.Text, nullable=False, server_default=EMPTY),
    sa.Index("ix_notification_outbox_status_due_at", "status", "due_at"),
    sa.Index("ix_notification_outbox_pending_id", "pending_id"),
    # The worker's purge of finished entries past the retention reads only those (0021).
    sa.Index("ix_notification_outbox_created_at", "created_at"),
)

# Messages a channel posted for a bundle, updated in place by its terminal events, and chat
# accounts linked to Clarion users (issue #18, migration 0009_slack).
posted_messages = sa.Table(
    "posted_messages",
    metadata,
    sa.Column("channel_kind", sa.Text, primary_key=True),
    sa.Column("channel_id", sa.Text, primary_key=True),
    sa.Column("message_id", sa.Text, primary_key=True),
    sa.Column("pending_id", Key, nullable=False),
    sa.Column("route_id", Key, nullable=False),
    sa.Column("idempotency_key", sa.Text, nullable=False),
    sa.Column("posted_at", UtcDateTime, nullable=False),
    sa.Index("ix_posted_messages_pending_id", "pending_id", "channel_kind"),
    sa.Index("ix_posted_messages_idempotency_key", "idempotency_key"),
)

chat_user_links = sa.Table(
    "chat_user_links",
    metadata,
    sa.Column("provider", sa.Text, primary_key=True),
    sa.Column("external_id", sa.Text, primary_key=True),
    sa.Column("user_id", Key, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Index("ix_chat_user_links_user_id", "user_id"),
)

# Agent asks (issue #28, migration 0012_agent_asks): one row per MCP ask, pointing at its
# bundle; an open row's (owner, scope, retry_key) is unique, so concurrent retries of one ask
# in several processes find one question.
_OPEN_ASK = sa.text("state = 'open'")
agent_asks = sa.Table(
    "agent_asks",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("owner", Key, nullable=False),
    sa.Column("scope", Key, nullable=False),
    sa.Column("retry_key", Key, nullable=False),
    sa.Column("pending_id", Key, nullable=False),
    sa.Column("session_id", Key, nullable=False),
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Column("state", sa.Text, nullable=False),
    sa.Column("as_task", sa.Boolean, nullable=False),
    partial_index(
        "ux_agent_asks_open_key",
        "owner",
        "scope",
        "retry_key",
        unique=True,
        where=_OPEN_ASK,
    ),
    sa.Index("ix_agent_asks_owner_scope", "owner", "scope", "state", "created_at"),
)

# Approvals (issue #33, migration 0018_approvals): what is kept beside a bundle's rows, keyed
# by its pending id — an approval's terms or a plain question's assignment (``kind``
# 'approval' | 'assigned'), its candidates, and the votes — and the groups and standing
# approvals. A plain question without candidates has no row here, and its claim reads none.
bundle_extras = sa.Table(
    "bundle_extras",
    metadata,
    sa.Column("pending_id", Key, primary_key=True),
    sa.Column("kind", sa.Text, nullable=False),
    sa.Column("action_name", sa.Text, nullable=False, server_default=EMPTY),
    sa.Column("action_json", sa.Text, nullable=False, server_default=EMPTY),  # the arguments
    sa.Column("action_digest", sa.Text, nullable=False, server_default=EMPTY),
    sa.Column("reason", sa.Text, nullable=False, server_default=EMPTY),
    sa.Column("required_approvals", sa.Integer, nullable=False, server_default=sa.text("0")),
    sa.Column("standing_id", Key, nullable=True),  # the standing approval that decided it
    sa.Column("created_at", UtcDateTime, nullable=False),
)

bundle_candidates = sa.Table(
    "bundle_candidates",
    metadata,
    sa.Column("pending_id", Key, primary_key=True),
    sa.Column("subject_kind", sa.Text, primary_key=True),  # 'user' | 'group'
    sa.Column("subject_id", Key, primary_key=True),
    sa.Index("ix_bundle_candidates_subject", "subject_kind", "subject_id"),
)

approval_votes = sa.Table(
    "approval_votes",
    metadata,
    sa.Column("pending_id", Key, primary_key=True),
    sa.Column("voter_id", Key, primary_key=True),
    sa.Column("display_name", sa.Text, nullable=False),
    sa.Column("decision", sa.Text, nullable=False),
    sa.Column("comment", sa.Text, nullable=False),
    sa.Column("surface", sa.Text, nullable=False),
    sa.Column("voted_at", UtcDateTime, nullable=False),
    sa.Column("seq", sa.Integer, nullable=False),  # voting order within the request
)

groups = sa.Table(
    "groups",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("name_key", sa.Text, nullable=False),  # casefolded: names are case-insensitive
    sa.Column("created_at", UtcDateTime, nullable=False),
    sa.Index("ux_groups_name_key", "name_key", unique=True),
)

group_members = sa.Table(
    "group_members",
    metadata,
    sa.Column("group_id", Key, primary_key=True),
    sa.Column("user_id", Key, primary_key=True),
    sa.Index("ix_group_members_user_id", "user_id"),
)

standing_approvals = sa.Table(
    "standing_approvals",
    metadata,
    sa.Column("id", Key, primary_key=True),
    sa.Column("workspace_id", Key, nullable=False),
    sa.Column("action_name", sa.Text, nullable=False),
    sa.Column("constraints_json", sa.Text, nullable=False),
    sa.Column("granted_by_id", Key, nullable=False),
    sa.Column("granted_by_name", sa.Text, nullable=False),
    sa.Column("granted_at", UtcDateTime, nullable=False),
    sa.Column("expires_at", UtcDateTime, nullable=False),
    sa.Column("source_pending_id", Key, nullable=False),
    sa.Column("revoked_at", UtcDateTime, nullable=True),
    sa.Column("revoked_by_id", Key, nullable=False, server_default=EMPTY),
    sa.Index("ix_standing_approvals_match", "workspace_id", "action_name", "expires_at"),
)

# The tamper-evident audit chain (issue #34, migration 0019_audit_chain): one record per
# resolution and per restore, hash-linked within its scope (a workspace id), appended in the
# claim's transaction; ``audit_heads`` holds each scope's last position and hash, the one row
# a claim locks to take the next one (see clarion.adapters.sql.audit); on SQLite a trigger
# (migration 0020_audit_head_trigger) moves it to each inserted record.
audit_chain = sa.Table(
    "audit_chain",
    metadata,
    sa.Column("scope", Key, primary_key=True),
    sa.Column("seq", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("pending_id", Key, nullable=False),
    sa.Column("prev_hash", sa.Text, nullable=False),
    sa.Column("hash", sa.Text, nullable=False),
    sa.Column("body", sa.Text, nullable=False),
    sa.Index("ix_audit_chain_pending_id", "pending_id", "seq"),
)
audit_heads = sa.Table(
    "audit_heads",
    metadata,
    sa.Column("scope", Key, primary_key=True),
    sa.Column("seq", sa.BigInteger, nullable=False),
    sa.Column("prev_hash", sa.Text, nullable=False),
    sa.Column("hash", sa.Text, nullable=False),
)

TABLE_NAMES = tuple(metadata.tables)
