"""Contract suite for :class:`clarion.ports.notifications.NotificationStore` and for the events
a claim repository records with its transitions (issue #17).

Provide a ``world`` fixture (a :class:`ContractWorld`) and a ``notifications`` fixture: the
store sharing that world's storage, so the claim repository's events are visible in it.
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from clarion.domain.errors import ValidationError
from clarion.domain.model import ANSWERED, REJECTED
from clarion.domain.notifications import (
    ANSWERABLE,
    CANCELLED_EVENT,
    DONE,
    DROPPED,
    DUE,
    EXPIRED_EVENT,
    REMINDER,
    RESOLVED,
    NewEntry,
    RouteSpec,
    parse_channel,
)
from clarion.ports.notifications import NotificationStore, PostedMessage
from clarion.ports.testing.racing import race
from clarion.ports.testing.world import ContractWorld, claim

LEASE_S = 60.0


def _events(notifications: NotificationStore, pending_id: str) -> list[str]:
    return [entry.event for entry in notifications.entries(pending_id)]


def _follow_up(pending_id: str, key: str, world: ContractWorld, *, later_s: float = 0) -> NewEntry:
    return NewEntry(
        pending_id=pending_id,
        event=REMINDER,
        route_id="r-1",
        due_at=world.clock.peek() + timedelta(seconds=later_s),
        idempotency_key=key,
        sequence=1,
    )


class NotificationStoreContract:
    """Events recorded with their transitions; leases; follow-ups; routes."""

    # -- events recorded with the transition that causes them --------------------------------

    def test_creating_a_bundle_records_one_answerable_event_due_at_once(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        world.bundle_in_new_session("p-1")
        (entry,) = notifications.entries("p-1")
        assert (entry.event, entry.route_id, entry.status, entry.attempts) == (
            ANSWERABLE,
            "",
            DUE,
            0,
        )
        assert entry.idempotency_key
        assert entry.due_at <= world.clock.peek()

    def test_a_winning_claim_records_resolved_and_a_losing_claim_records_nothing(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        world.bundle_in_new_session("p-1")
        assert claim(world, "p-1").claimed
        assert not world.claims.complete_active_bundle("p-1", REJECTED, None).claimed
        assert _events(notifications, "p-1") == [ANSWERABLE, RESOLVED]

    def test_expiry_and_cancel_record_their_event_once(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        first = world.bundle_in_new_session("p-1")
        second = world.bundle_in_new_session("p-2")
        assert world.claims.expire_active_bundle(first.session_id, "p-1")
        assert not world.claims.expire_active_bundle(first.session_id, "p-1")
        assert world.claims.cancel_active_bundle(second.session_id, "p-2")
        assert _events(notifications, "p-1") == [ANSWERABLE, EXPIRED_EVENT]
        assert _events(notifications, "p-2") == [ANSWERABLE, CANCELLED_EVENT]

    def test_each_event_is_recorded_once_per_occurrence(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        """A claim rolled back and won again at the same instant is one resolution (one
        ``event_key``); the entries carry the transitions' own times."""
        created = world.bundle_in_new_session("p-1", questions=2)
        world.clock.set(world.clock.peek(), step=timedelta(0))
        first = claim(world, "p-1")
        ids = [row.id for row in first.rows]
        assert world.claims.restore_active_bundle("p-1", ANSWERED, ids)
        again = claim(world, "p-1")
        assert again.claimed
        assert again.responded_at == first.responded_at
        entries = notifications.entries("p-1")
        assert [(e.event, e.created_at) for e in entries] == [
            (ANSWERABLE, created.created_at),
            (RESOLVED, again.responded_at),
        ]
        assert len({e.idempotency_key for e in entries}) == 2

    # -- leases --------------------------------------------------------------------------------

    def test_a_due_entry_is_handed_out_once_while_its_lease_lives(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        world.bundle_in_new_session("p-1")
        now = world.clock.peek()
        (held,) = notifications.claim_due(now, limit=10, lease_s=LEASE_S)
        assert held.lease_token
        assert notifications.claim_due(now, limit=10, lease_s=LEASE_S) == ()
        (again,) = notifications.claim_due(
            now + timedelta(seconds=LEASE_S + 1), limit=10, lease_s=1
        )
        assert again.id == held.id
        assert again.lease_token != held.lease_token
        # The first holder's lease is gone: it can neither finish nor retry the entry.
        assert not notifications.finish(held.id, held.lease_token, DONE)
        assert not notifications.retry(held.id, held.lease_token, now, "late")
        assert notifications.finish(again.id, again.lease_token, DONE)
        assert notifications.claim_due(now + timedelta(days=1), limit=10, lease_s=1) == ()

    def test_entries_not_yet_due_are_not_handed_out(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        world.bundle_in_new_session("p-1")
        (held,) = notifications.claim_due(world.clock.peek(), limit=10, lease_s=LEASE_S)
        later = _follow_up("p-1", "k-later", world, later_s=300)
        assert notifications.finish(held.id, held.lease_token, DONE, follow_ups=[later])
        assert notifications.claim_due(world.clock.peek(), limit=10, lease_s=LEASE_S) == ()
        due = world.clock.peek() + timedelta(seconds=301)
        (reminder,) = notifications.claim_due(due, limit=10, lease_s=LEASE_S)
        assert (reminder.event, reminder.route_id, reminder.sequence) == (REMINDER, "r-1", 1)
        assert reminder.idempotency_key == "k-later"

    def test_a_follow_up_with_a_known_idempotency_key_is_recorded_once(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        world.bundle_in_new_session("p-1")
        world.bundle_in_new_session("p-2")
        first, second = notifications.claim_due(world.clock.peek(), limit=10, lease_s=LEASE_S)
        same = _follow_up("p-1", "k-1", world)
        assert notifications.finish(first.id, first.lease_token, DONE, follow_ups=[same, same])
        assert notifications.finish(second.id, second.lease_token, DONE, follow_ups=[same])
        keys = [entry.idempotency_key for entry in notifications.entries()]
        assert keys.count("k-1") == 1

    def test_finish_and_take_hands_the_follow_ups_due_now_to_the_caller_under_a_lease(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        """#32: an event's deliveries due at once go to the worker that fanned it out, in the
        finishing transaction — leased like ``claim_due``'s, so no one else takes them while
        the lease lives and they come back when it passes (at-least-once)."""
        world.bundle_in_new_session("p-1")
        now = world.clock.peek()
        (event,) = notifications.claim_due(now, limit=10, lease_s=LEASE_S)
        due_now = attrs.evolve(_follow_up("p-1", "k-now", world), origin_key=event.idempotency_key)
        later = _follow_up("p-1", "k-later", world, later_s=300)
        taken = notifications.finish_and_take(
            event.id, event.lease_token, DONE, follow_ups=[later, due_now], now=now, lease_s=LEASE_S
        )
        assert taken is not None
        (held,) = taken
        assert (held.idempotency_key, held.status, held.attempts) == ("k-now", DUE, 0)
        assert (held.event, held.route_id, held.sequence) == (REMINDER, "r-1", 1)
        assert held.origin_key == event.idempotency_key
        assert held.lease_token
        assert notifications.claim_due(now, limit=10, lease_s=LEASE_S) == ()
        (again,) = notifications.claim_due(
            now + timedelta(seconds=LEASE_S + 1), limit=10, lease_s=LEASE_S
        )
        assert (again.id, again.idempotency_key) == (held.id, "k-now")
        assert not notifications.finish(held.id, held.lease_token, DONE)
        assert notifications.finish(again.id, again.lease_token, DONE)
        statuses = {e.idempotency_key: e.status for e in notifications.entries("p-1")}
        assert statuses == {event.idempotency_key: DONE, "k-now": DONE, "k-later": DUE}

    def test_finish_and_take_hands_out_no_known_key_and_nothing_without_the_lease(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        """#32: a follow-up skipped for its known key stays with whoever holds it; a caller
        whose lease is gone gets None and writes nothing."""
        world.bundle_in_new_session("p-1")
        world.bundle_in_new_session("p-2")
        now = world.clock.peek()
        first, second = notifications.claim_due(now, limit=10, lease_s=LEASE_S)
        same = _follow_up("p-1", "k-1", world)
        taken = notifications.finish_and_take(
            first.id, first.lease_token, DONE, follow_ups=[same], now=now, lease_s=LEASE_S
        )
        assert [entry.idempotency_key for entry in taken or ()] == ["k-1"]
        assert (
            notifications.finish_and_take(
                second.id, second.lease_token, DONE, follow_ups=[same], now=now, lease_s=LEASE_S
            )
            == ()
        )
        assert (
            notifications.finish_and_take(
                second.id,
                second.lease_token,
                DROPPED,
                follow_ups=[_follow_up("p-2", "k-2", world)],
                now=now,
                lease_s=LEASE_S,
            )
            is None
        )
        keys = [entry.idempotency_key for entry in notifications.entries()]
        assert keys.count("k-1") == 1
        assert "k-2" not in keys
        assert {e.status for e in notifications.entries() if not e.route_id} == {DONE}

    def test_a_follow_up_keeps_the_key_of_the_event_it_follows_from(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        """#32: the relation of an entry to its event is stored as data (``origin_key``), read
        back with the entry; an event has none."""
        world.bundle_in_new_session("p-1")
        (event,) = notifications.claim_due(world.clock.peek(), limit=10, lease_s=LEASE_S)
        assert event.origin_key == ""
        follow_up = attrs.evolve(
            _follow_up("p-1", "k-1", world, later_s=60), origin_key=event.idempotency_key
        )
        assert notifications.finish(event.id, event.lease_token, DONE, follow_ups=[follow_up])
        stored = {e.idempotency_key: e.origin_key for e in notifications.entries("p-1")}
        assert stored == {event.idempotency_key: "", "k-1": event.idempotency_key}

    def test_a_retry_counts_the_attempt_and_waits_until_it_is_due(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        world.bundle_in_new_session("p-1")
        now = world.clock.peek()
        (held,) = notifications.claim_due(now, limit=10, lease_s=LEASE_S)
        later = now + timedelta(seconds=30)
        assert notifications.retry(held.id, held.lease_token, later, "receiver said 500")
        assert notifications.claim_due(now, limit=10, lease_s=LEASE_S) == ()
        (again,) = notifications.claim_due(later, limit=10, lease_s=LEASE_S)
        assert (again.attempts, again.last_error) == (1, "receiver said 500")
        assert again.idempotency_key == held.idempotency_key

    def test_concurrent_claimers_never_share_an_entry(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        for n in range(12):
            world.bundle_in_new_session(f"p-{n}")
        now = world.clock.peek()

        def take(_racer: int) -> list[str]:
            got: list[str] = []
            for _ in range(6):
                held = notifications.claim_due(now, limit=2, lease_s=LEASE_S)
                got.extend(entry.id for entry in held)
            return got

        taken = [entry_id for ids in race(4, take) for entry_id in ids]
        assert len(taken) == len(set(taken)) == 12

    def test_finished_entries_are_purged_and_due_ones_kept(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        world.bundle_in_new_session("p-1")
        world.bundle_in_new_session("p-2")
        (first,) = notifications.claim_due(world.clock.peek(), limit=1, lease_s=LEASE_S)
        assert notifications.finish(first.id, first.lease_token, DROPPED, error="why")
        assert notifications.purge_finished(world.clock.peek() + timedelta(seconds=1)) == 1
        assert [entry.status for entry in notifications.entries()] == [DUE]

    # -- routes --------------------------------------------------------------------------------

    def test_routes_are_stored_per_workspace_and_removed(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        spec = RouteSpec(
            workspace_id="ws-1",
            channel=parse_channel("webhook:https://hooks.example/x"),
            user_id="u-1",
            remind_after_s=60.0,
            deadline_after_s=600.0,
            on_deadline="default:q1_opt1",
            include_answers=True,
            secret="route-signing-secret",
        )
        route = notifications.add_route(spec, created_by="admin-1")
        default = notifications.add_route(
            RouteSpec(workspace_id="", channel=parse_channel("email:ops@example.com")),
            created_by="admin-1",
        )
        assert notifications.get_route(route.id) == route
        assert (route.created_by, route.on_deadline, route.include_answers) == (
            "admin-1",
            "default:q1_opt1",
            True,
        )
        # #29: a webhook route's own signing secret is kept with it.
        assert notifications.get_route(route.id).secret == "route-signing-secret"  # type: ignore[union-attr]
        assert notifications.routes_for("ws-1") == (route,)
        assert notifications.routes_for("") == (default,)
        assert {r.id for r in notifications.list_routes()} == {route.id, default.id}
        assert notifications.remove_route(route.id)
        assert not notifications.remove_route(route.id)
        assert notifications.get_route(route.id) is None

    def test_an_invalid_route_is_refused_naming_the_field(
        self, notifications: NotificationStore
    ) -> None:
        channel = parse_channel("email:a@example.com")
        with pytest.raises(ValidationError) as caught:
            notifications.add_route(
                RouteSpec(workspace_id="", channel=channel, on_deadline="expire"), created_by=""
            )
        assert caught.value.field == "on_deadline"
        with pytest.raises(ValidationError) as caught:
            notifications.add_route(
                RouteSpec(workspace_id="", channel=channel, remind_after_s=0), created_by=""
            )
        assert caught.value.field == "remind_after_s"
        assert notifications.list_routes() == ()

    # -- posted messages and chat-account links (issue #18) --------------------------------

    def test_posted_messages_are_recorded_once_and_listed_per_bundle_and_delivery(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        """#18: a channel finds what it posted for a bundle (to update it) and per delivery."""
        now = world.clock.peek()

        def message(pending_id: str, ts: str, key: str, kind: str = "slack") -> PostedMessage:
            return PostedMessage(
                pending_id=pending_id,
                route_id="r-1",
                channel_kind=kind,
                channel_id="C0123",
                message_id=ts,
                idempotency_key=key,
                posted_at=now + timedelta(seconds=float(ts)),
            )

        first, second = message("p-1", "1.000100", "k-1"), message("p-1", "2.000200", "k-2")
        assert notifications.record_posted(second)
        assert notifications.record_posted(first)
        assert not notifications.record_posted(attrs.evolve(first, pending_id="p-2"))
        assert notifications.record_posted(message("p-2", "3.000300", "k-3"))
        assert notifications.record_posted(message("p-1", "4.000400", "k-4", kind="other"))
        assert notifications.posted_for("p-1", "slack") == (first, second)
        assert notifications.posted_for("p-9", "slack") == ()
        assert notifications.posted_by_key("k-2") == (second,)
        assert notifications.posted_by_key("k-9") == ()

    def test_a_chat_account_links_to_one_user_and_unlinks(
        self, world: ContractWorld, notifications: NotificationStore
    ) -> None:
        """#18: ``clarion users link-slack``: one account answers as one user at a time."""
        assert notifications.chat_user("slack", "U1") is None
        before = world.clock.peek()
        first = notifications.link_chat_user("slack", "U1", "user-a")
        assert first.created_at >= before
        notifications.link_chat_user("slack", "U2", "user-a")
        notifications.link_chat_user("other", "U1", "user-c")
        again = notifications.link_chat_user("slack", "U1", "user-b")
        assert notifications.chat_user("slack", "U1") == again
        assert again.user_id == "user-b"
        assert {
            (link.external_id, link.user_id) for link in notifications.chat_user_links("slack")
        } == {
            ("U1", "user-b"),
            ("U2", "user-a"),
        }
        assert notifications.unlink_chat_user("slack", "U1")
        assert not notifications.unlink_chat_user("slack", "U1")
        assert notifications.chat_user("slack", "U1") is None
        assert notifications.chat_user("other", "U1") is not None


__all__ = ["NotificationStoreContract"]
