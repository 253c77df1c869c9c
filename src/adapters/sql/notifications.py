"""The SQL :class:`clarion.ports.notifications.NotificationStore`: routes and the outbox.

``claim_due`` selects due rows ``FOR UPDATE SKIP LOCKED`` on PostgreSQL (so concurrent workers
pass over each other's rows instead of queueing), then stamps each with a fresh lease token and
``locked_until``; SQLite serializes writers with ``BEGIN IMMEDIATE`` and ignores the locking
clause. The lease is what survives the transaction: a worker that dies holding entries gives
them back when ``locked_until`` passes.

Events are recorded by the transitions themselves, on the rows they write
(:mod:`clarion.adapters.sql.outbox`), so an event is durable exactly when the change that
causes it is; ``claim_due`` and ``entries`` take them into the outbox first.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import attrs
import sqlalchemy as sa

from clarion.adapters.sql.engine import SqlStore, read_transaction
from clarion.adapters.sql.outbox import (
    TAKE_BATCH,
    entry_values,
    has_marked_rows,
    insert_entries,
    take_events,
)
from clarion.adapters.sql.rows import from_row, insert_record
from clarion.adapters.sql.schema import chat_user_links as links
from clarion.adapters.sql.schema import notification_outbox as outbox
from clarion.adapters.sql.schema import notification_routes as routes
from clarion.adapters.sql.schema import posted_messages as posted
from clarion.adapters.stores.notifications import Finishing, NotificationRecords, internal_id
from clarion.domain.notifications import DUE, OutboxEntry, Route, parse_channel
from clarion.ports.notifications import ChatUserLink, PostedMessage


def _entry(row: Any) -> OutboxEntry:
    return from_row(OutboxEntry, row._mapping)


def _route(row: Any) -> Route:
    return from_row(
        Route, row._mapping, channel=parse_channel(row.channel), events=tuple(row.events)
    )


class SqlNotificationStore(SqlStore, NotificationRecords):
    """Routes and outbox on ``engine`` (see the module docstring)."""

    # -- routes ----------------------------------------------------------------------------

    def _insert_route(self, route: Route) -> Route:
        channel, events = str(route.channel), list(route.events)
        return insert_record(self._writes, routes, route, channel=channel, events=events)

    def get_route(self, route_id: str) -> Route | None:
        with read_transaction(self._engine) as connection:
            row = connection.execute(sa.select(routes).where(routes.c.id == route_id)).first()
        return None if row is None else _route(row)

    def list_routes(self) -> tuple[Route, ...]:
        return self._routes(None)

    def routes_for(self, workspace_id: str) -> tuple[Route, ...]:
        return self._routes(workspace_id)

    def _routes(self, workspace_id: str | None) -> tuple[Route, ...]:
        query = sa.select(routes).order_by(routes.c.created_at, routes.c.id)
        if workspace_id is not None:
            query = query.where(routes.c.workspace_id == workspace_id)
        with read_transaction(self._engine) as connection:
            return tuple(_route(row) for row in connection.execute(query))

    def remove_route(self, route_id: str) -> bool:
        with self._writes.begin() as connection:
            deleted = connection.execute(sa.delete(routes).where(routes.c.id == route_id))
        return bool(deleted.rowcount)

    # -- outbox ----------------------------------------------------------------------------

    def claim_due(self, now: datetime, *, limit: int, lease_s: float) -> tuple[OutboxEntry, ...]:
        free = sa.or_(outbox.c.locked_until.is_(None), outbox.c.locked_until <= now)
        query = (
            sa.select(outbox.c.id)
            .where(outbox.c.status == DUE, outbox.c.due_at <= now, free)
            .order_by(outbox.c.due_at, outbox.c.id)
            .limit(limit)
            .with_for_update(skip_locked=True)
        )
        until = now + timedelta(seconds=lease_s)
        claimed: list[OutboxEntry] = []
        with self._writes.begin() as connection:
            take_events(connection)
            for entry_id in connection.execute(query).scalars().all():
                token = internal_id()
                row = connection.execute(
                    sa.update(outbox)
                    .where(outbox.c.id == entry_id)
                    .values(lease_token=token, locked_until=until)
                    .returning(*outbox.c)
                ).first()
                if row is not None:
                    claimed.append(_entry(row))
        return tuple(claimed)

    def _held(self, entry_id: str, lease_token: str) -> Any:
        return sa.and_(
            outbox.c.id == entry_id,
            outbox.c.status == DUE,
            outbox.c.lease_token == lease_token,
            outbox.c.lease_token != "",
        )

    def _finish(self, finishing: Finishing) -> tuple[OutboxEntry, ...] | None:
        """Finish the entry and record its follow-ups; with ``take`` (now, lease end) those
        due by now are inserted leased to the caller and read back (a follow-up skipped for
        its known key keeps whoever's lease it has)."""
        recorded_at = self._clock.now()
        rows = [entry_values(entry, internal_id(), recorded_at) for entry in finishing.follow_ups]
        tokens, taken_ids = [], []
        if finishing.take is not None:
            now, until = finishing.take
            for row in rows:
                if row["due_at"] <= now:
                    row["lease_token"] = token = internal_id()
                    row["locked_until"] = until
                    tokens.append(token)
                    taken_ids.append(row["id"])
        with self._writes.begin() as connection:
            done = connection.execute(
                sa.update(outbox)
                .where(self._held(finishing.entry_id, finishing.lease_token))
                .values(
                    status=finishing.status,
                    lease_token="",
                    locked_until=None,
                    last_error=finishing.error,
                )
            )
            if done.rowcount != 1:
                return None
            insert_entries(connection, rows)
            if not tokens:
                return ()
            # By primary key: lease tokens have no index, and the outbox keeps its history
            # (a read by token alone scanned all of it, issue #35). A row skipped for its
            # known key is not there under this id, so only the rows inserted come back.
            taken = connection.execute(
                sa.select(outbox)
                .where(outbox.c.id.in_(taken_ids), outbox.c.lease_token.in_(tokens))
                .order_by(outbox.c.due_at, outbox.c.id)
            )
            return tuple(_entry(row) for row in taken)

    def retry(self, entry_id: str, lease_token: str, due_at: datetime, error: str) -> bool:
        with self._writes.begin() as connection:
            done = connection.execute(
                sa.update(outbox)
                .where(self._held(entry_id, lease_token))
                .values(
                    attempts=outbox.c.attempts + 1,
                    due_at=due_at,
                    lease_token="",
                    locked_until=None,
                    last_error=error,
                )
            )
        return done.rowcount == 1

    def entries(self, pending_id: str | None = None) -> tuple[OutboxEntry, ...]:
        self._take_events(pending_id)
        query = sa.select(outbox).order_by(outbox.c.created_at, outbox.c.id)
        if pending_id is not None:
            query = query.where(outbox.c.pending_id == pending_id)
        with read_transaction(self._engine) as connection:
            return tuple(_entry(row) for row in connection.execute(query))

    def _take_events(self, pending_id: str | None) -> None:
        """Take the events still on their transitions' rows (of ``pending_id`` when given)
        into the outbox; a write transaction only when there are some."""
        with read_transaction(self._engine) as connection:
            if not has_marked_rows(connection, pending_id):
                return
        with self._writes.begin() as connection:
            while take_events(connection, pending_id=pending_id) == TAKE_BATCH:
                pass

    def purge_finished(self, before: datetime) -> int:
        with self._writes.begin() as connection:
            deleted = connection.execute(
                sa.delete(outbox).where(outbox.c.status != DUE, outbox.c.created_at < before)
            )
        return int(deleted.rowcount)

    # -- posted messages (issue #18) -------------------------------------------------------

    def record_posted(self, message: PostedMessage) -> bool:
        try:
            with self._writes.begin() as connection:
                connection.execute(sa.insert(posted), attrs.asdict(message))
        except sa.exc.IntegrityError:
            return False
        return True

    def _posted(self, condition: Any) -> tuple[PostedMessage, ...]:
        query = sa.select(posted).where(condition).order_by(posted.c.posted_at, posted.c.message_id)
        with read_transaction(self._engine) as connection:
            rows = connection.execute(query).mappings().all()
        return tuple(PostedMessage(**dict(row)) for row in rows)

    def posted_for(self, pending_id: str, channel_kind: str) -> tuple[PostedMessage, ...]:
        return self._posted(
            sa.and_(posted.c.pending_id == pending_id, posted.c.channel_kind == channel_kind)
        )

    def posted_by_key(self, idempotency_key: str) -> tuple[PostedMessage, ...]:
        return self._posted(posted.c.idempotency_key == idempotency_key)

    # -- chat accounts linked to users (issue #18) ----------------------------------------

    def _keep_link(self, link: ChatUserLink) -> None:
        key = sa.and_(links.c.provider == link.provider, links.c.external_id == link.external_id)
        with self._writes.begin() as connection:
            # Linking again replaces the user: delete and insert in one transaction.
            connection.execute(sa.delete(links).where(key))
            connection.execute(sa.insert(links), attrs.asdict(link))

    def unlink_chat_user(self, provider: str, external_id: str) -> bool:
        key = sa.and_(links.c.provider == provider, links.c.external_id == external_id)
        with self._writes.begin() as connection:
            deleted = connection.execute(sa.delete(links).where(key))
        return bool(deleted.rowcount)

    def _links(self, condition: Any) -> tuple[ChatUserLink, ...]:
        query = sa.select(links).where(condition).order_by(links.c.created_at, links.c.external_id)
        with read_transaction(self._engine) as connection:
            rows = connection.execute(query).mappings().all()
        return tuple(ChatUserLink(**dict(row)) for row in rows)

    def chat_user(self, provider: str, external_id: str) -> ChatUserLink | None:
        found = self._links(
            sa.and_(links.c.provider == provider, links.c.external_id == external_id)
        )
        return found[0] if found else None

    def chat_user_links(self, provider: str) -> tuple[ChatUserLink, ...]:
        return self._links(links.c.provider == provider)


__all__ = ["SqlNotificationStore"]
