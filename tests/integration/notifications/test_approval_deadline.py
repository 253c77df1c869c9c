"""Issue #33: an approval request follows its route's ``on_deadline`` like any question —
``default:deny`` works because the approval question's option ids are ``approve``/``deny`` —
decided by the system (not a vote), even with a quorum half reached; ``expire`` closes it."""

from __future__ import annotations

import pytest

from clarion.domain.approvals import (
    ApprovalTerms,
    Candidates,
    Decision,
    Vote,
    approval_question,
    parse_action,
)
from clarion.domain.model import ANSWERED, EXPIRED
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from tests.integration.notifications.support import NotifyWorld

pytestmark = pytest.mark.anyio

HOOK = "webhook:https://hooks.example/a"
TERMS = ApprovalTerms(
    action=parse_action("shell", {"command": "make deploy"}), reason="ship", required_approvals=2
)


def _ask_approval(world: NotifyWorld) -> str:
    host = world.clarion.storage.host
    task = host.create_task("task", "")
    session, _ = host.create_session(task.id)
    bundle = world.clarion.storage.claims.create_bundle(
        pending_id="p-1",
        session_id=session.id,
        task_id=task.id,
        questions=(approval_question(TERMS),),
        context="",
        approval=TERMS,
        candidates=Candidates(user_ids=("u-alice", "u-bob")),
    )
    return bundle.pending_id


@pytest.mark.parametrize(
    ("policy", "decision"), [("default:deny", "deny"), ("default:approve", "approve")]
)
async def test_a_default_deadline_decides_an_approval_as_the_system(
    world: NotifyWorld, policy: str, decision: str
) -> None:
    world.route("", HOOK, deadline_after_s=60.0, on_deadline=policy)
    pending_id = _ask_approval(world)
    claims = world.clarion.storage.claims
    # One of two approvals is in: the deadline still decides, by the route's policy.
    vote = Vote("u-alice", "Alice", Decision.APPROVE, surface=Surface.REST)
    recorded = claims.cast_vote(
        pending_id,
        vote,
        resolved_by=ResolvedBy("u-alice", IdentityKind.USER, "Alice", Surface.REST),
    )
    assert recorded.decision is None
    await world.drain()
    world.advance(61)
    await world.drain()
    bundle = claims.load_bundle(pending_id)
    assert bundle is not None
    assert bundle.rows[0].status == ANSWERED
    assert bundle.decision == Decision(decision)
    resolved_by = bundle.rows[0].resolved_by
    assert resolved_by is not None
    assert (resolved_by.kind, resolved_by.surface) == (IdentityKind.SYSTEM, Surface.DEADLINE)
    # The system's decision is not a vote: only Alice's is recorded.
    assert [v.voter_id for v in claims.approval_votes(pending_id)] == ["u-alice"]
    # A vote after the decision is told it and recorded nowhere.
    late = claims.cast_vote(
        pending_id,
        Vote("u-bob", "Bob", Decision.APPROVE, surface=Surface.REST),
        resolved_by=ResolvedBy("u-bob", IdentityKind.USER, "Bob", Surface.REST),
    )
    assert (late.vote, late.decision) == (None, Decision(decision))


async def test_an_expiring_deadline_closes_an_approval_undecided(world: NotifyWorld) -> None:
    world.route("", HOOK, deadline_after_s=60.0, on_deadline="expire")
    pending_id = _ask_approval(world)
    await world.drain()
    world.advance(61)
    await world.drain()
    bundle = world.clarion.storage.claims.load_bundle(pending_id)
    assert bundle is not None
    assert bundle.rows[0].status == EXPIRED
    assert bundle.decision is None
    view = world.clarion.services.approvals.read_view(pending_id)
    assert (view.status, view.closed_reason) == ("closed", "expired")


async def test_a_route_acting_for_a_user_notifies_candidates_only(world: NotifyWorld) -> None:
    """Issue #33: notifications go to candidates — a route acting for a user who is not one
    is dropped, naming why; a candidate's route (through a group) delivers."""
    auth = world.clarion.authentication
    alice, bob = auth.create_user("alice"), auth.create_user("bob")
    groups = world.clarion.storage.groups
    assert groups is not None
    group = groups.create_group("oncall")
    groups.add_member("oncall", bob.id)
    world.route("", "webhook:https://hooks.example/alice", user_id=alice.id, events=("answerable",))
    world.route("", "webhook:https://hooks.example/bob", user_id=bob.id, events=("answerable",))
    host = world.clarion.storage.host
    task = host.create_task("task", "")
    session, _ = host.create_session(task.id)
    world.clarion.storage.claims.create_bundle(
        pending_id="p-1",
        session_id=session.id,
        task_id=task.id,
        questions=(approval_question(TERMS),),
        context="",
        approval=TERMS,
        candidates=Candidates(group_ids=(group.id,)),
    )
    await world.drain()
    assert world.channel.events() == [("answerable", "https://hooks.example/bob")]
    dropped = [e.last_error for e in world.entries() if e.route_id and e.status == "dropped"]
    assert dropped == ["the route's user is not a candidate"]
