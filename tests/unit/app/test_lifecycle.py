"""Turn and session lifecycle around bundles (upstream facts §4.2–§4.6; §8.2 item 87)."""

from __future__ import annotations

import anyio
import pytest

from clarion.app.usecases.ask import AskResult
from clarion.domain.errors import ClaimError, InvalidArgument, NotActive, NotFound
from clarion.domain.model import ANSWERED, EXPIRED, Outcome, SessionState
from clarion.domain.resolved_by import Surface
from clarion.ports.testing.world import answers_for
from clarion.ports.waiters import WaitEnd, WaitEnded
from tests.unit.app.world import ALICE, BOB, AppWorld, answer_all, drafts, make_world

pytestmark = pytest.mark.anyio


@pytest.fixture(name="world")
def fixture_world() -> AppWorld:
    return make_world()


async def _ask(world: AppWorld, session_id: str, box: list[AskResult | WaitEnded]) -> None:
    try:
        box.append(await world.services.asking.ask(ALICE, session_id, drafts(2), ""))
    except WaitEnded as ended:
        box.append(ended)


async def _live_pending_id(world: AppWorld, session_id: str) -> str:
    while True:
        pending = world.memory_claims.active_pending_ids(session_id)
        if pending and world.waiters.has_entry(pending[0]):
            return pending[0]
        await anyio.lowlevel.checkpoint()


async def test_turn_completion_during_a_wait_releases_the_agent_and_resumes_it_later(
    world: AppWorld,
) -> None:
    """Facts §4.2: the waiter ends "agent moved on", the bundle detaches and stays answerable;
    the later answer resumes the agent through the dispatcher."""
    session = world.session()
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, box)
        pending_id = await _live_pending_id(world, session.id)
        detached = await world.services.lifecycle.complete_turn(ALICE, session.id)
    assert detached == 1
    [ended] = box
    assert isinstance(ended, WaitEnded)
    assert ended.reason is WaitEnd.CANCELLED
    assert [row.detached for row in world.rows(pending_id)] == [True, True]
    assert world.statuses(pending_id) == ["pending", "pending"]
    assert "bundle.detached" in world.events.kinds(pending_id)
    resolution = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(2, "opt1"), surface=Surface.REST
    )
    assert resolution.claimed
    [request] = world.dispatcher.requests
    assert (request.pending_id, request.session_id, request.task_id) == (
        pending_id,
        session.id,
        session.task_id,
    )
    assert world.statuses(pending_id) == [ANSWERED, ANSWERED]


async def test_repeated_turn_completion_detaches_nothing(world: AppWorld) -> None:
    session = world.session()
    await world.services.asking.create(ALICE, session.id, drafts(1), "")
    assert await world.services.lifecycle.complete_turn(ALICE, session.id) == 1
    before = list(world.events.published)
    assert await world.services.lifecycle.complete_turn(ALICE, session.id) == 0
    assert world.events.published == before


async def test_newer_turn_supersedes_the_bundle_and_releases_its_waiter(
    world: AppWorld,
) -> None:
    """Facts §4.4: no write; the bundle is no longer listed or answerable (R2 second branch)."""
    session = world.session()
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, box)
        pending_id = await _live_pending_id(world, session.id)
        turn = await world.services.lifecycle.start_turn(ALICE, session.id)
    current = world.host.current_turn(session.id)
    assert current is not None
    assert current.id == turn.id
    assert isinstance(box[0], WaitEnded)
    assert world.statuses(pending_id) == ["pending", "pending"]
    assert (await world.services.listing.list_pending(ALICE)).bundles == ()
    with pytest.raises(NotActive):
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(2, "opt1"), surface=Surface.REST
        )
    assert world.dispatcher.requests == []


async def test_terminal_session_state_expires_bundles_and_releases_waiters(
    world: AppWorld,
) -> None:
    """Facts §4.3."""
    session = world.session()
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, box)
        pending_id = await _live_pending_id(world, session.id)
        updated = await world.services.lifecycle.set_session_state(
            ALICE, session.id, SessionState.CANCELLED
        )
    assert updated.state == SessionState.CANCELLED
    assert isinstance(box[0], WaitEnded)
    assert world.statuses(pending_id) == [EXPIRED, EXPIRED]
    assert "bundle.expired" in world.events.kinds(pending_id)
    with pytest.raises(NotActive):
        await world.services.resolver.resolve(
            ALICE, pending_id, Outcome.reject(), surface=Surface.REST
        )


async def test_non_terminal_state_change_leaves_bundles_alone(world: AppWorld) -> None:
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    await world.services.lifecycle.set_session_state(ALICE, session.id, SessionState.IDLE)
    assert world.statuses(pending_id) == ["pending"]
    assert world.waiters.has_entry(pending_id)


async def test_unknown_state_is_rejected_naming_the_field(world: AppWorld) -> None:
    session = world.session()
    with pytest.raises(InvalidArgument) as error:
        await world.services.lifecycle.set_session_state(ALICE, session.id, "PAUSED")
    assert error.value.field == "state"


async def test_lifecycle_of_a_foreign_session_is_not_found(world: AppWorld) -> None:
    session = world.session(owner_id="alice")
    with pytest.raises(NotFound):
        await world.services.lifecycle.complete_turn(BOB, session.id)
    with pytest.raises(NotFound):
        await world.services.lifecycle.start_turn(BOB, session.id)
    with pytest.raises(NotFound):
        await world.services.lifecycle.set_session_state(BOB, session.id, SessionState.COMPLETED)
    stored = world.host.get_session(session.id)
    assert stored is not None
    assert stored.state == SessionState.RUNNING


async def test_startup_reconciliation_makes_an_interrupted_delivery_answerable_again(
    world: AppWorld,
) -> None:
    """Facts §4.6: a process that died between claim and delivery leaves the marker; the next
    process restores the bundle to pending before serving."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    bundle = world.memory_claims.load_bundle(pending_id)
    assert bundle is not None
    assert world.memory_claims.complete_active_bundle(
        pending_id, ANSWERED, answers_for(bundle)
    ).claimed
    restarted = world.restarted()
    report = await restarted.services.lifecycle.reconcile_on_startup()
    assert report.restored == (pending_id,)
    assert world.statuses(pending_id) == ["pending"]
    resolution = await restarted.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt2"), surface=Surface.REST
    )
    assert resolution.claimed


async def test_turn_completion_skips_superseded_and_resolved_bundles(world: AppWorld) -> None:
    """Facts §8.2 item 87: a superseded bundle and an answered one are not detached, and
    nothing is published for them."""
    session = world.session()
    superseded = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    await world.services.lifecycle.start_turn(ALICE, session.id)
    answered = await world.services.asking.create(ALICE, session.id, drafts(1, "Other"), "")
    await world.services.resolver.resolve(
        ALICE, answered, answer_all(1, "opt1"), surface=Surface.REST
    )
    before = list(world.events.published)
    assert await world.services.lifecycle.complete_turn(ALICE, session.id) == 0
    assert [row.detached for row in world.rows(superseded)] == [False]
    assert world.statuses(answered) == [ANSWERED]
    assert [e for e in world.events.published[len(before) :] if e.pending_id] == []


async def test_detach_failure_is_reported_as_a_claim_error(world: AppWorld) -> None:
    """Facts §8.2 item 87 ``DetachSessionAndNotifyReturnsPersistenceError``."""
    session = world.session()
    await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.claims.fail_detach = True
    with pytest.raises(ClaimError):
        await world.services.lifecycle.complete_turn(ALICE, session.id)
