"""The in-memory approvals (issue #33): a bundle's extras, votes, groups, standing approvals.

The reference the SQL stores are tested against. Every operation holds the store's lock for
its whole read-modify-write, so a vote and the claim it decides are one atomic step.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from datetime import datetime

import attrs

from clarion.adapters.memory.store import BundleExtras, InMemoryStore
from clarion.domain.approvals import (
    Action,
    ApprovalRecord,
    ApprovalTerms,
    Candidates,
    Decision,
    Group,
    StandingApproval,
    Vote,
    approvals_count,
    check_group_name,
    earlier_vote,
    group_name_key,
    tally,
)
from clarion.domain.errors import NotFound, Resource, ValidationError
from clarion.domain.rows import Bundle
from clarion.ports.claims import ClaimResult, VoteResult
from clarion.ports.system import Clock, IdGenerator


def store_extras(
    store: InMemoryStore,
    pending_id: str,
    approval: ApprovalTerms | None,
    candidates: Candidates,
) -> None:
    """Keep a new bundle's extras (the caller holds the lock, in the create's step); a plain
    question without candidates keeps nothing."""
    if approval is None and not candidates.assigned:
        return
    record = (
        ApprovalRecord(terms=approval, action_digest=approval.action.digest)
        if approval is not None
        else None
    )
    store.bundle_extras[pending_id] = BundleExtras(approval=record, candidates=candidates)


def with_extras(store: InMemoryStore, bundle: Bundle) -> Bundle:
    """``bundle`` with the extras kept beside its rows."""
    extras = store.bundle_extras.get(bundle.pending_id)
    if extras is None:
        return bundle
    return attrs.evolve(bundle, approval=extras.approval, candidates=extras.candidates)


def mark_standing(store: InMemoryStore, pending_id: str, standing_id: str) -> None:
    """Record the standing approval that decided ``pending_id`` at once (hold the lock)."""
    extras = store.bundle_extras.get(pending_id)
    if extras is not None and extras.approval is not None:
        approval = attrs.evolve(extras.approval, standing_id=standing_id)
        store.bundle_extras[pending_id] = attrs.evolve(extras, approval=approval)


def cast_vote(
    store: InMemoryStore,
    bundle: Bundle | None,
    vote: Vote,
    now: datetime,
    *,
    active: bool,
    claim: Callable[[Vote, Decision], ClaimResult],
) -> VoteResult:
    """The vote's one step (the caller holds the lock and read ``bundle`` and ``active``
    under it): the same sequence the SQL transaction runs."""
    if not vote.voter_id:
        raise ValueError("a vote needs a voter id")
    if bundle is None or bundle.approval is None:
        decision = bundle.decision if bundle is not None else None
        return VoteResult(None, False, 0, 0, None, decision)
    votes = store.approval_votes.setdefault(bundle.pending_id, [])
    required = bundle.approval.terms.required_approvals
    earlier = earlier_vote(votes, vote.voter_id)
    if earlier is not None or not active:
        return VoteResult(
            earlier, earlier is not None, approvals_count(votes), required, None, bundle.decision
        )
    stored = attrs.evolve(vote, at=now)
    votes.append(stored)
    decision = tally(required, votes)
    result = claim(stored, decision) if decision is not None else None
    if result is not None and not result.claimed:  # never recorded after the decision
        votes.pop()
        return VoteResult(None, False, approvals_count(votes), required, None, None)
    return VoteResult(stored, False, approvals_count(votes), required, result, decision)


class InMemoryGroupDirectory:
    """:class:`clarion.ports.approvals.GroupDirectory` over an :class:`InMemoryStore`."""

    def __init__(self, store: InMemoryStore, clock: Clock, ids: IdGenerator) -> None:
        self._store = store
        self._clock = clock
        self._ids = ids

    def _find(self, name: str) -> Group | None:
        key = group_name_key(name)
        return next((g for g in self._store.groups.values() if group_name_key(g.name) == key), None)

    def create_group(self, name: str) -> Group:
        check_group_name(name)
        with self._store.lock:
            if self._find(name) is not None:
                raise ValidationError(f"a group called {name!r} already exists", field="name")
            group = Group(id=self._ids.new_id(), name=name, created_at=self._clock.now())
            self._store.groups[group.id] = group
            return group

    def delete_group(self, name: str) -> bool:
        with self._store.lock:
            group = self._find(name)
            if group is None:
                return False
            del self._store.groups[group.id]
            return True

    def _change(
        self, group_name: str, change: Callable[[tuple[str, ...]], tuple[str, ...]]
    ) -> Group:
        with self._store.lock:
            group = self._find(group_name)
            if group is None:
                raise NotFound(f"group not found: {group_name}", resource=Resource.USER)
            updated = attrs.evolve(group, member_ids=change(group.member_ids))
            self._store.groups[group.id] = updated
            return updated

    def add_member(self, group_name: str, user_id: str) -> Group:
        return self._change(group_name, lambda members: (*members, user_id))

    def remove_member(self, group_name: str, user_id: str) -> Group:
        return self._change(group_name, lambda members: tuple(m for m in members if m != user_id))

    def list_groups(self) -> tuple[Group, ...]:
        with self._store.lock:
            groups = list(self._store.groups.values())
        return tuple(sorted(groups, key=lambda g: (group_name_key(g.name), g.id)))

    def group_by_name(self, name: str) -> Group | None:
        with self._store.lock:
            return self._find(name)

    def groups_of(self, user_id: str) -> frozenset[str]:
        with self._store.lock:
            return self._store.groups_of(user_id)


class InMemoryStandingApprovals:
    """:class:`clarion.ports.approvals.StandingApprovals` over an :class:`InMemoryStore`."""

    def __init__(self, store: InMemoryStore) -> None:
        self._store = store

    def grant(self, standing: StandingApproval) -> StandingApproval:
        return self._store.insert(self._store.standing_approvals, standing)

    def find_match(
        self, workspace_id: str, action: Action, now: datetime
    ) -> StandingApproval | None:
        with self._store.lock:
            matching = [
                s
                for s in self._store.standing_approvals.values()
                if s.workspace_id == workspace_id and s.matches(action, now)
            ]
        return min(matching, key=lambda s: (s.granted_at, s.id), default=None)

    def list_standing(
        self, workspace_ids: Collection[str] | None, *, include_inactive: bool, now: datetime
    ) -> tuple[StandingApproval, ...]:
        wanted = None if workspace_ids is None else frozenset(workspace_ids)
        with self._store.lock:
            found = [
                s
                for s in self._store.standing_approvals.values()
                if (wanted is None or s.workspace_id in wanted)
                and (include_inactive or s.active(now))
            ]
        return tuple(sorted(found, key=lambda s: (s.granted_at, s.id), reverse=True))

    def revoke(self, standing_id: str, by_id: str, now: datetime) -> StandingApproval | None:
        with self._store.lock:
            standing = self._store.standing_approvals.get(standing_id)
            if standing is None or standing.revoked_at is not None:
                return standing
            revoked = attrs.evolve(standing, revoked_at=now, revoked_by_id=by_id)
            self._store.standing_approvals[standing_id] = revoked
            return revoked
