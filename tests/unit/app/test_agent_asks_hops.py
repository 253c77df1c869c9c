"""Issue #35: a ``tasks/get`` poll reads the ask's record and its bundle on ONE worker thread
(one hop through the Runner), not one hop for each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from clarion.adapters.memory.asks import InMemoryAskRecords
from clarion.app.usecases.agent_asks import AgentAsks, Asker, Progress, session_scope
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import NotFound
from clarion.domain.model import ANSWERED, Answer

from .world import ALICE, BOB, AppWorld, drafts, make_world

pytestmark = pytest.mark.anyio


class CountingRunner(Runner):
    """A Runner that counts the calls it runs on a worker thread."""

    hops = 0

    async def __call__(self, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        self.hops += 1
        return await super().__call__(function, *args, **kwargs)


def _asks(world: AppWorld, runner: Runner) -> AgentAsks:
    services = world.services_over(
        world.memory_claims, runner=runner, ask_records=InMemoryAskRecords(world.store)
    )
    assert services.agent_asks is not None
    return services.agent_asks


async def test_a_tasks_get_poll_is_one_hop_and_a_settled_one_adds_the_hand_over() -> None:
    world = make_world()
    runner = CountingRunner()
    asks = _asks(world, runner)
    session = world.session()
    asker = Asker.of(ALICE, "token", session_scope(session.id))
    record = await asks.start_task(asker, "key", session.id, drafts(1), "")

    runner.hops = 0
    assert (await asks.status(asker, record.id)).progress is Progress.WAITING
    assert runner.hops == 1

    won = world.memory_claims.complete_active_bundle(
        record.pending_id, ANSWERED, {"q1": Answer(question_id="q1", selected_options=("q1_opt1",))}
    )
    assert world.memory_claims.finalize_delivery(record.pending_id, ANSWERED, won.claimed_ids)
    runner.hops = 0
    assert (await asks.status(asker, record.id)).progress is Progress.RESOLVED
    assert runner.hops == 2  # the read, then the record handed over (moved to returned)
    runner.hops = 0
    assert (await asks.status(asker, record.id)).progress is Progress.RESOLVED
    assert runner.hops == 1

    runner.hops = 0
    with pytest.raises(NotFound):
        await asks.status(Asker.of(BOB, "token", session_scope(session.id)), record.id)
    assert runner.hops == 1


class CountingReads:
    """The in-memory claim repository, counting its bundle snapshots."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.rereads = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def reread_bundle(self, pending_id: str) -> Any:
        self.rereads += 1
        return self.inner.reread_bundle(pending_id)


async def test_a_poll_without_a_form_is_served_by_the_record_probe_while_the_ask_waits() -> None:
    """Issue #35: ``status(questions=False)`` answers a waiting ask from the ask record's probe
    (no snapshot of the bundle, no questions), and a settled one exactly as before."""
    world = make_world()
    claims = CountingReads(world.memory_claims)
    services = world.services_over(
        claims, runner=CountingRunner(), ask_records=InMemoryAskRecords(world.store)
    )
    asks = services.agent_asks
    assert asks is not None
    session = world.session()
    asker = Asker.of(ALICE, "token", session_scope(session.id))
    record = await asks.start_task(asker, "key", session.id, drafts(2), "why")

    waiting = await asks.status(asker, record.id, questions=False)
    assert (waiting.progress, waiting.questions, waiting.context) == (Progress.WAITING, (), "")
    assert waiting.record == record
    assert claims.rereads == 0
    shown = await asks.status(asker, record.id)
    assert shown.progress is Progress.WAITING
    assert [q.id for q in shown.questions] == ["q1", "q2"]
    assert claims.rereads == 1
    with pytest.raises(NotFound):
        await asks.status(
            Asker.of(BOB, "token", session_scope(session.id)), record.id, questions=False
        )

    answers = {
        qid: Answer(question_id=qid, selected_options=(f"{qid}_opt1",)) for qid in ("q1", "q2")
    }
    won = world.memory_claims.complete_active_bundle(record.pending_id, ANSWERED, answers)
    assert (await asks.status(asker, record.id, questions=False)).progress is Progress.WAITING
    assert claims.rereads == 1  # being delivered: still waiting, and the probe says so
    assert world.memory_claims.finalize_delivery(record.pending_id, ANSWERED, won.claimed_ids)
    settled = await asks.status(asker, record.id, questions=False)
    assert settled.progress is Progress.RESOLVED
    assert settled.result is not None
    assert [q.id for q in settled.questions] == ["q1", "q2"]
    assert claims.rereads == 2
