"""Task authorization (spec "Permissions", L1c, M5, M5a)."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

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


@runtime_checkable
class VisibilityAuthorizer(TaskAuthorizer, Protocol):
    """A capability a :class:`TaskAuthorizer` may declare: ``decides_by_visibility`` is True
    when ``authorize_task`` decides exactly what ``visibility`` returns (the owner rule over
    the same storage's workspaces). A store may then judge visibility inside its own read
    (:meth:`clarion.ports.ClaimRepository.load_visible_bundle`: one read, and a foreign
    bundle reads zero rows, like a fabricated id). Without the capability, or with it False,
    the authorizer is asked after the read."""

    @property
    def decides_by_visibility(self) -> bool: ...
