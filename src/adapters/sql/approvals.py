"""Approvals in SQL (issue #33): a bundle's extras, its candidates and votes, groups and
standing approvals, on SQLite and PostgreSQL.

The extras are written in the create's own transaction and read back with the bundle by one
LEFT JOIN (:data:`EXTRAS_COLUMNS`); candidates are read only for a bundle that has extras, so a
plain question reads nothing more than before. A vote takes the request's extras row
``FOR UPDATE`` (PostgreSQL; ``BEGIN IMMEDIATE`` serializes SQLite's writers) before it reads
the votes, so votes on one request are applied one at a time and the claim they decide runs
in the same transaction (:class:`clarion.adapters.sql.claims.SqlClaimRepository.cast_vote`).
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from clarion.adapters.sql.engine import SqlRepository, SqlStore, read_transaction
from clarion.adapters.sql.rows import from_row, insert_record
from clarion.adapters.sql.schema import (
    approval_votes,
    bundle_candidates,
    bundle_extras,
    group_members,
    groups,
    standing_approvals,
)
from clarion.domain.approvals import (
    KIND_APPROVAL,
    KIND_ASSIGNED,
    Action,
    ApprovalRecord,
    ApprovalTerms,
    Candidates,
    Decision,
    Group,
    StandingApproval,
    Vote,
    check_group_name,
    constraints_json,
    group_name_key,
    stored_constraints,
)
from clarion.domain.errors import NotFound, Resource, ValidationError
from clarion.domain.resolved_by import Surface

USER: str = "user"
GROUP: str = "group"

# Read with a bundle's rows through ``LEFT JOIN bundle_extras`` (NULL ``extras_kind``: none).
EXTRAS_COLUMNS = (
    bundle_extras.c.kind.label("extras_kind"),
    bundle_extras.c.action_name.label("extras_action_name"),
    bundle_extras.c.action_json.label("extras_action_json"),
    bundle_extras.c.action_digest.label("extras_action_digest"),
    bundle_extras.c.reason.label("extras_reason"),
    bundle_extras.c.required_approvals.label("extras_required"),
    bundle_extras.c.standing_id.label("extras_standing_id"),
)


def insert_extras(
    connection: Connection,
    pending_id: str,
    approval: ApprovalTerms | None,
    candidates: Candidates,
    now: datetime,
) -> None:
    """Write a new bundle's extras in the create's transaction; nothing for a plain question
    without candidates."""
    if approval is None and not candidates.assigned:
        return
    values: dict[str, Any] = {"pending_id": pending_id, "created_at": now, "kind": KIND_ASSIGNED}
    if approval is not None:
        values.update(
            kind=KIND_APPROVAL,
            action_name=approval.action.name,
            action_json=approval.action.arguments_json(),
            action_digest=approval.action.digest,
            reason=approval.reason,
            required_approvals=approval.required_approvals,
        )
    connection.execute(sa.insert(bundle_extras).values(**values))
    subjects = [(USER, user_id) for user_id in candidates.user_ids]
    subjects += [(GROUP, group_id) for group_id in candidates.group_ids]
    if subjects:
        connection.execute(
            sa.insert(bundle_candidates),
            [
                {"pending_id": pending_id, "subject_kind": kind, "subject_id": subject}
                for kind, subject in subjects
            ],
        )


def approval_record(row: Mapping[str, Any]) -> ApprovalRecord | None:
    """The terms of a row read with :data:`EXTRAS_COLUMNS`; None unless an approval."""
    if row["extras_kind"] != KIND_APPROVAL:
        return None
    action = Action(row["extras_action_name"], json.loads(row["extras_action_json"]))
    terms = ApprovalTerms(action, row["extras_reason"], row["extras_required"])
    return ApprovalRecord(terms, row["extras_action_digest"], row["extras_standing_id"])


def read_candidates(connection: Connection, pending_id: str) -> Candidates:
    found = connection.execute(
        sa.select(bundle_candidates.c.subject_kind, bundle_candidates.c.subject_id).where(
            bundle_candidates.c.pending_id == pending_id
        )
    ).all()
    return Candidates(
        user_ids=tuple(subject for kind, subject in found if kind == USER),
        group_ids=tuple(subject for kind, subject in found if kind == GROUP),
    )


def lock_extras(connection: Connection, pending_id: str) -> str | None:
    """Take the request's extras row (``FOR UPDATE`` on PostgreSQL): every vote on the request
    waits here for the one before it to commit. Returns its kind (None: no extras)."""
    statement = sa.select(bundle_extras.c.kind).where(bundle_extras.c.pending_id == pending_id)
    if connection.dialect.name == "postgresql":
        statement = statement.with_for_update()
    kind: str | None = connection.execute(statement).scalar()
    return kind


def read_votes(connection: Connection, pending_id: str) -> list[Vote]:
    """The request's votes in voting order."""
    v = approval_votes
    found = connection.execute(
        sa.select(v.c.voter_id, v.c.display_name, v.c.decision, v.c.comment, v.c.surface)
        .add_columns(v.c.voted_at)
        .where(v.c.pending_id == pending_id)
        .order_by(v.c.seq)
    ).all()
    surfaces = {surface.value for surface in Surface}
    return [
        Vote(
            voter_id=row.voter_id,
            display_name=row.display_name,
            decision=Decision(row.decision),
            comment=row.comment,
            surface=Surface(row.surface) if row.surface in surfaces else Surface.UNKNOWN,
            at=row.voted_at,
        )
        for row in found
    ]


def insert_vote(connection: Connection, pending_id: str, vote: Vote, seq: int) -> None:
    connection.execute(
        sa.insert(approval_votes).values(
            pending_id=pending_id,
            voter_id=vote.voter_id,
            display_name=vote.display_name,
            decision=vote.decision.value,
            comment=vote.comment,
            surface=vote.surface.value,
            voted_at=vote.at,
            seq=seq,
        )
    )


def mark_standing(connection: Connection, pending_id: str, standing_id: str) -> None:
    connection.execute(
        sa.update(bundle_extras)
        .where(bundle_extras.c.pending_id == pending_id)
        .values(standing_id=standing_id)
    )


class SqlGroupDirectory(SqlStore):
    """:class:`clarion.ports.approvals.GroupDirectory` in ``groups`` / ``group_members``."""

    @staticmethod
    def _find(connection: Connection, name: str) -> Group | None:
        row = connection.execute(
            sa.select(groups).where(groups.c.name_key == group_name_key(name))
        ).first()
        if row is None:
            return None
        members = connection.execute(
            sa.select(group_members.c.user_id).where(group_members.c.group_id == row.id)
        ).scalars()
        return Group(row.id, row.name, row.created_at, tuple(members))

    def create_group(self, name: str) -> Group:
        check_group_name(name)
        group = Group(id=self._ids.new_id(), name=name, created_at=self._clock.now())
        try:
            with self._writes.begin() as connection:
                connection.execute(
                    sa.insert(groups).values(
                        id=group.id,
                        name=name,
                        name_key=group_name_key(name),
                        created_at=group.created_at,
                    )
                )
        except IntegrityError:
            raise ValidationError(f"a group called {name!r} already exists", field="name") from None
        return group

    def delete_group(self, name: str) -> bool:
        with self._writes.begin() as connection:
            group = self._find(connection, name)
            if group is None:
                return False
            connection.execute(sa.delete(group_members).where(group_members.c.group_id == group.id))
            connection.execute(sa.delete(groups).where(groups.c.id == group.id))
            return True

    def _known(self, connection: Connection, group_name: str) -> Group:
        group = self._find(connection, group_name)
        if group is None:
            raise NotFound(f"group not found: {group_name}", resource=Resource.USER)
        return group

    def add_member(self, group_name: str, user_id: str) -> Group:
        with self._writes.begin() as connection:
            group = self._known(connection, group_name)
            if user_id not in group.member_ids:
                connection.execute(
                    sa.insert(group_members).values(group_id=group.id, user_id=user_id)
                )
            return self._known(connection, group_name)

    def remove_member(self, group_name: str, user_id: str) -> Group:
        with self._writes.begin() as connection:
            group = self._known(connection, group_name)
            connection.execute(
                sa.delete(group_members).where(
                    group_members.c.group_id == group.id, group_members.c.user_id == user_id
                )
            )
            return self._known(connection, group_name)

    def list_groups(self) -> tuple[Group, ...]:
        with read_transaction(self._engine) as connection:
            rows = connection.execute(sa.select(groups).order_by(groups.c.name_key)).all()
            members = connection.execute(sa.select(group_members)).all()
        by_group: dict[str, list[str]] = {}
        for member in members:
            by_group.setdefault(member.group_id, []).append(member.user_id)
        found = [Group(r.id, r.name, r.created_at, tuple(by_group.get(r.id, ()))) for r in rows]
        return tuple(sorted(found, key=lambda g: (group_name_key(g.name), g.id)))

    def group_by_name(self, name: str) -> Group | None:
        with read_transaction(self._engine) as connection:
            return self._find(connection, name)

    def groups_of(self, user_id: str) -> frozenset[str]:
        with read_transaction(self._engine) as connection:
            found = connection.execute(
                sa.select(group_members.c.group_id).where(group_members.c.user_id == user_id)
            ).scalars()
            return frozenset(found)


def _standing(row: Any) -> StandingApproval:
    return from_row(
        StandingApproval, row._mapping, constraints=stored_constraints(row.constraints_json)
    )


class SqlStandingApprovals(SqlRepository):
    """:class:`clarion.ports.approvals.StandingApprovals` in ``standing_approvals``."""

    def grant(self, standing: StandingApproval) -> StandingApproval:
        return insert_record(
            self._writes,
            standing_approvals,
            standing,
            constraints_json=constraints_json(standing.constraints),
        )

    def find_match(
        self, workspace_id: str, action: Action, now: datetime
    ) -> StandingApproval | None:
        """The index narrows to the workspace's unexpired grants of the action's name; the
        constraints are judged by the domain (the earliest matching grant wins)."""
        s = standing_approvals
        with read_transaction(self._engine) as connection:
            rows = connection.execute(
                sa.select(s)
                .where(
                    s.c.workspace_id == workspace_id,
                    s.c.action_name == action.name,
                    s.c.expires_at > now,
                    s.c.revoked_at.is_(None),
                )
                .order_by(s.c.granted_at, s.c.id)
            ).all()
        return next((g for g in map(_standing, rows) if g.matches(action, now)), None)

    def list_standing(
        self, workspace_ids: Collection[str] | None, *, include_inactive: bool, now: datetime
    ) -> tuple[StandingApproval, ...]:
        s = standing_approvals
        statement = sa.select(s).order_by(s.c.granted_at.desc(), s.c.id.desc())
        if workspace_ids is not None:
            if not workspace_ids:
                return ()
            statement = statement.where(s.c.workspace_id.in_(sorted(workspace_ids)))
        if not include_inactive:
            statement = statement.where(s.c.expires_at > now, s.c.revoked_at.is_(None))
        with read_transaction(self._engine) as connection:
            return tuple(map(_standing, connection.execute(statement).all()))

    def revoke(self, standing_id: str, by_id: str, now: datetime) -> StandingApproval | None:
        s = standing_approvals
        with self._writes.begin() as connection:
            connection.execute(
                sa.update(s)
                .where(s.c.id == standing_id, s.c.revoked_at.is_(None))
                .values(revoked_at=now, revoked_by_id=by_id)
            )
            row = connection.execute(sa.select(s).where(s.c.id == standing_id)).first()
        return _standing(row) if row is not None else None


__all__ = ["SqlGroupDirectory", "SqlStandingApprovals"]
