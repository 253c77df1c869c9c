"""Task authorization (spec "Permissions", L1c, M5, M5a)."""

from __future__ import annotations

from typing import Protocol

from clarion.domain.listing import Visibility
from clarion.domain.model import Identity


class TaskAuthorizer(Protocol):
    """Decides whether an identity may see a task.

    Contract (checked by ``clarion.ports.testing.authorizer``):

    - An unscoped identity (internal or synthetic) may see every task, even a missing one.
    - A scoped identity may see a task whose workspace id is "", names no existing workspace,
      or names a workspace whose ``owner_id`` is "" or the caller's id.
    - Every denial, a missing task, and an empty task id raise ``NotFound`` — never anything
      that tells them apart.
    - ``visibility`` returns the L1a set: unscoped, or the ids of the workspaces the caller may
      see; it agrees with ``authorize_task`` through :func:`clarion.domain.task_visible`.
    """

    def authorize_task(self, identity: Identity, task_id: str) -> None:
        """Return when ``identity`` may see ``task_id``; raise ``NotFound`` otherwise."""
        ...

    def visibility(self, identity: Identity) -> Visibility: ...
