"""Approvals' use cases (issue #33) over the in-memory adapters: requests, quorum and veto
through the one resolver, assignment (candidates, groups), standing approvals, and the
blocking request's live delivery."""

from __future__ import annotations

from datetime import timedelta

import anyio
import pytest

from clarion.app.usecases.approvals import ApprovalView
from clarion.app.usecases.resolve import VoteRecorded
from clarion.domain.approvals import (
    APPROVAL_QUESTION_ID,
    ApprovalTerms,
    Candidates,
    Decision,
    parse_action,
)
from clarion.domain.errors import NotFound, ValidationError
from clarion.domain.model import Answer, Identity, Outcome
from clarion.domain.resolved_by import IdentityKind, Surface
from tests.unit.app.world import AppWorld, make_world

pytestmark = pytest.mark.anyio

OWNER = Identity.user("owner", display_name="Owner")
ALICE = Identity.user("alice", display_name="Alice")
BOB = Identity.user("bob", display_name="Bob")
CAROL = Identity.user("carol", display_name="Carol")


def _terms(command: str = "rm -rf build", required: int = 1) -> ApprovalTerms:
    action = parse_action("shell", {"command": command, "cwd": "/repo"})
    return ApprovalTerms(action=action, reason="clean the build", required_approvals=required)


async def _create(
    world: AppWorld,
    session_id: str,
    *,
    terms: ApprovalTerms | None = None,
    candidates: Candidates = Candidates(),  # noqa: B008 - immutable
) -> ApprovalView:
    return await world.services.approvals.create(
        OWNER,
        session_id=session_id,
        terms=terms if terms is not None else _terms(),
        candidates=candidates,
    )


def _vote(option: str, text: str = "") -> Outcome:
    return Outcome.answer(Answer(APPROVAL_QUESTION_ID, (option,), text))


@pytest.fixture(name="world")
def fixture_world() -> AppWorld:
    return make_world()


async def test_a_request_is_a_pending_bundle_with_the_approval_question(world: AppWorld) -> None:
    session = world.session("")
    view = await _create(world, session.id)
    assert view.status == "pending"
    assert view.terms == _terms()
    assert view.record.action_digest == _terms().action.digest
    (question,) = world.rows(view.pending_id)[0:1]
    assert question.question is not None
    assert question.question.title == "Approve shell?"
    assert [o.option_id for o in question.question.options] == ["approve", "deny"]
    assert view.votes == ()
    assert view.decision is None


async def test_m_of_n_needs_distinct_approvals_and_reports_each_vote(world: AppWorld) -> None:
    """Quorum: the first approve is recorded (VoteRecorded through any surface's resolve),
    the second distinct approve decides; the deciding voter is recorded as the resolver."""
    session = world.session("")
    candidates = Candidates(user_ids=("alice", "bob", "carol"))
    view = await _create(world, session.id, terms=_terms(required=2), candidates=candidates)
    resolver = world.services.resolver
    with pytest.raises(VoteRecorded) as recorded:
        await resolver.resolve(ALICE, view.pending_id, _vote("approve"), surface=Surface.REST)
    assert (recorded.value.result.approvals, recorded.value.result.required) == (1, 2)
    assert recorded.value.counted
    # A repeat by the same person counts nothing.
    with pytest.raises(VoteRecorded) as repeat:
        await resolver.resolve(ALICE, view.pending_id, _vote("approve"), surface=Surface.INBOX)
    assert not repeat.value.counted
    assert repeat.value.result.approvals == 1
    reply = await world.services.approvals.decide(
        BOB, view.pending_id, Decision.APPROVE, "fine", surface=Surface.REST
    )
    assert reply.counted
    assert reply.approval.status == "approved"
    assert reply.approval.comment == "fine"
    assert reply.approval.decided_by is not None
    assert reply.approval.decided_by.identity_id == "bob"
    assert [v.voter_id for v in reply.approval.votes] == ["alice", "bob"]
    assert reply.approval.votes[0].surface is Surface.REST
    # A later voter is told the outcome, and nothing is recorded for them.
    late = await world.services.approvals.decide(
        CAROL, view.pending_id, Decision.DENY, surface=Surface.REST
    )
    assert (late.counted, late.vote, late.approval.status) == (False, None, "approved")


async def test_any_deny_vetoes_at_once(world: AppWorld) -> None:
    session = world.session("")
    view = await _create(
        world, session.id, terms=_terms(required=2), candidates=Candidates(("alice", "bob"))
    )
    await world.services.approvals.decide(
        ALICE, view.pending_id, Decision.APPROVE, surface=Surface.REST
    )
    reply = await world.services.approvals.decide(
        BOB, view.pending_id, Decision.DENY, "too risky", surface=Surface.MCP
    )
    assert (reply.approval.status, reply.approval.decision) == ("denied", Decision.DENY)
    assert reply.approval.comment == "too risky"


async def test_a_rejection_from_a_generic_client_is_a_deny_with_its_reason(
    world: AppWorld,
) -> None:
    session = world.session("")
    view = await _create(world, session.id)
    resolution = await world.services.resolver.resolve(
        ALICE, view.pending_id, Outcome.reject("not now"), surface=Surface.REST
    )
    assert resolution.claimed
    after = await world.services.approvals.view(OWNER, view.pending_id)
    assert (after.status, after.comment) == ("denied", "not now")
    assert [v.decision for v in after.votes] == [Decision.DENY]


async def test_selecting_both_options_is_refused_naming_the_decision(world: AppWorld) -> None:
    session = world.session("")
    view = await _create(world, session.id)
    both = Outcome.answer(Answer(APPROVAL_QUESTION_ID, ("approve", "deny")))
    with pytest.raises(ValidationError) as refused:
        await world.services.resolver.resolve(ALICE, view.pending_id, both, surface=Surface.REST)
    assert refused.value.field == "decision"
    assert (await world.services.approvals.view(OWNER, view.pending_id)).votes == ()


async def test_only_candidates_decide_and_see_it_others_get_not_found(world: AppWorld) -> None:
    """Assignment: to a non-candidate the request is indistinguishable from a missing one;
    a group member is a candidate; the asker sees its own request but cannot decide it."""
    group = world.groups.create_group("ops")
    world.groups.add_member(group.name, "carol")
    session = world.session("")
    view = await _create(
        world, session.id, candidates=Candidates(user_ids=("alice",), group_ids=(group.id,))
    )
    approvals = world.services.approvals
    for stranger in (BOB, OWNER):
        with pytest.raises(NotFound):
            await approvals.decide(
                stranger, view.pending_id, Decision.APPROVE, surface=Surface.REST
            )
        with pytest.raises(NotFound):
            await world.services.resolver.resolve(
                stranger, view.pending_id, _vote("approve"), surface=Surface.REST
            )
    with pytest.raises(NotFound):
        await approvals.view(BOB, view.pending_id)
    # Nor may a non-candidate read, watch or cancel it as a live request.
    requests = world.services.requests
    with pytest.raises(NotFound):
        await requests.get_request(BOB, view.pending_id)
    with pytest.raises(NotFound):
        await requests.cancel(BOB, view.pending_id)
    assert (await requests.get_request(OWNER, view.pending_id)).pending_id == view.pending_id
    assert (await approvals.view(OWNER, view.pending_id)).status == "pending"
    reply = await approvals.decide(CAROL, view.pending_id, Decision.APPROVE, surface=Surface.SLACK)
    assert reply.approval.status == "approved"
    assert reply.approval.candidates.groups == ("ops",)


async def test_a_standing_approval_approves_a_matching_request_at_once(world: AppWorld) -> None:
    session = world.session("")
    first = await _create(world, session.id)
    reply = await world.services.approvals.decide(
        ALICE,
        first.pending_id,
        Decision.APPROVE,
        surface=Surface.INBOX,
        allow_for_minutes=30,
        constraints={"command": {"prefix": "rm -rf "}},
    )
    assert reply.standing is not None
    assert reply.standing.granted_by_id == "alice"
    second = await _create(world, session.id, terms=_terms("rm -rf dist"))
    assert second.status == "approved"
    assert second.standing_id == reply.standing.id
    assert second.decided_by is not None
    assert second.decided_by.kind is IdentityKind.STANDING_APPROVAL
    assert second.decided_by.display_name == "standing approval by Alice"
    # The decision was finalized, not resumed: nobody is woken on a new turn (the first
    # request, decided by a vote with nobody waiting, was resumed as any answer is).
    assert [r.pending_id for r in world.dispatcher.requests] == [first.pending_id]
    assert not any(row.delivery_pending for row in world.rows(second.pending_id))
    # Not covered: another argument value, another cwd, and after the window.
    other = await _create(world, session.id, terms=_terms("git push --force"))
    assert other.status == "pending"
    world.clock.advance(timedelta(minutes=31))
    later = await _create(world, session.id, terms=_terms("rm -rf out"))
    assert later.status == "pending"


async def test_a_revoked_standing_approval_matches_nothing(world: AppWorld) -> None:
    session = world.session("")
    first = await _create(world, session.id)
    reply = await world.services.approvals.decide(
        ALICE, first.pending_id, Decision.APPROVE, surface=Surface.REST, allow_for_minutes=10
    )
    assert reply.standing is not None
    listed = await world.services.approvals.list_standing(OWNER)
    assert [s.id for s in listed] == [reply.standing.id]
    revoked = await world.services.approvals.revoke_standing(OWNER, reply.standing.id)
    assert revoked.revoked_at is not None
    again = await _create(world, session.id)
    assert again.status == "pending"
    with pytest.raises(NotFound):
        await world.services.approvals.revoke_standing(Identity.user("stranger"), "nope")


async def test_a_standing_grant_with_a_deny_is_refused_before_any_vote(world: AppWorld) -> None:
    session = world.session("")
    view = await _create(world, session.id)
    with pytest.raises(ValidationError) as refused:
        await world.services.approvals.decide(
            ALICE, view.pending_id, Decision.DENY, surface=Surface.REST, allow_for_minutes=5
        )
    assert refused.value.field == "allow_for_minutes"
    assert (await world.services.approvals.view(OWNER, view.pending_id)).votes == ()


async def test_the_blocking_request_returns_the_decision_delivered_live(world: AppWorld) -> None:
    session = world.session("")
    results: list[ApprovalView] = []

    async def agent() -> None:
        results.append(
            await world.services.approvals.request(
                OWNER, session_id=session.id, terms=_terms(), candidates=Candidates(("alice",))
            )
        )

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(agent)
        with anyio.fail_after(5):
            while not world.store.bundle_extras:
                await anyio.sleep(0.01)
        (pending_id,) = world.store.bundle_extras
        while not world.waiters.waiting(pending_id):
            await anyio.sleep(0.01)
        await world.services.approvals.decide(
            ALICE, pending_id, Decision.APPROVE, "go", surface=Surface.INBOX
        )
    (result,) = results
    assert (result.status, result.comment) == ("approved", "go")
    assert world.dispatcher.requests == []  # live: no resume


async def test_wait_returns_the_decision_to_a_bystander(world: AppWorld) -> None:
    session = world.session("")
    view = await _create(world, session.id)
    waited: list[ApprovalView] = []

    async def bystander() -> None:
        waited.append(await world.services.approvals.wait(ALICE, view.pending_id, 5.0))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(bystander)
        await anyio.sleep(0.05)
        await world.services.approvals.decide(
            BOB, view.pending_id, Decision.DENY, surface=Surface.REST
        )
    assert waited[0].status == "denied"
    pending = await world.services.approvals.wait(
        ALICE, (await _create(world, session.id, terms=_terms("ls"))).pending_id, 0.05
    )
    assert pending.status == "pending"


async def test_candidates_are_named_by_user_and_group_names(world: AppWorld) -> None:
    alice = world.users.create_user("alice.smith")
    world.groups.create_group("Release")
    candidates = await world.services.approvals.candidates_named(["alice.smith"], ["release"])
    assert candidates.user_ids == (alice.id,)
    assert len(candidates.group_ids) == 1
    with pytest.raises(ValidationError) as unknown:
        await world.services.approvals.candidates_named(["alice.smith", "nobody"], [])
    assert unknown.value.field == "candidates.users[1]"


async def test_required_approvals_beyond_the_candidates_is_refused(world: AppWorld) -> None:
    session = world.session("")
    with pytest.raises(ValidationError) as refused:
        await _create(
            world, session.id, terms=_terms(required=3), candidates=Candidates(("alice", "bob"))
        )
    assert refused.value.field == "required_approvals"


async def test_groups_are_managed_by_admins_only(world: AppWorld) -> None:
    groups = world.services.groups
    admin = Identity.user("root", is_admin=True)
    bob = world.users.create_user("bob")
    created = await groups.create(admin, "oncall")
    updated = await groups.add_member(admin, "ONCALL", "bob")
    assert updated.member_ids == (bob.id,)
    assert await groups.member_names(updated) == ("bob",)
    assert [g.name for g in await groups.list(admin)] == [created.name]
    with pytest.raises(NotFound):
        await groups.list(ALICE)
    with pytest.raises(NotFound):
        await groups.add_member(admin, "nope", "bob")
    await groups.delete(admin, "oncall")
    with pytest.raises(NotFound):
        await groups.delete(admin, "oncall")


async def test_an_agent_token_never_decides_an_approval(world: AppWorld) -> None:
    """The asking agent's session token acts as the workspace owner; it must not approve its
    own action, through the decision or through a plain answer."""
    session = world.session("")
    view = await _create(world, session.id)
    agent = Identity.agent("owner", display_name="agent")
    with pytest.raises(ValidationError) as refused:
        await world.services.approvals.decide(
            agent, view.pending_id, Decision.APPROVE, surface=Surface.MCP
        )
    assert refused.value.field == "decision"
    with pytest.raises(ValidationError):
        await world.services.resolver.resolve(
            agent, view.pending_id, _vote("approve"), surface=Surface.MCP
        )
    assert (await world.services.approvals.view(OWNER, view.pending_id)).votes == ()


async def test_the_blocking_request_refuses_another_task_id(world: AppWorld) -> None:
    session = world.session("")
    with pytest.raises(ValidationError) as refused:
        await world.services.approvals.request(
            OWNER, session_id=session.id, terms=_terms(), task_id="another-task"
        )
    assert refused.value.field == "task_id"
    assert world.store.bundle_extras == {}


async def test_the_askers_wait_without_a_live_entry_watches_until_decided(
    world: AppWorld,
) -> None:
    """After a restart nobody holds the request's live entry: the asker's wait re-reads the
    rows until the decision instead of returning at once."""
    session = world.session("")
    view = await _create(world, session.id)
    later = world.restarted()
    waited: list[ApprovalView] = []

    async def asker() -> None:
        waited.append(await later.services.approvals.wait(OWNER, view.pending_id, 5.0))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(asker)
        await anyio.sleep(0.05)
        assert waited == []
        await later.services.approvals.decide(
            ALICE, view.pending_id, Decision.APPROVE, surface=Surface.REST
        )
    assert waited[0].status == "approved"


async def test_a_standing_approval_on_a_task_without_a_workspace_is_listed_to_its_granter(
    world: AppWorld,
) -> None:
    """L1c: a task without a workspace is seen by every signed-in person, and so is what was
    granted on it — listed to the granter and revocable by them (not only to unscoped
    callers), while a task in someone else's workspace stays out of sight."""
    task = world.host.create_task("task", "")
    session, _ = world.host.create_session(task.id, is_primary=True)
    first = await _create(world, session.id)
    reply = await world.services.approvals.decide(
        ALICE, first.pending_id, Decision.APPROVE, surface=Surface.INBOX, allow_for_minutes=10
    )
    assert reply.standing is not None
    assert reply.standing.workspace_id == ""
    assert [s.id for s in await world.services.approvals.list_standing(ALICE)] == [
        reply.standing.id
    ]
    private = world.session("bob")
    theirs = await world.services.approvals.create(BOB, session_id=private.id, terms=_terms())
    bobs = await world.services.approvals.decide(
        BOB, theirs.pending_id, Decision.APPROVE, surface=Surface.INBOX, allow_for_minutes=10
    )
    assert bobs.standing is not None
    assert bobs.standing.id not in {
        s.id for s in await world.services.approvals.list_standing(ALICE)
    }
    revoked = await world.services.approvals.revoke_standing(ALICE, reply.standing.id)
    assert revoked.revoked_at is not None
    with pytest.raises(NotFound):
        await world.services.approvals.revoke_standing(ALICE, bobs.standing.id)
