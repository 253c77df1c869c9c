"""The one resolver: authorize, validate, claim, deliver or replay (spec R1–R9, P1/P2, M5, M5a;
upstream facts §5.3–§5.8 and §8.2 items 78–84)."""

from __future__ import annotations

import functools

import anyio
import attrs
import pytest
import structlog.testing

from clarion.app.usecases.ask import AskResult
from clarion.domain.errors import (
    NOT_ACTIVE_MESSAGE,
    NOT_FOUND_MESSAGE,
    ClaimError,
    DeliveryError,
    InvalidOutcome,
    NotActive,
    NotFound,
)
from clarion.domain.model import ANSWERED, REJECTED, Answer, Outcome, Resolution, SessionState
from clarion.domain.resolved_by import Surface
from clarion.domain.rows import clarification_metadata
from clarion.ports.testing import sample_question
from clarion.ports.waiters import WaitEnded
from tests.unit.app.world import (
    ALICE,
    BOB,
    UNSCOPED,
    AppWorld,
    answer_all,
    drafts,
    make_world,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(name="world")
def fixture_world() -> AppWorld:
    return make_world()


async def _ask_in_background(
    world: AppWorld, session_id: str, box: list[AskResult | WaitEnded], count: int = 1
) -> None:
    try:
        box.append(await world.services.asking.ask(ALICE, session_id, drafts(count), "ctx"))
    except WaitEnded as ended:
        box.append(ended)


async def _live_pending_id(world: AppWorld, session_id: str) -> str:
    """Wait until the background ask's bundle is durable and its waiter is live."""
    while True:
        pending = world.memory_claims.active_pending_ids(session_id)
        if pending and world.waiters.has_entry(pending[0]):
            return pending[0]
        await anyio.lowlevel.checkpoint()


async def test_winner_delivers_to_the_live_waiter_with_every_selected_option(
    world: AppWorld,
) -> None:
    """R1, R7, fixes §9.25: the asking agent receives all selected options and the text."""
    session = world.session()
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask_in_background, world, session.id, box, 2)
        pending_id = await _live_pending_id(world, session.id)
        outcome = Outcome.answer(
            Answer("q2", ("q2_opt3",), "  later please  "),
            Answer("q1", ("q1_opt3", "q1_opt1", "q1_opt3")),
        )
        resolution = await world.services.resolver.resolve(
            UNSCOPED, pending_id, outcome, surface=Surface.REST
        )
    assert resolution.claimed is True
    assert resolution.status == ANSWERED
    assert resolution.answers == (
        Answer("q1", ("q1_opt1", "q1_opt3")),
        Answer("q2", ("q2_opt3",), "later please"),
    )
    [result] = box
    assert isinstance(result, AskResult)
    assert result.answers["q1"].selected_options == ("q1_opt1", "q1_opt3")
    assert world.statuses(pending_id) == [ANSWERED, ANSWERED]
    assert not any(row.delivery_pending for row in world.rows(pending_id))
    assert world.dispatcher.requests == []
    assert world.events.kinds(pending_id).count("bundle.resolved") == 1


async def test_concurrent_resolvers_on_a_live_bundle_have_exactly_one_winner(
    world: AppWorld,
) -> None:
    """R1, R2, R3: exactly one claims; every loser gets the winner's normalized payload;
    nobody errors; the waiter is delivered once; only the winner publishes (R4)."""
    session = world.session()
    box: list[AskResult | WaitEnded] = []
    results: list[Resolution] = []

    async def answer(option: int) -> None:
        outcome = answer_all(2, f"opt{option}", f"opt{option}", text=f" choice {option} ")
        results.append(
            await world.services.resolver.resolve(
                UNSCOPED, pending_id, outcome, surface=Surface.REST
            )
        )

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask_in_background, world, session.id, box, 2)
        pending_id = await _live_pending_id(world, session.id)
        async with anyio.create_task_group() as answerers:
            for option in (1, 2, 3) * 4:
                answerers.start_soon(answer, option)
    winners = [r for r in results if r.claimed]
    assert len(results) == 12
    assert len(winners) == 1
    for loser in (r for r in results if not r.claimed):
        assert attrs.evolve(loser, claimed=True) == winners[0]
    assert isinstance(box[0], AskResult)
    assert box[0].answers == {answer.question_id: answer for answer in winners[0].answers}
    assert world.claims.finalize_calls == 1
    assert world.events.kinds(pending_id).count("bundle.resolved") == 1


async def test_concurrent_resolvers_on_threads_claim_once_and_resume_once(
    world: AppWorld,
) -> None:
    """R1–R4 with callers on separate OS threads and a detached bundle: one claim, one
    resume, every loser replays the winner."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    results: list[Resolution] = []

    def answer_from_a_thread(option: int) -> None:
        outcome = answer_all(1, f"opt{option}")
        results.append(
            anyio.from_thread.run(
                functools.partial(world.services.resolver.resolve, surface=Surface.REST),
                UNSCOPED,
                pending_id,
                outcome,
            )
        )

    limiter = anyio.CapacityLimiter(16)
    async with anyio.create_task_group() as tasks:
        for option in (1, 2, 3) * 5:
            tasks.start_soon(
                functools.partial(
                    anyio.to_thread.run_sync, answer_from_a_thread, option, limiter=limiter
                )
            )
    winners = [r for r in results if r.claimed]
    assert len(results) == 15
    assert len(winners) == 1
    assert {attrs.evolve(r, claimed=True) for r in results} == {winners[0]}
    assert len(world.dispatcher.requests) == 1


async def test_loser_replays_the_winner_with_the_same_responded_at(world: AppWorld) -> None:
    """R2, R2b, §5.6: claimed=false, the winner's normalized answers and timestamp."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(2), "")
    winner = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(2, "opt2", "opt1", text="  both  "), surface=Surface.REST
    )
    before = list(world.events.published)
    loser = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(2, "opt3"), surface=Surface.REST
    )
    assert winner.claimed is True
    assert loser.claimed is False
    assert loser.answers == winner.answers
    assert loser.responded_at == winner.responded_at
    assert world.events.published == before, "a loser never publishes (R4)"
    assert len(world.dispatcher.requests) == 1, "a loser never resumes (R4)"


async def test_loser_of_a_rejection_replays_it_without_the_reason(world: AppWorld) -> None:
    """R2b: a replayed rejection has no answers and an empty reason."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    await world.services.resolver.resolve(
        ALICE, pending_id, Outcome.reject("not now"), surface=Surface.REST
    )
    loser = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
    )
    assert (loser.claimed, loser.status, loser.rejected) == (False, REJECTED, True)
    assert loser.answers == ()
    assert loser.reject_reason == ""


async def test_superseded_bundle_is_not_active(world: AppWorld) -> None:
    """R2 second branch: no winner → NotActive, nothing written, no event, no resume."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    await world.services.lifecycle.start_turn(ALICE, session.id)
    before = list(world.events.published)
    with pytest.raises(NotActive) as error:
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert error.value.message == NOT_ACTIVE_MESSAGE
    assert world.statuses(pending_id) == ["pending"]
    assert world.events.published == before
    assert world.dispatcher.requests == []


async def test_terminal_session_bundle_is_not_active(world: AppWorld) -> None:
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.host.set_session_state(session.id, SessionState.COMPLETED)
    with pytest.raises(NotActive):
        await world.services.resolver.resolve(
            ALICE, pending_id, Outcome.reject(), surface=Surface.REST
        )


async def test_validation_runs_before_the_loser_branch(world: AppWorld) -> None:
    """R2c: a malformed answer to a resolved bundle gets its validation error, no replay."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
    )
    with pytest.raises(InvalidOutcome) as error:
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt9"), surface=Surface.REST
        )
    assert error.value.field == "answers[0].selected_options"


async def test_invalid_outcome_leaves_the_bundle_untouched(world: AppWorld) -> None:
    """N8c: validation precedes the claim."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(2), "")
    with pytest.raises(InvalidOutcome):
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert world.statuses(pending_id) == ["pending", "pending"]


async def test_unknown_and_foreign_bundles_are_the_same_not_found(world: AppWorld) -> None:
    """A1, A3, A5: a denial is indistinguishable from a missing bundle."""
    session = world.session(owner_id="alice")
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    with pytest.raises(NotFound) as foreign:
        await world.services.resolver.resolve(
            BOB, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    with pytest.raises(NotFound) as missing:
        await world.services.resolver.resolve(
            BOB, "no-such-id", answer_all(1, "opt1"), surface=Surface.REST
        )
    assert foreign.value.message == missing.value.message == NOT_FOUND_MESSAGE
    assert world.statuses(pending_id) == ["pending"]
    resolution = await world.services.resolver.resolve(
        UNSCOPED, pending_id, Outcome.reject(), surface=Surface.REST
    )
    assert resolution.claimed  # A4: unscoped callers are never denied


def _seed_legacy_bundle(world: AppWorld, session_id: str, pending_id: str) -> None:
    """A bundle whose rows carry an empty task id (M5), as upstream's create could leave."""
    turn = world.host.current_turn(session_id)
    assert turn is not None
    world.host.append_message(
        session_id,
        turn_id=turn.id,
        content="Question 1?",
        author_type="agent",
        type="clarification_request",
        metadata=clarification_metadata(
            pending_id=pending_id, question=sample_question(1), index=0, total=1, context=""
        ),
        task_id="",
    )


async def test_empty_task_id_resolves_from_the_session_and_resumes_with_it(
    world: AppWorld,
) -> None:
    """M5: the owner may answer a bundle whose rows have no task id, and the detached resume
    carries the session's task (fixes §9.28)."""
    session = world.session(owner_id="alice")
    _seed_legacy_bundle(world, session.id, "legacy")
    resolution = await world.services.resolver.resolve(
        ALICE, "legacy", answer_all(1, "opt1"), surface=Surface.REST
    )
    assert resolution.claimed
    [request] = world.dispatcher.requests
    assert request.task_id == session.task_id
    assert request.session_id == session.id
    with pytest.raises(NotFound):
        await world.services.resolver.authorize_bundle(BOB, "legacy")


async def test_unresolvable_task_is_not_found_for_scoped_callers_only(world: AppWorld) -> None:
    """M5a: neither the rows nor the session yield a task id."""
    session = world.session(owner_id="alice")
    _seed_legacy_bundle(world, session.id, "orphan")
    with world.store.lock:
        world.store.sessions[session.id] = attrs.evolve(session, task_id="")
    with pytest.raises(NotFound):
        await world.services.resolver.resolve(
            ALICE, "orphan", answer_all(1, "opt1"), surface=Surface.REST
        )
    bundle = await world.services.resolver.authorize_bundle(UNSCOPED, "orphan")
    assert bundle.task_id == ""


async def test_restart_between_ask_and_answer_resumes_through_the_dispatcher(
    world: AppWorld,
) -> None:
    """R6: a fresh process over the same store lists the bundle, claims it exactly once, and
    resumes the agent through the dispatcher; a second answer replays."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    restarted = world.restarted()
    page = await restarted.services.listing.list_pending(ALICE)
    assert [bundle.pending_id for bundle in page.bundles] == [pending_id]
    first = await restarted.services.resolver.resolve(
        UNSCOPED, pending_id, answer_all(1, "opt2"), surface=Surface.REST
    )
    second = await restarted.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
    )
    assert (first.claimed, second.claimed) == (True, False)
    assert second.answers == first.answers
    [request] = restarted.dispatcher.requests
    assert request.pending_id == pending_id
    assert request.answers == (Answer("q1", ("q1_opt2",)),)
    assert "Ship 1?" in request.prompt
    assert "Yes" not in request.prompt
    assert "No (q1_opt2)" in request.prompt
    assert world.dispatcher.requests == []
    assert not any(row.delivery_pending for row in world.rows(pending_id))


@pytest.mark.parametrize("mode", ["refuse", "hang"])
async def test_refused_or_timed_out_resume_leaves_the_bundle_answerable(mode: str) -> None:
    """R7, R7a: the caller gets a retryable delivery error, the bundle is pending again and
    listed, and the next answer succeeds."""
    world = make_world(resume_timeout=0.05)
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.dispatcher.mode = mode
    with pytest.raises(DeliveryError) as error:
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert error.value.retryable is True
    assert error.value.message == "failed to resume clarification; response can be retried"
    assert world.statuses(pending_id) == ["pending"]
    assert not any(row.response for row in world.rows(pending_id))
    assert "bundle.restored" in world.events.kinds(pending_id)
    listed = await world.services.listing.list_pending(ALICE)
    assert [bundle.pending_id for bundle in listed.bundles] == [pending_id]
    world.dispatcher.mode = "accept"
    retried = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt2"), surface=Surface.REST
    )
    assert retried.claimed
    assert len(world.dispatcher.requests) == 2
    assert world.statuses(pending_id) == [ANSWERED]


async def test_detached_rejection_is_recorded_without_resuming(world: AppWorld) -> None:
    """R9: no live waiter + rejection → finalized, nobody resumed."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    resolution = await world.services.resolver.resolve(
        ALICE, pending_id, Outcome.reject(" no "), surface=Surface.REST
    )
    assert (resolution.claimed, resolution.rejected, resolution.reject_reason) == (
        True,
        True,
        "no",
    )
    assert world.dispatcher.requests == []
    assert world.statuses(pending_id) == [REJECTED]
    assert not any(row.delivery_pending for row in world.rows(pending_id))


async def test_live_delivery_needs_the_durable_confirmation(world: AppWorld) -> None:
    """Facts §8.2 item 78: finalize fails → the agent gets an error, not the answer; the
    bundle is restored to pending and the caller may retry."""
    session = world.session()
    world.claims.refuse_finalize = True
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask_in_background, world, session.id, box)
        pending_id = await _live_pending_id(world, session.id)
        with pytest.raises(DeliveryError) as error:
            await world.services.resolver.resolve(
                ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
            )
    assert error.value.retryable is True
    assert isinstance(box[0], WaitEnded)
    assert world.statuses(pending_id) == ["pending"]
    assert world.claims.restore_calls == 1


async def test_failed_restore_is_reported_as_not_retryable(world: AppWorld) -> None:
    """Facts §8.2 item 81: the bundle stays claimed and the error says recovery failed."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.dispatcher.mode = "refuse"
    world.claims.fail_restore = True
    with pytest.raises(DeliveryError) as error:
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert error.value.retryable is False
    assert error.value.message == (
        "failed to resume clarification and recover pending clarification state"
    )
    assert world.statuses(pending_id) == [ANSWERED]


async def test_publish_failure_after_restore_keeps_the_bundle_retryable(
    world: AppWorld,
) -> None:
    """Facts §8.2 item 82: durable state is authoritative; an event is only a hint."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.dispatcher.mode = "refuse"
    world.events.fail = True
    with pytest.raises(DeliveryError) as error:
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert error.value.retryable is True
    assert world.statuses(pending_id) == ["pending"]


async def test_accepted_resume_whose_finalize_fails_is_not_retryable(world: AppWorld) -> None:
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.claims.refuse_finalize = True
    with pytest.raises(DeliveryError) as error:
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert error.value.retryable is False
    assert len(world.dispatcher.requests) == 1


async def test_caller_cancellation_after_the_claim_does_not_interrupt_delivery(
    world: AppWorld,
) -> None:
    """Facts §8.2 item 83: from the claim on, the work is shielded from the caller."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.dispatcher.mode = "hang"
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(
            functools.partial(world.services.resolver.resolve, surface=Surface.REST),
            ALICE,
            pending_id,
            answer_all(1, "opt1"),
        )
        await world.dispatcher.started.wait()
        tasks.cancel_scope.cancel()
        world.dispatcher.release.set()
    assert world.statuses(pending_id) == [ANSWERED]
    assert not any(row.delivery_pending for row in world.rows(pending_id))
    assert len(world.dispatcher.requests) == 1


async def test_claim_failure_is_a_claim_error_that_never_leaks_driver_text(
    world: AppWorld,
) -> None:
    """R4a, fixes §9.3: a safe message for the caller; the failure is logged with the
    pending id; the claim is not retried."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.claims.fail_claim = True
    with structlog.testing.capture_logs() as logs, pytest.raises(ClaimError) as error:
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert error.value.message == "failed to update clarification state"
    assert "hunter2" not in str(error.value)
    [failure] = [entry for entry in logs if entry["event"] == "store.failed"]
    assert failure["pending_id"] == pending_id
    assert failure["log_level"] == "error"
    assert world.statuses(pending_id) == ["pending"]
