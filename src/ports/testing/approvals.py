"""Contract suite for approvals (issue #33): a bundle's extras written with its rows, votes
with quorum and veto decided in one step with the claim, groups, standing approvals, and the
assignment filter of every visible read (a non-candidate sees what they see for an unknown id).

Subclass :class:`ApprovalsContract` and provide an ``approvals`` fixture returning a fresh
:class:`ApprovalWorld` (the claim repository, groups and standing approvals on one store).
"""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from clarion.domain.approvals import (
    APPROVAL_QUESTION_ID,
    NO_CANDIDATES,
    Action,
    ApprovalTerms,
    Candidates,
    Decision,
    StandingApproval,
    Vote,
    approval_question,
    parse_action,
    parse_constraints,
)
from clarion.domain.errors import NotFound, ValidationError
from clarion.domain.history import ResolvedQuery
from clarion.domain.listing import ListQuery, Visibility
from clarion.domain.model import ANSWERED, REJECTED
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from clarion.domain.rows import Bundle
from clarion.ports.approvals import GroupDirectory, StandingApprovals
from clarion.ports.claims import VoteResult
from clarion.ports.testing.racing import race
from clarion.ports.testing.world import ContractWorld, claim

DEPLOY = parse_action("deploy", {"env": "prod", "version": "1.2.3"})


@attrs.frozen
class ApprovalWorld:
    """The ports under test, sharing one store."""

    world: ContractWorld
    groups: GroupDirectory
    standing: StandingApprovals


def ask_approval(
    world: ContractWorld,
    pending_id: str,
    *,
    required: int = 1,
    candidates: Candidates = NO_CANDIDATES,
    workspace_id: str = "",
    action: Action = DEPLOY,
) -> Bundle:
    """An approval request in a new session (of a new task in ``workspace_id``)."""
    session = world.session(workspace_id=workspace_id)
    terms = ApprovalTerms(action, "ship it", required)
    return world.claims.create_bundle(
        pending_id=pending_id,
        session_id=session.id,
        task_id=session.task_id,
        questions=[approval_question(terms)],
        context="",
        approval=terms,
        candidates=candidates,
    )


def voter(name: str, decision: Decision = Decision.APPROVE, comment: str = "") -> Vote:
    return Vote(name, name.title(), decision, comment, Surface.REST)


def resolver(name: str) -> ResolvedBy:
    return ResolvedBy(name, IdentityKind.USER, name.title(), Surface.REST)


def vote(world: ContractWorld, pending_id: str, ballot: Vote) -> VoteResult:
    return world.claims.cast_vote(pending_id, ballot, resolved_by=resolver(ballot.voter_id))


def race_votes(world: ContractWorld, pending_id: str, ballots: list[Vote]) -> list[VoteResult]:
    """Every ballot cast at once, each from its own thread; the results in ballot order."""
    return race(len(ballots), lambda n: vote(world, pending_id, ballots[n]))


def _unstamped(votes: tuple[Vote, ...]) -> list[Vote]:
    return [attrs.evolve(v, at=None) for v in votes]


class ApprovalExtrasContract:
    """``create_bundle`` with extras and every read that returns them."""

    def test_an_approval_is_stored_beside_its_rows(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        candidates = Candidates(user_ids=("u2", "u1"), group_ids=("g1",))
        created = ask_approval(world, "p-1", required=2, candidates=candidates)
        for bundle in (
            created,
            world.bundle("p-1"),
            world.claims.reread_bundle("p-1").bundle,
            world.claims.load_visible_bundle("p-1", Visibility.everything()),
        ):
            assert bundle is not None
            assert bundle.approval is not None
            assert bundle.approval.terms == ApprovalTerms(DEPLOY, "ship it", 2)
            assert bundle.approval.terms.action.arguments == DEPLOY.arguments
            assert bundle.approval.action_digest == DEPLOY.digest
            assert bundle.approval.standing_id is None
            assert bundle.candidates == Candidates(("u1", "u2"), ("g1",))
            assert [row.question_id for row in bundle.rows] == [APPROVAL_QUESTION_ID]
            assert bundle.decision is None

    def test_plain_questions_keep_no_terms(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        session = world.session()
        plain = world.ask(session.id, "plain")
        assert plain.approval is None
        assert world.bundle("plain").candidates == Candidates()
        assigned = world.ask(session.id, "assigned", candidates=Candidates(user_ids=("u1",)))
        assert assigned.approval is None
        assert world.bundle("assigned").candidates == Candidates(user_ids=("u1",))
        assert world.bundle("assigned").approval is None


class CastVoteContract:
    """:meth:`ClaimRepository.cast_vote`: quorum, veto, idempotent repeats, nothing recorded
    after the decision or on anything but an active approval request."""

    def test_one_approval_decides_through_the_claim(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        ask_approval(world, "p-1")
        result = vote(world, "p-1", voter("ann", comment="go"))
        assert result.counted
        assert result.decision is Decision.APPROVE
        assert (result.approvals, result.required) == (1, 1)
        assert result.claim is not None
        assert result.claim.claimed
        assert result.claim.responded_at is not None
        [row] = world.bundle("p-1").rows
        assert row.status == ANSWERED
        assert row.response is not None
        assert row.response.selected_options == ("approve",)
        assert row.response.custom_text == "go"
        assert row.resolved_by == resolver("ann").stamped(result.claim.responded_at)
        assert world.bundle("p-1").decision is Decision.APPROVE
        assert result.vote is not None
        assert result.vote.at is not None

    def test_quorum_needs_distinct_approvers_and_repeats_change_nothing(
        self, approvals: ApprovalWorld
    ) -> None:
        world = approvals.world
        ask_approval(world, "p-1", required=2)
        first = vote(world, "p-1", voter("ann", comment="first"))
        assert (first.approvals, first.required, first.decision, first.claim) == (1, 2, None, None)
        again = vote(world, "p-1", voter("ann", Decision.DENY, "changed my mind"))
        assert again.repeated
        assert not again.counted
        assert again.vote == first.vote
        assert (again.approvals, again.decision, again.claim) == (1, None, None)
        assert world.bundle("p-1").rows[0].status != ANSWERED
        second = vote(world, "p-1", voter("bob", comment="second"))
        assert second.decision is Decision.APPROVE
        assert second.approvals == 2
        assert second.claim is not None
        assert second.claim.claimed
        assert _unstamped(world.claims.approval_votes("p-1")) == [
            voter("ann", comment="first"),
            voter("bob", comment="second"),
        ]
        votes = world.claims.approval_votes("p-1")
        assert votes[0].at is not None
        assert votes[1].at is not None
        assert votes[0].at <= votes[1].at

    def test_any_deny_vetoes_at_once(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        ask_approval(world, "p-1", required=3)
        vote(world, "p-1", voter("ann"))
        denied = vote(world, "p-1", voter("bob", Decision.DENY, "not today"))
        assert denied.decision is Decision.DENY
        assert denied.claim is not None
        assert denied.claim.claimed
        [row] = world.bundle("p-1").rows
        assert row.status == ANSWERED
        assert row.response is not None
        assert (row.response.selected_options, row.response.custom_text) == (("deny",), "not today")
        assert world.bundle("p-1").decision is Decision.DENY

    def test_a_vote_after_the_decision_is_not_recorded(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        ask_approval(world, "p-1")
        vote(world, "p-1", voter("ann", Decision.DENY))
        late = vote(world, "p-1", voter("bob"))
        assert late.vote is None
        assert not late.repeated
        assert late.claim is None
        assert late.decision is Decision.DENY
        assert [v.voter_id for v in world.claims.approval_votes("p-1")] == ["ann"]
        again = vote(world, "p-1", voter("ann", Decision.APPROVE))
        assert again.repeated
        assert again.vote is not None
        assert again.vote.decision is Decision.DENY
        assert again.decision is Decision.DENY

    def test_a_generic_rejection_reads_as_a_deny(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        ask_approval(world, "p-1", required=2)
        assert world.claims.complete_active_bundle("p-1", REJECTED, None).claimed
        late = vote(world, "p-1", voter("ann"))
        assert (late.vote, late.claim, late.decision) == (None, None, Decision.DENY)
        assert world.claims.approval_votes("p-1") == ()

    def test_votes_on_plain_unknown_or_inactive_bundles_record_nothing(
        self, approvals: ApprovalWorld
    ) -> None:
        world = approvals.world
        session = world.session()
        world.ask(session.id, "plain")
        for pending_id in ("plain", "unknown"):
            result = vote(world, pending_id, voter("ann"))
            assert (result.vote, result.repeated, result.claim, result.decision) == (
                None,
                False,
                None,
                None,
            )
            assert world.claims.approval_votes(pending_id) == ()
        bundle = ask_approval(world, "expired")
        world.claims.expire_active_bundle(bundle.session_id, "expired")
        superseded = ask_approval(world, "superseded")
        world.host.start_turn(superseded.session_id)
        for pending_id in ("expired", "superseded"):
            result = vote(world, pending_id, voter("ann"))
            assert (result.vote, result.claim, result.decision) == (None, None, None)
            assert world.claims.approval_votes(pending_id) == ()
        assert claim(world, "plain").claimed  # the plain question was left alone

    def test_a_vote_needs_a_voter(self, approvals: ApprovalWorld) -> None:
        ask_approval(approvals.world, "p-1")
        with pytest.raises(ValueError, match="voter"):
            vote(approvals.world, "p-1", Vote("", "", Decision.APPROVE))

    def test_concurrent_voters_decide_exactly_once(self, approvals: ApprovalWorld) -> None:
        """#33: N voters at once on M-of-N: one claim, exactly M votes recorded, and every
        voter after the decision is told it."""
        world = approvals.world
        for trial in range(3):
            pending_id = f"race-{trial}"
            ask_approval(world, pending_id, required=3)
            results = race_votes(world, pending_id, [voter(f"v{n}") for n in range(6)])
            assert len([r for r in results if r.claim is not None]) == 1
            assert len([r for r in results if r.counted]) == 3
            assert len(world.claims.approval_votes(pending_id)) == 3
            assert all(r.decision is Decision.APPROVE for r in results if not r.counted)
            assert world.bundle(pending_id).decision is Decision.APPROVE

    def test_a_standing_approval_decides_at_once(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        ask_approval(world, "p-1", required=2)
        standing = _standing("s-1", world)
        won = world.claims.approve_by_standing("p-1", standing)
        assert won.claimed
        assert won.responded_at is not None
        bundle = world.bundle("p-1")
        assert bundle.decision is Decision.APPROVE
        assert bundle.approval is not None
        assert bundle.approval.standing_id == "s-1"
        assert bundle.rows[0].resolved_by == standing.resolver().stamped(won.responded_at)
        assert not world.claims.approve_by_standing("p-1", standing).claimed
        assert vote(world, "p-1", voter("ann")).vote is None
        session = world.session()
        world.ask(session.id, "plain")
        assert not world.claims.approve_by_standing("plain", standing).claimed
        assert not world.claims.approve_by_standing("unknown", standing).claimed
        assert claim(world, "plain").claimed


def _standing(
    standing_id: str,
    world: ContractWorld,
    *,
    workspace_id: str = "w-1",
    minutes: int = 10,
    constraints: object = None,
) -> StandingApproval:
    now = world.clock.peek()
    return StandingApproval(
        id=standing_id,
        workspace_id=workspace_id,
        action_name=DEPLOY.name,
        constraints=parse_constraints(constraints, DEPLOY),
        granted_by_id="u-ann",
        granted_by_name="Ann",
        granted_at=now,
        expires_at=now + timedelta(minutes=minutes),
        source_pending_id="p-0",
    )


class GroupDirectoryContract:
    """:class:`clarion.ports.approvals.GroupDirectory`."""

    def test_groups_and_members(self, approvals: ApprovalWorld) -> None:
        groups = approvals.groups
        ops = groups.create_group("Ops")
        assert (ops.name, ops.member_ids) == ("Ops", ())
        with pytest.raises(ValidationError) as raised:
            groups.create_group("ops")
        assert raised.value.field == "name"
        with pytest.raises(ValidationError):
            groups.create_group("  ")
        groups.create_group("admins")
        assert [g.name for g in groups.list_groups()] == ["admins", "Ops"]
        assert groups.add_member("OPS", "u2").member_ids == ("u2",)
        assert groups.add_member("Ops", "u1").member_ids == ("u1", "u2")
        assert groups.add_member("Ops", "u1").member_ids == ("u1", "u2")
        assert groups.groups_of("u1") == frozenset({ops.id})
        assert groups.remove_member("ops", "u1").member_ids == ("u2",)
        assert groups.remove_member("ops", "u1").member_ids == ("u2",)
        found = groups.group_by_name("oPs")
        assert found is not None
        assert (found.id, found.member_ids) == (ops.id, ("u2",))
        for change in (groups.add_member, groups.remove_member):
            with pytest.raises(NotFound):
                change("nobody", "u1")
        assert groups.delete_group("OPS")
        assert not groups.delete_group("Ops")
        assert groups.group_by_name("Ops") is None
        assert groups.groups_of("u2") == frozenset()
        assert groups.create_group("ops").id != ops.id


class StandingApprovalsContract:
    """:class:`clarion.ports.approvals.StandingApprovals`."""

    def test_match_expiry_and_revoke(self, approvals: ApprovalWorld) -> None:
        world, store = approvals.world, approvals.standing
        granted = store.grant(_standing("s-1", world, constraints={"version": {"prefix": "1."}}))
        now = world.clock.peek()
        other = parse_action("deploy", {"env": "prod", "version": "1.9"})
        assert store.find_match("w-1", other, now) == granted
        assert store.find_match("w-2", other, now) is None
        wrong = parse_action("deploy", {"env": "dev", "version": "1.9"})
        assert store.find_match("w-1", wrong, now) is None
        assert store.find_match("w-1", other, granted.expires_at) is None
        assert store.list_standing(["w-1"], include_inactive=False, now=now) == (granted,)
        assert store.list_standing(None, include_inactive=False, now=granted.expires_at) == ()
        assert store.list_standing(["w-2"], include_inactive=True, now=now) == ()
        revoked = store.revoke("s-1", "u-bob", now)
        assert revoked is not None
        assert (revoked.revoked_at, revoked.revoked_by_id) == (now, "u-bob")
        assert store.find_match("w-1", other, now) is None
        assert store.revoke("s-1", "u-eve", now + timedelta(seconds=1)) == revoked
        assert store.revoke("nope", "u-bob", now) is None
        assert store.list_standing(None, include_inactive=True, now=now) == (revoked,)

    def test_the_earliest_grant_matches_and_lists_run_newest_first(
        self, approvals: ApprovalWorld
    ) -> None:
        world, store = approvals.world, approvals.standing
        first = store.grant(_standing("s-b", world))
        world.clock.advance(timedelta(seconds=1))
        second = store.grant(_standing("s-a", world, constraints={"env": {"any": True}}))
        now = world.clock.peek()
        assert store.find_match("w-1", DEPLOY, now) == first
        assert store.list_standing(None, include_inactive=False, now=now) == (second, first)
        [listed, _] = store.list_standing(["w-1"], include_inactive=False, now=now)
        assert listed.constraints == second.constraints


class AssignmentVisibilityContract:
    """``Visibility.assignee``: an assigned bundle is seen only by its candidates (directly or
    through a group), in the list, the visible load and the resolved list — to anyone else
    exactly as an unknown bundle."""

    def _scoped(self, user_id: str) -> Visibility:
        return Visibility.owned_by(user_id).assigned_to(user_id)

    def test_only_candidates_see_an_assigned_bundle(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        ops = approvals.groups.create_group("ops")
        approvals.groups.add_member("ops", "u-grp")
        ask_approval(world, "assigned", candidates=Candidates(("u-direct",), (ops.id,)))
        ask_approval(world, "open")
        session = world.session()
        # a plain question with an assignment
        world.ask(session.id, "question", candidates=Candidates(user_ids=("u-direct",)))
        for user, expected in (
            ("u-direct", ["assigned", "open", "question"]),
            ("u-grp", ["assigned", "open"]),
            ("u-other", ["open"]),
        ):
            visibility = self._scoped(user)
            page = world.claims.list_active_bundles(ListQuery(visibility=visibility))
            assert sorted(b.pending_id for b in page.bundles) == expected
            seen = world.claims.load_visible_bundle("assigned", visibility)
            assert (seen is not None) == ("assigned" in expected)
            assert world.claims.load_visible_bundle("unknown", visibility) is None
            hidden = world.claims.load_visible_bundle("question", visibility)
            assert (hidden is not None) == ("question" in expected)
        unfiltered = world.claims.list_active_bundles(
            ListQuery(visibility=Visibility.owned_by("x"))
        )
        assert len(unfiltered.bundles) == 3

    def test_the_resolved_list_applies_the_assignment(self, approvals: ApprovalWorld) -> None:
        world = approvals.world
        ask_approval(world, "assigned", candidates=Candidates(user_ids=("u-direct",)))
        ask_approval(world, "open")
        vote(world, "assigned", voter("u-direct"))
        vote(world, "open", voter("u-direct"))
        for bundle_id in ("assigned", "open"):
            result = world.bundle(bundle_id).rows[0]
            world.claims.finalize_delivery(bundle_id, ANSWERED, [result.id])
        for user, expected in (("u-direct", ["assigned", "open"]), ("u-other", ["open"])):
            page = world.claims.list_resolved_bundles(ResolvedQuery(visibility=self._scoped(user)))
            assert sorted(b.pending_id for b in page.bundles) == expected


class ApprovalsContract(
    ApprovalExtrasContract,
    CastVoteContract,
    GroupDirectoryContract,
    StandingApprovalsContract,
    AssignmentVisibilityContract,
):
    """The whole approvals contract (issue #33)."""


__all__ = ["ApprovalWorld", "ApprovalsContract", "ask_approval", "race_votes", "vote", "voter"]
