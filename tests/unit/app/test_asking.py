"""Asking and waiting (upstream facts §2.3–§2.8, §4.9; spec A5a, A7–A9; fixes §9.20, §9.21,
§9.25)."""

from __future__ import annotations

import functools

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from clarion.app.usecases.ask import AskResult
from clarion.domain.errors import (
    InvalidArgument,
    InvalidQuestions,
    NotActive,
    NotFound,
)
from clarion.domain.model import (
    ANSWERED,
    CANCELLED,
    Answer,
    Identity,
    Outcome,
    Resolution,
    SessionState,
)
from clarion.domain.resolved_by import Surface
from clarion.domain.rows import ASKED_BY_REQUEST, Asker, Bundle
from clarion.ports.waiters import WaitEnd, WaitEnded
from tests.unit.app.world import ALICE, BOB, UNSCOPED, AppWorld, answer_all, drafts, make_world

pytestmark = pytest.mark.anyio


@pytest.fixture(name="world")
def fixture_world() -> AppWorld:
    return make_world()


async def _live_pending_id(world: AppWorld, session_id: str) -> str:
    while True:
        pending = world.memory_claims.active_pending_ids(session_id)
        if pending and world.waiters.has_entry(pending[0]):
            return pending[0]
        await anyio.lowlevel.checkpoint()


async def _ask(
    world: AppWorld, session_id: str, box: list[AskResult | WaitEnded], count: int = 1
) -> None:
    try:
        box.append(await world.services.asking.ask(ALICE, session_id, drafts(count), "ctx"))
    except WaitEnded as ended:
        box.append(ended)


async def test_create_writes_one_pending_row_per_question_on_the_current_turn(
    world: AppWorld,
) -> None:
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(3), "why")
    rows = world.rows(pending_id)
    turn = world.host.current_turn(session.id)
    assert turn is not None
    assert [row.question_id for row in rows] == ["q1", "q2", "q3"]
    assert {row.turn_id for row in rows} == {turn.id}
    assert {row.task_id for row in rows} == {session.task_id}
    assert all(row.status == "pending" and row.context == "why" for row in rows)
    assert world.waiters.has_entry(pending_id)
    assert world.events.kinds(pending_id) == ["bundle.created"]
    stored = world.host.get_session(session.id)
    assert stored is not None
    assert stored.state == SessionState.RUNNING, "REST create does not block or change state"


async def test_create_in_a_session_the_caller_may_not_see_is_not_found(
    world: AppWorld,
) -> None:
    """Fixes §9.20: creation is authorized like every other call."""
    session = world.session(owner_id="alice")
    with pytest.raises(NotFound) as foreign:
        await world.services.asking.create(BOB, session.id, drafts(1), "")
    with pytest.raises(NotFound) as missing:
        await world.services.asking.create(BOB, "no-such-session", drafts(1), "")
    assert foreign.value.message == missing.value.message
    assert world.memory_claims.active_pending_ids(session.id) == ()


async def test_identical_live_questions_reuse_the_pending_id(world: AppWorld) -> None:
    """Facts §2.7: same prompts and options in the same session while the first is live."""
    session = world.session()
    first = await world.services.asking.create(ALICE, session.id, drafts(2), "")
    again = await world.services.asking.create(ALICE, session.id, drafts(2), "other context")
    different = await world.services.asking.create(ALICE, session.id, drafts(2, "Deploy"), "")
    assert again == first
    assert different != first
    assert len(world.rows(first)) == 2
    await world.services.resolver.resolve(ALICE, first, answer_all(2, "opt1"), surface=Surface.REST)
    after_answer = await world.services.asking.create(ALICE, session.id, drafts(2), "")
    assert after_answer != first


async def test_create_validates_questions_and_the_task_id(world: AppWorld) -> None:
    session = world.session()
    with pytest.raises(InvalidQuestions):
        await world.services.asking.create(ALICE, session.id, drafts(5), "")
    with pytest.raises(InvalidArgument) as mismatch:
        await world.services.asking.create(ALICE, session.id, drafts(1), "", task_id="other")
    assert mismatch.value.field == "task_id"
    pending_id = await world.services.asking.create(
        ALICE, session.id, drafts(1), "", task_id=session.task_id
    )
    assert world.rows(pending_id)


async def test_create_in_a_terminal_session_is_refused(world: AppWorld) -> None:
    session = world.session()
    world.host.set_session_state(session.id, SessionState.FAILED)
    with pytest.raises(NotActive):
        await world.services.asking.create(ALICE, session.id, drafts(1), "")


async def test_ask_waits_for_input_and_returns_every_selected_option(world: AppWorld) -> None:
    """Facts §2.3: RUNNING → WAITING_FOR_INPUT → RUNNING; fixes §9.25."""
    session = world.session()
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, box, 2)
        pending_id = await _live_pending_id(world, session.id)
        while (current := world.host.get_session(session.id)) is None or (
            current.state != SessionState.WAITING_FOR_INPUT
        ):
            await anyio.lowlevel.checkpoint()
        await world.services.resolver.resolve(
            ALICE,
            pending_id,
            Outcome.answer(Answer("q1", ("q1_opt2", "q1_opt1")), Answer("q2", (), " free ")),
            surface=Surface.REST,
        )
    [result] = box
    assert isinstance(result, AskResult)
    assert result.answers == {
        "q1": Answer("q1", ("q1_opt1", "q1_opt2")),
        "q2": Answer("q2", (), "free"),
    }
    assert (result.rejected, result.reject_reason) == (False, "")
    assert [question.id for question in result.questions] == ["q1", "q2"]
    stored = world.host.get_session(session.id)
    assert stored is not None
    assert stored.state == SessionState.RUNNING
    states = [e.data["state"] for e in world.events.published if e.kind == "session.updated"]
    assert states == [SessionState.WAITING_FOR_INPUT, SessionState.RUNNING]


async def test_a_live_answer_resumes_the_session_in_the_finalize_itself(
    world: AppWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue #15: the delivered answer's finalize moves the session back to RUNNING in the same
    write (ClaimRepository.finalize_live_delivery), so the woken ask writes nothing more; the
    RUNNING event is still published once."""
    session = world.session()
    state_writes: list[str] = []
    set_state = world.host.set_session_state

    def counted(session_id: str, state: str, **kwargs: object) -> object:
        state_writes.append(state)
        return set_state(session_id, state, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(world.host, "set_session_state", counted)
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, box, 1)
        pending_id = await _live_pending_id(world, session.id)
        while (current := world.host.get_session(session.id)) is None or (
            current.state != SessionState.WAITING_FOR_INPUT
        ):
            await anyio.lowlevel.checkpoint()
        await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    [result] = box
    assert isinstance(result, AskResult)
    assert state_writes == [SessionState.WAITING_FOR_INPUT]
    assert world.claims.finalize_calls == 1
    stored = world.host.get_session(session.id)
    assert stored is not None
    assert stored.state == SessionState.RUNNING
    states = [e.data["state"] for e in world.events.published if e.kind == "session.updated"]
    assert states == [SessionState.WAITING_FOR_INPUT, SessionState.RUNNING]


async def test_ask_reports_a_rejection_with_its_reason(world: AppWorld) -> None:
    session = world.session()
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, box)
        pending_id = await _live_pending_id(world, session.id)
        await world.services.resolver.resolve(
            ALICE, pending_id, Outcome.reject("  not mine "), surface=Surface.REST
        )
    [result] = box
    assert isinstance(result, AskResult)
    assert (result.rejected, result.reject_reason, dict(result.answers)) == (True, "not mine", {})


async def test_ask_sends_progress_while_it_waits(world: AppWorld) -> None:
    session = world.session()
    pings: list[int] = []
    answered = anyio.Event()

    async def on_progress(count: int) -> None:
        pings.append(count)
        if count == 3:
            pending_id = world.memory_claims.active_pending_ids(session.id)[0]
            await world.services.resolver.resolve(
                UNSCOPED, pending_id, answer_all(1, "opt1"), surface=Surface.REST
            )
            answered.set()

    result = await world.services.asking.ask(
        ALICE, session.id, drafts(1), "", on_progress=on_progress, progress_interval=0.001
    )
    assert answered.is_set()
    assert pings == [1, 2, 3]
    assert result.answers["q1"].selected_options == ("q1_opt1",)


async def test_a_failing_progress_callback_does_not_end_the_wait(world: AppWorld) -> None:
    session = world.session()

    async def on_progress(count: int) -> None:
        raise ConnectionResetError("client gone")

    async def answer_later() -> None:
        pending_id = await _live_pending_id(world, session.id)
        await world.services.resolver.resolve(
            UNSCOPED, pending_id, answer_all(1, "opt2"), surface=Surface.REST
        )

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(answer_later)
        result = await world.services.asking.ask(
            ALICE, session.id, drafts(1), "", on_progress=on_progress, progress_interval=0.001
        )
    assert result.answers["q1"].selected_options == ("q1_opt2",)


async def test_answer_racing_bundle_creation_still_reaches_the_asking_agent(
    world: AppWorld,
) -> None:
    """The asker waits before its rows become durable, so an answer given the instant they
    exist is delivered live rather than sent to the resume path."""
    session = world.session()
    outcomes: list[Resolution] = []

    def answer_at_once(bundle: Bundle) -> None:
        # Runs on the worker thread that just made the rows durable, before ask resumes.
        outcomes.append(
            anyio.from_thread.run(
                functools.partial(world.services.resolver.resolve, surface=Surface.REST),
                UNSCOPED,
                bundle.pending_id,
                answer_all(1, "opt3"),
            )
        )

    world.claims.after_create = answer_at_once
    result = await world.services.asking.ask(ALICE, session.id, drafts(1), "")
    assert [outcome.claimed for outcome in outcomes] == [True]
    assert result.answers["q1"].selected_options == ("q1_opt3",)
    assert world.dispatcher.requests == []


async def test_ask_timeout_detaches_the_bundle_which_stays_answerable() -> None:
    """Facts §4.9: the agent's call ends; the answer later resumes it via the dispatcher."""
    world = make_world(ask_timeout=0.01)
    session = world.session()
    with pytest.raises(WaitEnded) as ended:
        await world.services.asking.ask(ALICE, session.id, drafts(1), "")
    assert ended.value.reason is WaitEnd.TIMEOUT
    pending_id = ended.value.pending_id
    assert [row.detached for row in world.rows(pending_id)] == [True]
    assert not world.waiters.has_entry(pending_id)
    resolution = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
    )
    assert resolution.claimed
    assert [request.pending_id for request in world.dispatcher.requests] == [pending_id]


async def test_ask_whose_caller_goes_away_detaches_and_leaves_no_waiter(
    world: AppWorld,
) -> None:
    """Facts §4.9 and fixes §9.21: the next answer goes straight to the dispatcher."""
    session = world.session()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, [])
        pending_id = await _live_pending_id(world, session.id)
        tasks.cancel_scope.cancel()
    assert not world.waiters.has_entry(pending_id)
    assert [row.detached for row in world.rows(pending_id)] == [True]
    with anyio.fail_after(5):
        resolution = await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert resolution.claimed
    assert len(world.dispatcher.requests) == 1


async def test_get_request_authorizes_before_reading_the_live_entry(world: AppWorld) -> None:
    """A7, A8: a foreign caller gets not-found although the entry exists; the task comes from
    the durable rows."""
    session = world.session(owner_id="alice")
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(2), "context")
    with pytest.raises(NotFound):
        await world.services.requests.get_request(BOB, pending_id)
    request = await world.services.requests.get_request(ALICE, pending_id)
    assert (request.session_id, request.task_id, request.context) == (
        session.id,
        session.task_id,
        "context",
    )
    assert [q.id for q in request.questions] == ["q1", "q2"]
    restarted = world.restarted()
    with pytest.raises(NotFound):
        await restarted.services.requests.get_request(ALICE, pending_id)


async def test_wait_answers_foreign_and_fabricated_ids_alike(world: AppWorld) -> None:
    """A5a: no existence oracle through the wait endpoint."""
    session = world.session(owner_id="alice")
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    with pytest.raises(NotFound) as foreign:
        await world.services.requests.wait(BOB, pending_id, 5)
    with pytest.raises(NotFound) as fabricated:
        await world.services.requests.wait(BOB, "fabricated", 5)
    assert type(foreign.value) is type(fabricated.value)
    assert foreign.value.message == fabricated.value.message


async def test_create_then_wait_receives_the_answer(world: AppWorld) -> None:
    """The REST asking flow: POST /request, then GET /:id/wait."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    results: list[Resolution] = []

    async def wait() -> None:
        results.append(await world.services.requests.wait(ALICE, pending_id))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait)
        while world.waiters.waiting(pending_id) == 0:
            await anyio.lowlevel.checkpoint()
        winner = await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt2"), surface=Surface.REST
        )
    assert results == [winner]
    assert world.dispatcher.requests == []


async def test_wait_without_a_live_entry_ends_at_once(world: AppWorld) -> None:
    """A7: an authorized wait on a bundle nobody holds is the 504 case, not a hang."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    restarted = world.restarted()
    with pytest.raises(WaitEnded) as ended:
        await restarted.services.requests.wait(ALICE, pending_id, 5)
    assert ended.value.reason is WaitEnd.NOT_FOUND


async def test_abandoned_wait_does_not_block_the_next_answer(world: AppWorld) -> None:
    """Fixes §9.21: a disconnected GET /:id/wait leaves no waiter behind."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(world.services.requests.wait, ALICE, pending_id)
        while world.waiters.waiting(pending_id) == 0:
            await anyio.lowlevel.checkpoint()
        tasks.cancel_scope.cancel()
    with anyio.fail_after(5):
        resolution = await world.services.resolver.resolve(
            ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert resolution.claimed
    assert len(world.dispatcher.requests) == 1


async def test_cancel_is_authorized_and_ends_the_wait_and_the_bundle(world: AppWorld) -> None:
    """A9: authorize, cancel the live entry, mark the pending rows cancelled; never a claim."""
    session = world.session(owner_id="alice")
    box: list[AskResult | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, box, 2)
        pending_id = await _live_pending_id(world, session.id)
        with pytest.raises(NotFound):
            await world.services.requests.cancel(BOB, pending_id)
        await world.services.requests.cancel(ALICE, pending_id)
    [ended] = box
    assert isinstance(ended, WaitEnded)
    assert ended.reason is WaitEnd.CANCELLED
    assert world.statuses(pending_id) == [CANCELLED, CANCELLED]
    assert "bundle.cancelled" in world.events.kinds(pending_id)
    with pytest.raises(NotActive):
        await world.services.resolver.resolve(
            ALICE, pending_id, Outcome.reject(), surface=Surface.REST
        )
    with pytest.raises(NotFound):
        await world.services.requests.cancel(ALICE, pending_id)


async def test_cancel_needs_a_live_entry(world: AppWorld) -> None:
    """A9: today's cancel, unchanged after the check: no live entry → not found."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    restarted = world.restarted()
    with pytest.raises(NotFound):
        await restarted.services.requests.cancel(ALICE, pending_id)
    assert world.statuses(pending_id) == ["pending"]


async def test_answered_bundle_is_not_reused_for_a_new_ask(world: AppWorld) -> None:
    session = world.session()
    first = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    await world.services.resolver.resolve(ALICE, first, answer_all(1, "opt1"), surface=Surface.REST)
    assert world.statuses(first) == [ANSWERED]
    second = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    assert second != first


async def _watch(
    world: AppWorld, identity: Identity, pending_id: str, box: list[Resolution | WaitEnded]
) -> None:
    try:
        box.append(await world.services.requests.wait(identity, pending_id, 30))
    except WaitEnded as ended:
        box.append(ended)


async def test_a_bystanders_wait_never_takes_the_delivery_and_the_agent_is_resumed(
    world: AppWorld,
) -> None:
    """Issue #13: only the asker's wait is the live waiter. Bob may see Alice's bundle (an
    unowned workspace) and waits on it; the answer still resumes Alice's agent, and Bob's wait
    returns the resolution."""
    session = world.session(owner_id="")
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    watched: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_watch, world, BOB, pending_id, watched)
        await wait_all_tasks_blocked()
        assert world.waiters._entries[pending_id].waiting == 0  # Bob is not a live waiter
        winner = await world.services.resolver.resolve(
            BOB, pending_id, answer_all(1, "opt2"), surface=Surface.REST
        )
    [request] = world.dispatcher.requests
    assert request.pending_id == pending_id
    assert request.answers == winner.answers
    [seen] = watched
    assert isinstance(seen, Resolution)
    assert (seen.status, seen.answers, seen.responded_at) == (
        winner.status,
        winner.answers,
        winner.responded_at,
    )


async def test_a_bystander_waiting_does_not_stop_the_bundle_detaching_when_the_turn_ends(
    world: AppWorld,
) -> None:
    """Issue #13: the agent's MCP ask is the asker; a REST wait by anyone else (even the same
    user) only watches, so completing the turn detaches the bundle and the answer resumes."""
    session = world.session(owner_id="")
    asked: list[AskResult | WaitEnded] = []
    watched: list[Resolution | WaitEnded] = []
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(_ask, world, session.id, asked)
        pending_id = await _live_pending_id(world, session.id)
        tasks.start_soon(_watch, world, BOB, pending_id, watched)
        tasks.start_soon(_watch, world, ALICE, pending_id, watched)
        await wait_all_tasks_blocked()
        assert await world.services.lifecycle.complete_turn(ALICE, session.id) == 1
        [ended] = asked
        assert isinstance(ended, WaitEnded)
        assert all(row.detached for row in world.rows(pending_id))
        winner = await world.services.resolver.resolve(
            BOB, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    [request] = world.dispatcher.requests
    assert request.answers == winner.answers
    assert len(watched) == 2
    for seen in watched:
        assert isinstance(seen, Resolution)
        assert seen.answers == winner.answers


async def test_the_askers_own_wait_is_live_and_a_bystanders_ends_at_its_timeout(
    world: AppWorld,
) -> None:
    session = world.session(owner_id="")
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    with pytest.raises(WaitEnded) as ended:
        await world.services.requests.wait(BOB, pending_id, 0.05)
    assert ended.value.reason is WaitEnd.TIMEOUT
    results: list[Resolution] = []

    async def asker() -> None:
        results.append(await world.services.requests.wait(ALICE, pending_id, 30))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(asker)
        await wait_all_tasks_blocked()
        assert world.waiters.waiting(pending_id) == 1
        winner = await world.services.resolver.resolve(
            BOB, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert results == [winner]
    assert world.dispatcher.requests == []


async def test_the_asker_is_recognised_by_a_replica_that_did_not_create_the_bundle(
    world: AppWorld,
) -> None:
    """Issue #13, two replicas: the asker is stored with the bundle, so a LiveRequests
    instance that did not create it (another replica over the same store and waiters) still
    makes the asker's wait the live waiter and a bystander's only a watch."""
    other = world.services_over(world.claims).requests
    session = world.session(owner_id="")
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    assert world.claims.load_bundle(pending_id).asker == Asker("alice", ASKED_BY_REQUEST)
    with pytest.raises(WaitEnded) as ended:
        await other.wait(BOB, pending_id, 0.05)
    assert ended.value.reason is WaitEnd.TIMEOUT
    results: list[Resolution] = []

    async def asker() -> None:
        results.append(await other.wait(ALICE, pending_id, 30))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(asker)
        await wait_all_tasks_blocked()
        winner = await world.services.resolver.resolve(
            BOB, pending_id, answer_all(1, "opt1"), surface=Surface.REST
        )
    assert results == [winner]
    assert world.dispatcher.requests == [], "the asker's wait took the delivery in the turn"
