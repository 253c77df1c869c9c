"""The answering side's edge cases, against a fake peer that listens like a replica but says
only what the test tells it: a peer that never answers, one that vanishes mid-offer, one that
takes an answer too late, one that disappears without saying goodbye — and a holder that
comes back while a delivery is still in flight."""

from __future__ import annotations

import anyio
import pytest

from clarion.adapters.memory import InMemoryStore
from clarion.adapters.postgres_notify.protocol import Offer, Register, Reply, Settled
from clarion.ports.testing.waiters import (
    DELIVER_TIMEOUT_S,
    PROMPT_S,
    RecordingConfirm,
    sample_resolution,
    start_waiting,
)
from clarion.ports.waiters import Delivery, DeliveryResult, WaitEnd
from tests.contract.test_memory_contracts import memory_world
from tests.integration.postgres_notify.support import (
    FakePeer,
    FinalizeOnce,
    ReadSpy,
    ReconnectGate,
    claim_answer,
    cut_listener,
    instance,
)

pytestmark = pytest.mark.anyio


async def test_an_answer_nobody_takes_in_time_fails_and_a_late_taker_never_gets_it(
    postgres_database_url: str,
) -> None:
    """A listening peer that does not reply keeps the delivery open until the timeout: FAILED
    (the resolver restores the bundle, R7a). Taking it afterwards gets a failed verdict, so the
    answer is never handed over behind the resolver's back."""
    world = memory_world()
    async with (
        FakePeer(postgres_database_url) as peer,
        instance(postgres_database_url, world) as responder,
    ):
        confirm = RecordingConfirm()
        results: list[DeliveryResult] = []

        async def deliver() -> None:
            results.append(await responder.waiters.deliver("p1", sample_resolution(), confirm, 0.5))

        with anyio.fail_after(PROMPT_S):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(deliver)
                _, offer = await peer.receive(Offer)
            assert results[0].outcome is Delivery.FAILED
            await peer.send(Reply(offer.nonce, taken=True), to=responder.instance)
            _, verdict = await peer.receive(Settled)
            await peer.send(Reply("unknown", taken=True), to=responder.instance)
            _, unknown = await peer.receive(Settled)
        assert (verdict.nonce, verdict.ok) == (offer.nonce, False)
        assert (unknown.nonce, unknown.ok) == ("unknown", False)
        assert confirm.calls == 0


async def test_a_peer_that_stops_listening_mid_offer_is_no_longer_waited_for(
    postgres_database_url: str,
) -> None:
    """``kill -9`` of the only other process after the offer went out: the answer takes the
    detached path within the liveness interval, not after the delivery timeout."""
    world = memory_world()
    async with (
        FakePeer(postgres_database_url) as peer,
        instance(postgres_database_url, world, liveness_interval=0.1) as responder,
    ):
        confirm = RecordingConfirm()
        results: list[DeliveryResult] = []

        async def deliver() -> None:
            results.append(
                await responder.waiters.deliver(
                    "p1", sample_resolution(), confirm, DELIVER_TIMEOUT_S
                )
            )

        with anyio.fail_after(PROMPT_S):
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(deliver)
                await peer.receive(Offer)
                await peer.vanish()
    assert results == [DeliveryResult(Delivery.NO_WAITER)]
    assert confirm.calls == 0


async def test_a_peer_that_vanished_without_goodbye_is_forgotten(
    postgres_database_url: str,
) -> None:
    world = memory_world()
    async with (
        FakePeer(postgres_database_url) as peer,
        instance(postgres_database_url, world) as other,
    ):
        await peer.send(Register("p1", "s1"))
        await other.sync()
        assert other.waiters.has_entry("p1")
        await other.waiters.prune_vanished()
        assert other.waiters.has_entry("p1")
        await peer.vanish()
        await other.waiters.prune_vanished()
        assert not other.waiters.has_entry("p1")


async def test_a_delivery_in_flight_when_the_holder_reconnects_is_read_again_until_settled(
    postgres_database_url: str,
) -> None:
    """Facts §4.6: rows still marked in delivery are somebody's unfinished work; the holder
    looks again later instead of guessing."""
    store = InMemoryStore()
    world = memory_world(store)
    spy = ReadSpy(store)
    session = world.session()
    world.ask(session.id, "p1")
    gate = ReconnectGate()
    async with instance(
        postgres_database_url, world, gate=gate, claims=spy, recheck_interval=0.2
    ) as holder:
        holder.waiters.register("p1", session.id)
        async with anyio.create_task_group() as tasks:
            outcome = await start_waiting(tasks, holder.waiters, "p1")
            await cut_listener(postgres_database_url, holder)
            with anyio.fail_after(PROMPT_S):
                await gate.deaf.wait()
            result = claim_answer(world, "p1")
            spy.bundle_read.clear()
            gate.opened.set()
            with anyio.fail_after(PROMPT_S):
                await anyio.to_thread.run_sync(spy.bundle_read.wait)
            assert not outcome.done.is_set()
            await FinalizeOnce(world, result)()
            with anyio.fail_after(PROMPT_S):
                await outcome.done.wait()
        assert outcome.reason is WaitEnd.CANCELLED
