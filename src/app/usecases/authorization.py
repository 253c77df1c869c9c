"""The reference :class:`clarion.ports.TaskAuthorizer` over a :class:`HostRepository`
(spec "Permissions", L1a, L1c, M5a; upstream facts §5.11 ``authorizeTaskID``)."""

from __future__ import annotations

from clarion.domain.errors import NOT_FOUND_MESSAGE, NotFound
from clarion.domain.listing import Visibility, workspace_visible_to
from clarion.domain.model import Identity
from clarion.ports.host import HostRepository

# A workspace id no workspace has (see authorize_task).
ABSENT_WORKSPACE_ID = "clarion:absent-workspace"


class HostTaskAuthorizer:
    """Authorizes tasks by their workspace's owner, as recorded by the host repository."""

    def __init__(self, host: HostRepository) -> None:
        self._host = host

    def authorize_task(self, identity: Identity, task_id: str) -> None:
        """Return when ``identity`` may see ``task_id``.

        Raises:
            NotFound: the task is missing, ``task_id`` is empty, or its workspace belongs to
                someone else — one error for all three, so a denial reveals nothing (A5a).
        """
        if not identity.is_scoped:
            return
        found = self._host.get_task_and_workspace(task_id) if task_id else None  # one read
        if found is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        task, workspace = found
        if task.workspace_id == "":
            return  # D5: a task without a workspace is visible to everyone
        # L1c disjunct 2: a dangling workspace reference does not hide the task.
        if workspace is None or workspace_visible_to(workspace.owner_id, identity):
            return
        raise NotFound(NOT_FOUND_MESSAGE)

    @property
    def decides_by_visibility(self) -> bool:
        """True (:class:`clarion.ports.authorizer.VisibilityAuthorizer`), unless a subclass
        changed what ``authorize_task`` or ``visibility`` decides."""
        kind = type(self)
        return (
            kind.authorize_task is HostTaskAuthorizer.authorize_task
            and kind.visibility is HostTaskAuthorizer.visibility
        )

    def visibility(self, identity: Identity) -> Visibility:
        """L1a: everything for unscoped callers, else the owner rule itself (no read here: the
        store evaluates it inside its query, however many workspaces there are)."""
        if not identity.is_scoped or identity.user_id is None:
            return Visibility.everything()
        return Visibility.owned_by(identity.user_id)
