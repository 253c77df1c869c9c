"""What both notification stores share: a new route, a new chat-account link, the internal ids
of outbox entries and leases, and the two forms of ``finish``."""

from __future__ import annotations

import abc
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

import attrs

from clarion.domain.notifications import NewEntry, OutboxEntry, Route, RouteSpec, check_route_spec
from clarion.ports.notifications import ChatUserLink
from clarion.ports.system import Clock, IdGenerator


def internal_id() -> str:
    """Outbox entry ids and lease tokens: internal, so drawn apart from the injected id
    generator (whose ids surfaces show, and which the worker must not disturb)."""
    return uuid.uuid4().hex


@attrs.frozen
class Finishing:
    """One ``finish`` of an outbox entry the caller holds under ``lease_token``: its new
    ``status``, the ``follow_ups`` to record and the ``error`` to keep; with ``take`` (now,
    lease end), the follow-ups due by now are handed to the caller under fresh leases."""

    entry_id: str
    lease_token: str
    status: str
    follow_ups: Sequence[NewEntry]
    error: str
    take: tuple[datetime, datetime] | None = None


class NotificationRecords(abc.ABC):
    """The storage-independent half of a :class:`~clarion.ports.notifications.NotificationStore`
    (the subclass supplies ``_clock`` and ``_ids``)."""

    _clock: Clock
    _ids: IdGenerator

    def add_route(self, spec: RouteSpec, *, created_by: str) -> Route:
        spec = check_route_spec(spec)
        route = Route(
            **attrs.asdict(spec, recurse=False),
            id=self._ids.new_id(),
            created_by=created_by,
            created_at=self._clock.now(),
        )
        return self._insert_route(route)

    def finish(
        self,
        entry_id: str,
        lease_token: str,
        status: str,
        *,
        follow_ups: Sequence[NewEntry] = (),
        error: str = "",
    ) -> bool:
        finishing = Finishing(entry_id, lease_token, status, follow_ups, error)
        return self._finish(finishing) is not None

    def finish_and_take(
        self,
        entry_id: str,
        lease_token: str,
        status: str,
        *,
        follow_ups: Sequence[NewEntry],
        now: datetime,
        lease_s: float,
        error: str = "",
    ) -> tuple[OutboxEntry, ...] | None:
        take = (now, now + timedelta(seconds=lease_s))
        return self._finish(Finishing(entry_id, lease_token, status, follow_ups, error, take))

    def link_chat_user(self, provider: str, external_id: str, user_id: str) -> ChatUserLink:
        link = ChatUserLink(
            provider=provider,
            external_id=external_id,
            user_id=user_id,
            created_at=self._clock.now(),
        )
        self._keep_link(link)
        return link

    @abc.abstractmethod
    def _insert_route(self, route: Route) -> Route:
        """Keep the new ``route``; returns it as stored."""

    @abc.abstractmethod
    def _finish(self, finishing: Finishing) -> tuple[OutboxEntry, ...] | None:
        """Finish the entry and record the follow-ups, in one step; the follow-ups handed to
        the caller (none without ``take``), or None when the caller no longer holds the entry
        (nothing written)."""

    @abc.abstractmethod
    def _keep_link(self, link: ChatUserLink) -> None:
        """Keep ``link``, replacing the user an earlier link of the same account named."""
