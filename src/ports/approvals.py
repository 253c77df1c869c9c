"""Groups and standing approvals (issue #33): what assignments name and what approves at once.

Contract (checked by ``clarion.ports.testing.approvals``): group names are unique
case-insensitively; a membership change on an unknown group raises
:class:`~clarion.domain.errors.NotFound`; a standing approval matches per
:meth:`~clarion.domain.approvals.StandingApproval.matches` within its workspace only, and a
revoked or expired one never matches.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Protocol

from clarion.domain.approvals import Action, Group, StandingApproval


class GroupDirectory(Protocol):
    """The groups an assignment may name; managed by admins (CLI and REST)."""

    def create_group(self, name: str) -> Group:
        """A new empty group. Raises ``ValidationError(field="name")`` when the name is
        invalid or already taken (case-insensitively)."""
        ...

    def delete_group(self, name: str) -> bool:
        """Delete the group (case-insensitive name) and its memberships; False when unknown."""
        ...

    def add_member(self, group_name: str, user_id: str) -> Group:
        """Add ``user_id`` (idempotent). Raises ``NotFound`` for an unknown group."""
        ...

    def remove_member(self, group_name: str, user_id: str) -> Group:
        """Remove ``user_id`` (idempotent). Raises ``NotFound`` for an unknown group."""
        ...

    def list_groups(self) -> tuple[Group, ...]:
        """Every group, by name case-insensitively."""
        ...

    def group_by_name(self, name: str) -> Group | None:
        """The group called ``name`` (case-insensitively), or None."""
        ...

    def groups_of(self, user_id: str) -> frozenset[str]:
        """The ids of the groups ``user_id`` belongs to."""
        ...


class StandingApprovals(Protocol):
    """Standing approvals: granted with a decision, matched at request time, revocable."""

    def grant(self, standing: StandingApproval) -> StandingApproval:
        """Store ``standing`` (its id is the caller's) and return it."""
        ...

    def find_match(
        self, workspace_id: str, action: Action, now: datetime
    ) -> StandingApproval | None:
        """An active standing approval of ``workspace_id`` that matches ``action`` at ``now``
        (the earliest granted when several do), or None."""
        ...

    def list_standing(
        self, workspace_ids: Collection[str] | None, *, include_inactive: bool, now: datetime
    ) -> tuple[StandingApproval, ...]:
        """The standing approvals of ``workspace_ids`` (None: every workspace), newest grant
        first; only the active ones at ``now`` unless ``include_inactive``."""
        ...

    def revoke(self, standing_id: str, by_id: str, now: datetime) -> StandingApproval | None:
        """Revoke at ``now`` (a repeat keeps the first revocation); None when unknown."""
        ...
