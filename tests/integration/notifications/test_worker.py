"""The notification worker (issue #17) on memory, SQLite and PostgreSQL, with a fake channel:
fan-out per workspace, no "please answer" after the answer, retries keeping the idempotency
key, send-time authorization, reminders, escalation and every deadline policy."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from clarion.adapters.receipts import Ed25519Verifier
from clarion.app.usecases.notifications import DeliveryPolicy
from clarion.domain.errors import NotActive
from clarion.domain.model import ANSWERED, EXPIRED, Answer, Identity
from clarion.domain.notifications import (
    ANSWERABLE,
    DONE,
    DROPPED,
    DUE,
    ESCALATION,
    FAILED,
    REMINDER,
    RESOLVED,
)
from clarion.domain.receipts import parse_receipt
from clarion.domain.resolved_by import IdentityKind, Surface
from clarion.ports.notifications import Sent
from tests.integration.notifications.support import (
    PUBLIC_URL,
    Counting,
    NotifyWorld,
    count_bundle_loads,
)

pytestmark = pytest.mark.anyio

HOOK_A = "webhook:https://hooks.example/a"
HOOK_B = "webhook:https://hooks.example/b"
HOOK_OTHER = "webhook:https://hooks.example/other"


def _statuses(world: NotifyWorld, event: str) -> list[str]:
    return [e.status for e in world.entries() if e.event == event and e.route_id]


async def test_an_answerable_bundle_notifies_each_route_of_its_workspace_once(
    world: NotifyWorld,
) -> None:
    workspace, other = world.workspace(), world.workspace()
    world.route(workspace.id, HOOK_A)
    world.route(workspace.id, "email:alice@example.com")
    world.route(other.id, HOOK_OTHER)
    world.ask(workspace.id)
    await world.drain()
    await world.drain()
    assert sorted(world.channel.events()) == [
        (ANSWERABLE, "alice@example.com"),
        (ANSWERABLE, "https://hooks.example/a"),
    ]
    (sent, _) = world.channel.sent
    assert sent.link == f"{PUBLIC_URL}/#p-1"
    assert [q.id for q in sent.questions] == ["q1"]
    assert sent.answers == ()


async def test_a_workspace_less_task_uses_the_default_routes(world: NotifyWorld) -> None:
    world.route("", HOOK_A)
    world.route(world.workspace().id, HOOK_OTHER)
    world.ask("")
    await world.drain()
    assert world.channel.events() == [(ANSWERABLE, "https://hooks.example/a")]


async def test_nothing_asks_for_an_answer_after_the_answer(world: NotifyWorld) -> None:
    """A notification whose bundle was resolved before delivery is dropped."""
    world.route("", HOOK_A)
    world.ask("")
    await world.answer("p-1")
    await world.drain()
    assert world.channel.events() == [(RESOLVED, "https://hooks.example/a")]
    assert _statuses(world, ANSWERABLE) == [DROPPED]
    # Answer text goes only to a route that opted in.
    assert world.channel.sent[0].answers == ()


async def test_a_rolled_back_claim_and_the_later_winner_announce_resolved_once(
    world: NotifyWorld,
) -> None:
    """A claim whose resume was refused is rolled back (R7a) after the outbox took its
    "resolved" event; when a later answer wins, each route hears "resolved" once, with the
    answer that stands, even when the worker reaches both events only afterwards."""
    world.route("", HOOK_A, include_answers=True, events=(RESOLVED,))
    world.ask("")
    claims = world.clarion.storage.claims
    first = claims.complete_active_bundle(
        "p-1", ANSWERED, {"q1": Answer(question_id="q1", selected_options=("q1_opt1",))}
    )
    assert first.claimed
    # Listing the outbox takes the claim's event into it, as a worker's round would.
    assert [e.event for e in world.entries() if not e.route_id] == [ANSWERABLE, RESOLVED]
    assert claims.restore_active_bundle("p-1", ANSWERED, [row.id for row in first.rows])
    world.advance(1)
    await world.answer("p-1", "q1_opt2")
    await world.drain()
    (sent,) = world.channel.sent
    assert [a.selected_options for a in sent.answers] == [("q1_opt2",)]
    resolved = [e for e in world.entries() if e.event == RESOLVED and e.route_id]
    assert sorted(e.status for e in resolved) == [DONE, DROPPED]
    (superseded,) = [e for e in resolved if e.status == DROPPED]
    assert superseded.last_error == "a later claim superseded this one"


async def test_a_route_that_opts_in_receives_the_answers_with_resolved(
    world: NotifyWorld,
) -> None:
    world.route("", HOOK_A, include_answers=True, events=(RESOLVED,))
    world.ask("")
    await world.answer("p-1")
    await world.drain()
    (sent,) = world.channel.sent
    assert [a.selected_options for a in sent.answers] == [("q1_opt2",)]
    assert sent.status == ANSWERED


async def test_a_transient_failure_is_retried_with_backoff_under_the_same_key(
    world: NotifyWorld,
) -> None:
    world.route("", HOOK_A, events=(ANSWERABLE,))
    world.channel.script = [Sent.RETRY, Sent.RETRY]
    world.ask("")
    await world.drain()
    assert len(world.channel.sent) == 1
    world.advance(4)  # the first backoff is 5 s
    await world.drain()
    assert len(world.channel.sent) == 1
    world.advance(2)
    await world.drain()
    world.advance(11)  # the second backoff is 10 s
    await world.drain()
    keys = {n.idempotency_key for n in world.channel.sent}
    assert len(world.channel.sent) == 3
    assert len(keys) == 1
    (delivery,) = [e for e in world.entries() if e.route_id]
    assert (delivery.status, delivery.attempts) == (DONE, 2)


async def test_a_permanent_failure_is_not_retried(world: NotifyWorld) -> None:
    world.route("", HOOK_A, events=(ANSWERABLE,))
    world.channel.script = [Sent.PERMANENT]
    world.ask("")
    await world.drain()
    world.advance(3600)
    await world.drain()
    assert len(world.channel.sent) == 1
    assert _statuses(world, ANSWERABLE) == [FAILED]


async def test_a_route_to_someone_who_cannot_see_the_workspace_never_sends(
    world: NotifyWorld,
) -> None:
    tokens = world.clarion.storage.tokens
    owner, outsider = tokens.create_user("owner"), tokens.create_user("outsider")
    workspace = world.workspace(owner_id=owner.id)
    world.route(workspace.id, "email:outsider@example.com", user_id=outsider.id)
    world.route(workspace.id, "email:owner@example.com", user_id=owner.id)
    world.ask(workspace.id)
    await world.drain()
    assert world.channel.events() == [(ANSWERABLE, "owner@example.com")]
    assert world.channel.sent[0].recipient == Identity.user(owner.id)
    # Checked at send time: a deactivated owner is not notified any more either.
    tokens.deactivate_user(owner.id)
    world.ask(workspace.id, pending_id="p-2")
    await world.drain()
    assert len(world.channel.sent) == 1


async def test_reminders_repeat_until_the_bundle_is_answered(world: NotifyWorld) -> None:
    world.route("", HOOK_A, events=(REMINDER,), remind_after_s=60.0)
    world.ask("")
    await world.drain()
    assert world.channel.sent == []
    world.advance(61)
    await world.drain()
    world.advance(60)
    await world.drain()
    assert [(n.event, n.sequence) for n in world.channel.sent] == [(REMINDER, 1), (REMINDER, 2)]
    assert len({n.idempotency_key for n in world.channel.sent}) == 2
    await world.answer("p-1")
    world.advance(60)
    await world.drain()
    assert len(world.channel.sent) == 2


async def test_an_unanswered_bundle_escalates_to_the_other_route(world: NotifyWorld) -> None:
    boss = world.route("", HOOK_B, events=(ESCALATION,))
    world.route("", HOOK_A, events=(ANSWERABLE,), escalate_after_s=300.0, escalate_to=boss.id)
    world.ask("")
    await world.drain()
    world.advance(301)
    await world.drain()
    assert world.channel.events() == [
        (ANSWERABLE, "https://hooks.example/a"),
        (ESCALATION, "https://hooks.example/b"),
    ]


async def test_a_keep_deadline_decides_nothing(world: NotifyWorld) -> None:
    world.route("", HOOK_A, events=(RESOLVED,), deadline_after_s=60.0)
    world.ask("")
    await world.drain()
    world.advance(61)
    await world.drain()
    bundle = world.clarion.storage.claims.load_bundle("p-1")
    assert bundle is not None
    assert bundle.rows[0].display_status == "pending"
    assert world.channel.sent == []


async def test_an_expire_deadline_ends_the_bundle_like_an_expiry(world: NotifyWorld) -> None:
    world.route("", HOOK_A, events=("expired",), deadline_after_s=60.0, on_deadline="expire")
    world.ask("")
    await world.drain()
    world.advance(61)
    await world.drain()
    bundle = world.clarion.storage.claims.load_bundle("p-1")
    assert bundle is not None
    assert bundle.rows[0].status == EXPIRED
    assert world.channel.events() == [("expired", "https://hooks.example/a")]


async def test_a_default_deadline_answers_through_the_resolver_as_the_system(
    world: NotifyWorld,
) -> None:
    world.route(
        "",
        HOOK_A,
        events=(RESOLVED,),
        include_answers=True,
        deadline_after_s=60.0,
        on_deadline="default:q1_opt1",
    )
    world.ask("")
    await world.drain()
    world.advance(61)
    await world.drain()
    bundle = world.clarion.storage.claims.load_bundle("p-1")
    assert bundle is not None
    assert bundle.rows[0].status == ANSWERED
    assert bundle.rows[0].response is not None
    assert bundle.rows[0].response.selected_options == ("q1_opt1",)
    # Issue #20: recorded as answered by the system, on the deadline surface.
    resolved_by = bundle.rows[0].resolved_by
    assert resolved_by is not None
    assert (resolved_by.kind, resolved_by.surface) == (IdentityKind.SYSTEM, Surface.DEADLINE)
    (sent,) = world.channel.sent
    assert sent.event == RESOLVED
    assert [a.selected_options for a in sent.answers] == [("q1_opt1",)]
    # Issue #34: a deadline's default yields a signed receipt like any other resolution.
    receipts = world.clarion.services.receipts
    assert receipts is not None
    receipt = await receipts.for_answer("p-1")
    assert receipt is not None
    parsed = parse_receipt(receipt)
    Ed25519Verifier().verify(parsed, await receipts.public_keys())
    assert parsed.payload["resolved_by"]["surface"] == "deadline"
    assert parsed.payload["resolved_by"]["kind"] == "system"
    assert parsed.payload["outcome"]["status"] == "answered"


@pytest.mark.parametrize("policy", ["expire", "default:q1_opt1"])
async def test_a_deadline_racing_a_human_answer_has_exactly_one_winner(
    world: NotifyWorld, policy: str
) -> None:
    world.route("", HOOK_A, events=(RESOLVED,), deadline_after_s=60.0, on_deadline=policy)
    world.ask("")
    await world.drain()
    world.advance(61)
    human: list[object] = []

    async def answer() -> None:
        try:
            resolution = await world.answer("p-1", "q1_opt2")
            human.append(resolution.answers[0].selected_options)
        except NotActive:
            human.append("not active")

    async with anyio.create_task_group() as group:
        group.start_soon(world.drain)
        group.start_soon(answer)
    bundle = world.clarion.storage.claims.load_bundle("p-1")
    assert bundle is not None
    row = bundle.rows[0]
    if row.status == EXPIRED:
        assert human == ["not active"]
    else:
        assert row.status == ANSWERED
        assert row.response is not None
        # Either the human or the deadline's default won; the human sees the winner either way.
        assert row.response.selected_options in (("q1_opt1",), ("q1_opt2",))
        assert human == [row.response.selected_options]


def _count_reads(world: NotifyWorld) -> tuple[Counting, Counting]:
    """Count the worker's bundle loads and task reads from now on."""
    worker: Any = world.worker
    tasks = Counting(worker._host, "get_task", "get_task_and_workspace")
    worker._host = tasks
    return count_bundle_loads(world), tasks


async def test_an_event_is_delivered_in_the_round_that_fans_it_out(world: NotifyWorld) -> None:
    """#32: the fan-out takes its deliveries due now with its own finish, under a lease, and
    sends them in the same round, reading the bundle and its task once for all of them."""
    tokens = world.clarion.storage.tokens
    owner = tokens.create_user("owner")
    workspace = world.workspace(owner_id=owner.id)
    world.route(workspace.id, HOOK_A)
    world.route(workspace.id, "email:owner@example.com", user_id=owner.id)
    world.ask(workspace.id)
    bundles, tasks = _count_reads(world)
    assert await world.worker.run_once() == 1
    assert sorted(world.channel.events()) == [
        (ANSWERABLE, "https://hooks.example/a"),
        (ANSWERABLE, "owner@example.com"),
    ]
    assert {n.workspace_id for n in world.channel.sent} == {workspace.id}
    assert _statuses(world, ANSWERABLE) == [DONE, DONE]
    assert await world.worker.run_once() == 0
    # One bundle load and one task read in all: the deliveries share the fan-out's.
    assert bundles.calls == ["load_bundle"]
    assert tasks.calls == ["get_task_and_workspace"]


async def test_entries_claimed_together_about_one_bundle_read_it_once(world: NotifyWorld) -> None:
    """#32 and #35: the answerable and resolved events of one bundle, claimed in one batch,
    and the resolved delivery that follows share one load of the bundle, one read of its
    task and one of its workspace's routes."""
    world.route("", HOOK_A, events=(RESOLVED,))
    world.ask("")
    await world.answer("p-1")
    bundles, tasks = _count_reads(world)
    worker: Any = world.worker
    routes = worker._store = Counting(worker._store, "routes_for")
    assert await worker.run_once() == 2
    assert world.channel.events() == [(RESOLVED, "https://hooks.example/a")]
    assert bundles.calls == ["load_bundle"]
    assert tasks.calls == ["get_task_and_workspace"]
    assert routes.calls == ["routes_for"]


async def test_a_batch_about_several_bundles_loads_each_once(world: NotifyWorld) -> None:
    """#35: a batch holding the events of several bundles, and the deliveries its fan-outs
    take, loads each bundle once — not once per entry — and reads the routes once."""
    world.route("", HOOK_A)
    pending_ids = ["p-1", "p-2", "p-3"]
    for pending_id in pending_ids:
        world.ask("", pending_id=pending_id)
        await world.answer(pending_id)
    bundles = count_bundle_loads(world)
    worker: Any = world.worker
    routes = worker._store = Counting(worker._store, "routes_for")
    assert await worker.run_once() == 2 * len(pending_ids)
    # Each bundle's answerable delivery is dropped (answered), its resolved one sent.
    assert sorted(n.pending_id for n in world.channel.sent) == pending_ids
    assert {n.event for n in world.channel.sent} == {RESOLVED}
    assert sorted(bundles.keys) == pending_ids
    assert routes.calls == ["routes_for"]


async def test_a_delivery_reads_its_bundle_once_and_its_task_once(world: NotifyWorld) -> None:
    """#32: a delivery handed out on its own (here a reminder) reads the bundle once and the
    task once — for the recipient's send-time check and the workspace it reports alike."""
    tokens = world.clarion.storage.tokens
    owner = tokens.create_user("owner")
    workspace = world.workspace(owner_id=owner.id)
    world.route(
        workspace.id,
        "email:owner@example.com",
        user_id=owner.id,
        events=(REMINDER,),
        remind_after_s=60.0,
    )
    world.ask(workspace.id)
    await world.drain()
    world.advance(61)
    bundles, tasks = _count_reads(world)
    assert await world.worker.run_once() == 1
    assert [(n.event, n.workspace_id) for n in world.channel.sent] == [(REMINDER, workspace.id)]
    assert bundles.calls == ["load_bundle"]
    assert tasks.calls == ["get_task_and_workspace"]


async def test_deliveries_beyond_max_in_flight_wait_for_the_next_round(
    world: NotifyWorld,
) -> None:
    """#32 and #29 S2: a fan-out hands its deliveries straight on only while the worker has
    room for them (``max_in_flight``); otherwise they are recorded unleased for a later round,
    and sent then."""
    world.route("", HOOK_A, events=(ANSWERABLE,))
    world.route("", HOOK_B, events=(ANSWERABLE,))
    world.ask("")
    policy = attrs.evolve(DeliveryPolicy(), max_in_flight=1)
    worker = attrs.evolve(world.worker, policy=policy)
    assert await worker.run_once() == 1
    assert world.channel.sent == []
    assert _statuses(world, ANSWERABLE) == [DUE, DUE]
    assert await worker.run_once() == 2
    assert sorted(world.channel.events()) == [
        (ANSWERABLE, "https://hooks.example/a"),
        (ANSWERABLE, "https://hooks.example/b"),
    ]
