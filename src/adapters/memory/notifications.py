"""The in-memory :class:`clarion.ports.notifications.NotificationStore` over an
:class:`InMemoryStore` (events are recorded by :class:`InMemoryClaimRepository` under the same
lock as the transition that causes them)."""

from __future__ import annotations

from datetime import datetime, timedelta

import attrs

from clarion.adapters.memory.store import InMemoryRepository
from clarion.adapters.stores.notifications import Finishing, NotificationRecords, internal_id
from clarion.domain.notifications import DUE, OutboxEntry, Route
from clarion.ports.notifications import ChatUserLink, PostedMessage


class InMemoryNotificationStore(InMemoryRepository, NotificationRecords):
    """Routes and outbox entries in the store; every method holds the store lock."""

    # -- routes ----------------------------------------------------------------------------

    def _insert_route(self, route: Route) -> Route:
        return self._store.insert(self._store.notification_routes, route)

    def get_route(self, route_id: str) -> Route | None:
        return self._store.lookup(self._store.notification_routes, route_id)

    def list_routes(self) -> tuple[Route, ...]:
        with self._store.lock:
            return tuple(self._store.notification_routes.values())

    def routes_for(self, workspace_id: str) -> tuple[Route, ...]:
        return tuple(r for r in self.list_routes() if r.workspace_id == workspace_id)

    def remove_route(self, route_id: str) -> bool:
        with self._store.lock:
            return self._store.notification_routes.pop(route_id, None) is not None

    # -- outbox ----------------------------------------------------------------------------

    def claim_due(self, now: datetime, *, limit: int, lease_s: float) -> tuple[OutboxEntry, ...]:
        with self._store.lock:
            leases = self._store.outbox_leases
            due = sorted(
                (
                    entry
                    for entry in self._store.notification_outbox.values()
                    if entry.status == DUE
                    and entry.due_at <= now
                    and (entry.id not in leases or leases[entry.id] <= now)
                ),
                key=lambda entry: (entry.due_at, entry.id),
            )[:limit]
            claimed = []
            for entry in due:
                held = attrs.evolve(entry, lease_token=internal_id())
                self._store.notification_outbox[entry.id] = held
                leases[entry.id] = now + timedelta(seconds=lease_s)
                claimed.append(held)
            return tuple(claimed)

    def _held(self, entry_id: str, lease_token: str) -> OutboxEntry | None:
        entry = self._store.notification_outbox.get(entry_id)
        if entry is None or entry.status != DUE or not lease_token:
            return None
        return entry if entry.lease_token == lease_token else None

    def _finish(self, finishing: Finishing) -> tuple[OutboxEntry, ...] | None:
        entry_id, lease_token, take = finishing.entry_id, finishing.lease_token, finishing.take
        with self._store.lock:
            entry = self._held(entry_id, lease_token)
            if entry is None:
                return None
            outbox = self._store.notification_outbox
            outbox[entry_id] = attrs.evolve(
                entry, status=finishing.status, lease_token="", last_error=finishing.error
            )
            self._store.outbox_leases.pop(entry_id, None)
            known = {existing.idempotency_key for existing in outbox.values()}
            recorded_at = self._clock.now()
            taken: list[OutboxEntry] = []
            for new in finishing.follow_ups:
                if new.idempotency_key in known:
                    continue
                known.add(new.idempotency_key)
                new_id = internal_id()
                outbox[new_id] = OutboxEntry(
                    **attrs.asdict(new, recurse=False),
                    id=new_id,
                    status=DUE,
                    attempts=0,
                    created_at=recorded_at,
                )
                if take is not None and new.due_at <= take[0]:
                    held = attrs.evolve(outbox[new_id], lease_token=internal_id())
                    outbox[new_id] = held
                    self._store.outbox_leases[new_id] = take[1]
                    taken.append(held)
            return tuple(sorted(taken, key=lambda held: (held.due_at, held.id)))

    def retry(self, entry_id: str, lease_token: str, due_at: datetime, error: str) -> bool:
        with self._store.lock:
            entry = self._held(entry_id, lease_token)
            if entry is None:
                return False
            self._store.notification_outbox[entry_id] = attrs.evolve(
                entry, attempts=entry.attempts + 1, due_at=due_at, lease_token="", last_error=error
            )
            self._store.outbox_leases.pop(entry_id, None)
            return True

    def entries(self, pending_id: str | None = None) -> tuple[OutboxEntry, ...]:
        with self._store.lock:
            found = [
                entry
                for entry in self._store.notification_outbox.values()
                if pending_id is None or entry.pending_id == pending_id
            ]
        return tuple(found)

    def purge_finished(self, before: datetime) -> int:
        with self._store.lock:
            outbox = self._store.notification_outbox
            doomed = [k for k, e in outbox.items() if e.status != DUE and e.created_at < before]
            for key in doomed:
                self._store.recorded_events.pop(outbox.pop(key).idempotency_key, None)
            return len(doomed)

    # -- posted messages (issue #18) -------------------------------------------------------

    def record_posted(self, message: PostedMessage) -> bool:
        key = (message.channel_kind, message.channel_id, message.message_id)
        with self._store.lock:
            if key in self._store.posted_messages:
                return False
            self._store.posted_messages[key] = message
            return True

    def posted_for(self, pending_id: str, channel_kind: str) -> tuple[PostedMessage, ...]:
        with self._store.lock:
            found = [
                message
                for message in self._store.posted_messages.values()
                if message.pending_id == pending_id and message.channel_kind == channel_kind
            ]
        return tuple(sorted(found, key=lambda m: m.posted_at))

    def posted_by_key(self, idempotency_key: str) -> tuple[PostedMessage, ...]:
        with self._store.lock:
            found = [
                message
                for message in self._store.posted_messages.values()
                if message.idempotency_key == idempotency_key
            ]
        return tuple(sorted(found, key=lambda m: m.posted_at))

    # -- chat accounts linked to users (issue #18) ----------------------------------------

    def _keep_link(self, link: ChatUserLink) -> None:
        with self._store.lock:
            self._store.chat_user_links[(link.provider, link.external_id)] = link

    def unlink_chat_user(self, provider: str, external_id: str) -> bool:
        with self._store.lock:
            return self._store.chat_user_links.pop((provider, external_id), None) is not None

    def chat_user(self, provider: str, external_id: str) -> ChatUserLink | None:
        return self._store.lookup(self._store.chat_user_links, (provider, external_id))

    def chat_user_links(self, provider: str) -> tuple[ChatUserLink, ...]:
        with self._store.lock:
            found = [
                link for link in self._store.chat_user_links.values() if link.provider == provider
            ]
        return tuple(sorted(found, key=lambda link: (link.created_at, link.external_id)))


__all__ = ["InMemoryNotificationStore"]
