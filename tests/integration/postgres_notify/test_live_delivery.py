"""The LISTEN/NOTIFY adapter beyond the Waiters contract: what crosses processes — releasing
waits, events, mirrors, large answers — and lost notifications (a dropped listener must not
lose an answer, nor let one be answered twice)."""

from __future__ import annotations

import anyio
import psycopg
import pytest

from clarion.adapters.postgres_notify import DEFAULT_CHANNEL, libpq_conninfo
from clarion.adapters.postgres_notify.protocol import CancelSession, Envelope
from clarion.domain.model import REJECTED, Answer
from clarion.ports.events import Event
from clarion.ports.testing import ContractWorld
from clarion.ports.testing.waiters import (
    DELIVER_TIMEOUT_S,
    PROMPT_S,
    RecordingConfirm,
    sample_resolution,
    start_waiting,
)
from clarion.ports.waiters import Delivery, WaitEnd
from tests.contract.test_memory_contracts import memory_world
from tests.integration.postgres_notify.support import (
    FinalizeOnce,
    ReconnectGate,
    claim_answer,
    claim_reject,
    claimed_resolution,
    cut_listener,
    instance,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(name="world")
def fixture_world() -> ContractWorld:
    return memory_world()


async def test_releasing_a_session_in_one_process_releases_its_waits_in_another(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """Turn completion / terminal session on any replica releases the agent (facts §4.2)."""
    async with (
        instance(postgres_database_url, world) as holder,
        instance(postgres_database_url, world) as other,
    ):
        holder.waiters.register("p1", "s1")
        holder.waiters.register("p2", "s2")
        await holder.sync()
        async with anyio.create_task_group() as tasks:
            released = await start_waiting(tasks, holder.waiters, "p1")
            kept = await start_waiting(tasks, holder.waiters, "p2")
            assert other.waiters.cancel_session("s1") == ()
            with anyio.fail_after(PROMPT_S):
                await released.done.wait()
            assert not kept.done.is_set()
            assert holder.waiters.cancel("p2")
        assert released.reason is WaitEnd.CANCELLED
        assert kept.reason is WaitEnd.CANCELLED


async def test_an_operator_cancel_in_another_process_releases_the_wait_once(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """A9 on any replica: the entry is known everywhere, and cancel is true only once."""
    async with (
        instance(postgres_database_url, world) as holder,
        instance(postgres_database_url, world) as other,
    ):
        holder.waiters.register("p1", "s1")
        await holder.sync()
        await other.sync()
        assert other.waiters.has_entry("p1")
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1")
            assert other.waiters.cancel("p1")
            assert not other.waiters.cancel("p1")
        assert outcome.reason is WaitEnd.CANCELLED
        await holder.sync()
        await other.sync()
        assert not other.waiters.has_entry("p1")
        assert not holder.waiters.has_entry("p1")


async def test_a_late_session_release_never_cancels_an_ask_registered_after_it(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """A release reaches a process after its commit; an entry whose own registration was not
    yet committed then is newer than the release and keeps waiting."""
    async with (
        instance(postgres_database_url, world) as holder,
        instance(postgres_database_url, world) as other,
    ):
        late_release = Envelope(sender=other.instance, message=CancelSession("s1"))
        holder.waiters.register("p1", "s1")
        holder.waiters.receive(late_release)
        assert holder.waiters.has_entry("p1")
        await holder.sync()
        holder.waiters.receive(late_release)
        assert not holder.waiters.has_entry("p1")


async def test_a_wait_on_a_bundle_registered_in_another_process_is_answered_too(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """``GET /:id/wait`` on any replica: every waiter receives the answer, confirmed once."""
    async with (
        instance(postgres_database_url, world) as creator,
        instance(postgres_database_url, world) as mirror,
        instance(postgres_database_url, world) as responder,
    ):
        creator.waiters.register("p1", "s1")
        await creator.sync()
        await mirror.sync()
        confirm = RecordingConfirm()
        async with anyio.create_task_group() as tasks:
            original = await start_waiting(tasks, creator.waiters, "p1", confirm=confirm)
            mirrored = await start_waiting(tasks, mirror.waiters, "p1", confirm=confirm)
            with anyio.fail_after(PROMPT_S):
                result = await responder.waiters.deliver(
                    "p1", sample_resolution(), confirm, DELIVER_TIMEOUT_S
                )
        assert result.outcome is Delivery.DELIVERED
        assert original.resolution == mirrored.resolution == sample_resolution()
        assert (original.confirmed_before_return, mirrored.confirmed_before_return) == (1, 1)
        assert confirm.calls == 1


async def test_an_answer_too_large_for_one_notification_arrives_whole(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """N8b allows 2000 code points of free text per question; NOTIFY carries under 8000
    bytes, so the offer is split and reassembled."""
    text = "\U0001f600é" * 1000
    resolution = sample_resolution().__class__(
        **{
            **{
                field: getattr(sample_resolution(), field)
                for field in ("pending_id", "status", "rejected", "responded_at", "claimed")
            },
            "answers": tuple(Answer(question_id=f"q{i}", custom_text=text) for i in range(4)),
            "reject_reason": "",
        }
    )
    async with (
        instance(postgres_database_url, world) as holder,
        instance(postgres_database_url, world) as responder,
    ):
        holder.waiters.register("p1", "s1")
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1")
            with anyio.fail_after(PROMPT_S):
                result = await responder.waiters.deliver(
                    "p1", resolution, RecordingConfirm(), DELIVER_TIMEOUT_S
                )
        assert result.outcome is Delivery.DELIVERED
        assert outcome.resolution == resolution


async def test_events_published_in_one_process_reach_every_process_once(
    postgres_database_url: str, world: ContractWorld
) -> None:
    event = Event(
        kind="bundle.resolved",
        task_id="t1",
        session_id="s1",
        pending_id="p1",
        data={"message_ids": ["m1"], "statuses": ["answered"]},
    )
    marker = Event(kind="session.updated", task_id="t1", session_id="s1", data={"state": "IDLE"})
    async with (
        instance(postgres_database_url, world) as publisher,
        instance(postgres_database_url, world) as other,
    ):
        local, remote = publisher.events.subscribe(), other.events.subscribe()
        publisher.events.publish(event)
        publisher.events.publish(marker)
        with anyio.fail_after(PROMPT_S):
            assert [await anext(remote), await anext(remote)] == [event, marker]
            assert [await anext(local), await anext(local)] == [event, marker]
            await publisher.sync()
            other.events.publish(marker)
            assert await anext(local) == marker


async def test_a_process_that_leaves_is_forgotten_by_the_others(
    postgres_database_url: str, world: ContractWorld
) -> None:
    async with instance(postgres_database_url, world) as staying:
        async with instance(postgres_database_url, world) as leaving:
            leaving.waiters.register("p1", "s1")
            await leaving.sync()
            await staying.sync()
            assert staying.waiters.has_entry("p1")
        await staying.sync()
        assert not staying.waiters.has_entry("p1")
        with anyio.fail_after(PROMPT_S):
            result = await staying.waiters.deliver(
                "p1", sample_resolution(), RecordingConfirm(), DELIVER_TIMEOUT_S
            )
        assert result.outcome is Delivery.NO_WAITER


# -- lost notifications ----------------------------------------------------------------------


async def test_an_answer_given_while_the_holder_was_deaf_resumes_the_agent_and_ends_the_wait(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """R6/R7: the answer took the detached path; when the holder hears again it re-reads the
    bundle and releases its waiter instead of handing the answer over a second time."""
    session = world.session()
    bundle = world.ask(session.id, "p1")
    gate = ReconnectGate()
    async with (
        instance(postgres_database_url, world, gate=gate) as holder,
        instance(postgres_database_url, world) as responder,
    ):
        holder.waiters.register("p1", session.id)
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1")
            await cut_listener(postgres_database_url, holder)
            with anyio.fail_after(PROMPT_S):
                await gate.deaf.wait()
            result = claim_answer(world, bundle.pending_id)
            confirm = FinalizeOnce(world, result)
            with anyio.fail_after(PROMPT_S):
                delivery = await responder.waiters.deliver(
                    "p1", claimed_resolution(result, "p1"), confirm, DELIVER_TIMEOUT_S
                )
            assert delivery.outcome is Delivery.NO_WAITER
            await confirm()  # the resolver finalizes once the resume was accepted
            assert not outcome.done.is_set()
            gate.opened.set()
            with anyio.fail_after(PROMPT_S):
                await outcome.done.wait()
        assert outcome.reason is WaitEnd.CANCELLED
        assert confirm.calls == 1


async def test_a_rejection_given_while_the_holder_was_deaf_still_reaches_the_agent(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """R9: a detached rejection resumes nobody, so the waiter is the only one to tell."""
    session = world.session()
    world.ask(session.id, "p1")
    gate = ReconnectGate()
    async with (
        instance(postgres_database_url, world, gate=gate) as holder,
        instance(postgres_database_url, world) as responder,
    ):
        holder.waiters.register("p1", session.id)
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1")
            await cut_listener(postgres_database_url, holder)
            with anyio.fail_after(PROMPT_S):
                await gate.deaf.wait()
            result = claim_reject(world, "p1")
            confirm = FinalizeOnce(world, result, REJECTED)
            with anyio.fail_after(PROMPT_S):
                delivery = await responder.waiters.deliver(
                    "p1", claimed_resolution(result, "p1"), confirm, DELIVER_TIMEOUT_S
                )
            assert delivery.outcome is Delivery.NO_WAITER
            await confirm()
            gate.opened.set()
            with anyio.fail_after(PROMPT_S):
                await outcome.done.wait()
        assert outcome.resolution is not None
        assert outcome.resolution.rejected
        assert outcome.resolution.responded_at == result.responded_at


async def test_a_delivery_taken_just_before_the_holder_went_deaf_is_handed_over_after(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """The verdict was sent while the holder could not hear it: the finalized rows say the
    confirmation succeeded, so the waiter gets its answer — once."""
    session = world.session()
    world.ask(session.id, "p1")
    gate = ReconnectGate()
    async with (
        instance(postgres_database_url, world, gate=gate) as holder,
        instance(postgres_database_url, world) as responder,
    ):
        holder.waiters.register("p1", session.id)
        result = claim_answer(world, "p1")
        finalize = FinalizeOnce(world, result)

        async def deafen_then_finalize() -> None:
            await cut_listener(postgres_database_url, holder)
            await gate.deaf.wait()
            await finalize()

        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1")
            with anyio.fail_after(PROMPT_S):
                delivery = await responder.waiters.deliver(
                    "p1", claimed_resolution(result, "p1"), deafen_then_finalize, DELIVER_TIMEOUT_S
                )
            assert delivery.outcome is Delivery.DELIVERED
            assert not outcome.done.is_set()
            gate.opened.set()
            with anyio.fail_after(PROMPT_S):
                await outcome.done.wait()
        assert outcome.resolution == claimed_resolution(result, "p1")
        assert finalize.calls == 1


async def test_a_responder_that_loses_its_listener_mid_offer_still_delivers_once(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """The offer is repeated after the responder reconnects; the holder answers the repeat
    from what it already did, so the confirmation still runs exactly once."""
    gate = ReconnectGate()
    async with (
        instance(postgres_database_url, world) as holder,
        instance(postgres_database_url, world, gate=gate) as responder,
    ):
        holder.waiters.register("p1", "s1")
        confirm = RecordingConfirm()
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1", confirm=confirm)
            await cut_listener(postgres_database_url, responder)
            with anyio.fail_after(PROMPT_S):
                await gate.deaf.wait()

            async def reconnect_soon() -> None:
                await holder.sync()
                gate.opened.set()

            tasks.start_soon(reconnect_soon)
            with anyio.fail_after(PROMPT_S):
                delivery = await responder.waiters.deliver(
                    "p1", sample_resolution(), confirm, DELIVER_TIMEOUT_S
                )
        assert delivery.outcome is Delivery.DELIVERED
        assert outcome.resolution == sample_resolution()
        assert confirm.calls == 1


async def test_a_bundle_superseded_while_the_holder_was_deaf_releases_the_wait(
    postgres_database_url: str, world: ContractWorld
) -> None:
    """A newer turn started elsewhere while the release could not be heard (facts §4.4)."""
    session = world.session()
    world.ask(session.id, "p1")
    gate = ReconnectGate()
    async with instance(postgres_database_url, world, gate=gate) as holder:
        holder.waiters.register("p1", session.id)
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1")
            await cut_listener(postgres_database_url, holder)
            with anyio.fail_after(PROMPT_S):
                await gate.deaf.wait()
            world.host.start_turn(session.id)
            gate.opened.set()
            with anyio.fail_after(PROMPT_S):
                await outcome.done.wait()
        assert outcome.reason is WaitEnd.CANCELLED
        assert gate.attempts == 1


async def test_a_dropped_sending_connection_is_replaced_without_losing_a_delivery(
    postgres_database_url: str, world: ContractWorld
) -> None:
    async with (
        instance(postgres_database_url, world) as holder,
        instance(postgres_database_url, world) as responder,
    ):
        async with await psycopg.AsyncConnection.connect(
            libpq_conninfo(postgres_database_url), autocommit=True
        ) as admin:
            cursor = await admin.execute(
                "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity"
                " WHERE application_name = %s",
                (f"{DEFAULT_CHANNEL}-send:{responder.instance}",),
            )
            assert await cursor.fetchall() == [(True,)]
        holder.waiters.register("p1", "s1")
        confirm = RecordingConfirm()
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1", confirm=confirm)
            with anyio.fail_after(PROMPT_S):
                result = await responder.waiters.deliver(
                    "p1", sample_resolution(), confirm, DELIVER_TIMEOUT_S
                )
        assert result.outcome is Delivery.DELIVERED
        assert outcome.resolution == sample_resolution()
