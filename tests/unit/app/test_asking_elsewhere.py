"""Asking while another surface offers the same bundle (``alongside``), and the two-call ask
(``offer``, then ``rejoin``) that a multi round-trip protocol needs."""

from __future__ import annotations

import anyio
import pytest

from clarion.app.usecases.ask import AskResult
from clarion.domain.errors import NotFound
from clarion.domain.model import Question, Resolution, SessionState
from clarion.domain.resolved_by import Surface
from clarion.ports.waiters import WaitEnd, WaitEnded
from tests.unit.app.world import ALICE, BOB, AppWorld, answer_all, drafts, make_world

pytestmark = pytest.mark.anyio


@pytest.fixture(name="world")
def fixture_world() -> AppWorld:
    return make_world()


async def test_an_answer_from_alongside_is_claimed_and_delivered_to_the_wait(
    world: AppWorld,
) -> None:
    session = world.session()
    offered: list[str] = []

    async def alongside(pending_id: str, questions: tuple[Question, ...]) -> Resolution:
        offered.append(pending_id)
        return await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt2"), surface=Surface.REST
        )

    result = await world.services.asking.ask(ALICE, session.id, drafts(1), "", alongside=alongside)
    assert result.answers["q1"].selected_options == ("q1_opt2",)
    assert world.statuses(offered[0]) == ["answered"]
    assert world.dispatcher.requests == []  # delivered live, not resumed


async def test_alongside_is_cancelled_when_another_answer_ends_the_wait(world: AppWorld) -> None:
    session = world.session()
    started, cancelled = anyio.Event(), anyio.Event()
    box: list[AskResult] = []

    async def stalled(pending_id: str, questions: tuple[Question, ...]) -> Resolution | None:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return None

    async def ask() -> None:
        box.append(
            await world.services.asking.ask(ALICE, session.id, drafts(1), "", alongside=stalled)
        )

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            await started.wait()
            [pending_id] = world.memory_claims.active_pending_ids(session.id)
            await world.services.resolver.resolve(
                ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
            )
    assert cancelled.is_set()
    assert box[0].answers["q1"].selected_options == ("q1_opt1",)


async def test_a_failing_alongside_does_not_end_the_wait(world: AppWorld) -> None:
    session = world.session()
    failed = anyio.Event()
    box: list[AskResult] = []

    async def broken(pending_id: str, questions: tuple[Question, ...]) -> Resolution | None:
        failed.set()
        raise RuntimeError("the other surface broke")

    async def ask() -> None:
        box.append(
            await world.services.asking.ask(ALICE, session.id, drafts(1), "", alongside=broken)
        )

    with anyio.fail_after(10):
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            await failed.wait()
            [pending_id] = world.memory_claims.active_pending_ids(session.id)
            await world.services.resolver.resolve(
                ALICE, pending_id, answer_all(1, "opt3"), surface=Surface.REST
            )
    assert box[0].answers["q1"].selected_options == ("q1_opt3",)


async def test_offer_leaves_a_detached_bundle_whose_answer_resumes_the_agent(
    world: AppWorld,
) -> None:
    session = world.session()
    pending_id, questions = await world.services.asking.offer(ALICE, session.id, drafts(2), "")
    assert [question.id for question in questions] == ["q1", "q2"]
    assert not world.waiters.has_entry(pending_id)
    assert "bundle.detached" in world.events.kinds(pending_id)
    stored = world.host.get_session(session.id)
    assert stored is not None
    assert stored.state == SessionState.WAITING_FOR_INPUT
    resolution = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(2, "opt1"), surface=Surface.REST
    )
    assert resolution.claimed
    [resume] = world.dispatcher.requests
    assert resume.pending_id == pending_id


async def test_rejoin_waits_again_and_an_answer_from_alongside_is_delivered_live(
    world: AppWorld,
) -> None:
    session = world.session()
    pending_id, _ = await world.services.asking.offer(ALICE, session.id, drafts(1), "")

    async def form(pending: str, questions: tuple[Question, ...]) -> Resolution:
        return await world.services.resolver.resolve(
            ALICE, pending, answer_all(1, "opt2"), surface=Surface.REST
        )

    result = await world.services.asking.rejoin(ALICE, session.id, pending_id, alongside=form)
    assert result.answers["q1"].selected_options == ("q1_opt2",)
    assert world.dispatcher.requests == []
    stored = world.host.get_session(session.id)
    assert stored is not None
    assert stored.state == SessionState.RUNNING


async def test_rejoin_on_a_bundle_answered_meanwhile_returns_the_winner_and_its_alongside_loses(
    world: AppWorld,
) -> None:
    session = world.session()
    pending_id, _ = await world.services.asking.offer(ALICE, session.id, drafts(1), "")
    await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
    )
    seen: list[Resolution] = []

    async def late(pending: str, questions: tuple[Question, ...]) -> Resolution:
        seen.append(
            await world.services.resolver.resolve(
                ALICE, pending, answer_all(1, "opt2"), surface=Surface.REST
            )
        )
        return seen[-1]

    with anyio.fail_after(10):
        result = await world.services.asking.rejoin(ALICE, session.id, pending_id, alongside=late)
        again = await world.services.asking.rejoin(ALICE, session.id, pending_id)
    assert result.answers["q1"].selected_options == ("q1_opt1",)
    assert again.answers == result.answers
    assert seen == []  # a settled bundle is replayed at once; nothing else is offered
    assert len(world.dispatcher.requests) == 1  # the answer given between the calls, only


async def test_a_replay_from_alongside_ends_the_rejoined_wait_with_the_winner(
    world: AppWorld,
) -> None:
    """The bundle is claimed after rejoin found it open but before its own answer was: with
    nobody delivering to this wait (the claim went straight to the repository, as on another
    process with no live waiter here), the loser's replay ends it with the winner's answer."""
    session = world.session()
    pending_id, _ = await world.services.asking.offer(ALICE, session.id, drafts(1), "")
    winner = answer_all(1, "opt3")

    async def loses(pending: str, questions: tuple[Question, ...]) -> Resolution:
        claim = world.memory_claims.complete_active_bundle(
            pending, "answered", {answer.question_id: answer for answer in winner.answers}
        )
        assert claim.claimed
        return await world.services.resolver.resolve(
            ALICE, pending, answer_all(1, "opt2"), surface=Surface.REST
        )

    with anyio.fail_after(10):
        result = await world.services.asking.rejoin(ALICE, session.id, pending_id, alongside=loses)
    assert result.answers["q1"].selected_options == ("q1_opt3",)


async def test_rejoin_refuses_a_bundle_of_another_session_like_an_unknown_one(
    world: AppWorld,
) -> None:
    mine, other = world.session(), world.session()
    pending_id, _ = await world.services.asking.offer(ALICE, other.id, drafts(1), "")
    with pytest.raises(NotFound) as foreign:
        await world.services.asking.rejoin(ALICE, mine.id, pending_id)
    with pytest.raises(NotFound) as unknown:
        await world.services.asking.rejoin(ALICE, mine.id, "no-such-bundle")
    with pytest.raises(NotFound) as unseen:
        await world.services.asking.rejoin(BOB, other.id, pending_id)
    assert foreign.value.message == unknown.value.message == unseen.value.message


async def test_rejoin_on_a_bundle_closed_without_an_answer_ends_the_wait(world: AppWorld) -> None:
    session = world.session()
    pending_id, _ = await world.services.asking.offer(ALICE, session.id, drafts(1), "")
    await world.services.lifecycle.start_turn(ALICE, session.id)  # supersedes the bundle
    with anyio.fail_after(10), pytest.raises(WaitEnded) as ended:
        await world.services.asking.rejoin(ALICE, session.id, pending_id)
    assert ended.value.reason is WaitEnd.CANCELLED
