"""Contract suite for :class:`clarion.ports.TaskAuthorizer` over a host repository (spec
"Permissions", L1a, L1c, A5a, M5a; upstream facts §5.11 ``authorizeTaskID``)."""

from __future__ import annotations

import pytest

from clarion.domain.errors import NOT_FOUND_MESSAGE, NotFound
from clarion.domain.listing import Visibility, task_visible
from clarion.domain.model import Identity
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.testing.world import ContractWorld

ME = Identity.user("me")


class TaskAuthorizerContract:
    """Provide a ``world`` fixture and an ``authorizer`` fixture built over ``world.host``."""

    def test_unscoped_callers_may_see_every_task_even_a_missing_one(
        self, world: ContractWorld, authorizer: TaskAuthorizer
    ) -> None:
        hidden = world.task(world.workspace("theirs", "them").id)
        for identity in (Identity.internal(), Identity.synthetic_admin()):
            authorizer.authorize_task(identity, hidden.id)
            authorizer.authorize_task(identity, "no-such-task")
            assert authorizer.visibility(identity) == Visibility.everything()

    def test_a_scoped_caller_sees_unowned_own_empty_and_dangling_workspace_tasks(
        self, world: ContractWorld, authorizer: TaskAuthorizer
    ) -> None:
        for workspace_id in (
            world.workspace("mine", "me").id,
            world.workspace("shared", "").id,
            "",
            "no-such-workspace",
        ):
            authorizer.authorize_task(ME, world.task(workspace_id).id)

    def test_a_denial_a_missing_task_and_an_empty_id_are_the_same_not_found(
        self, world: ContractWorld, authorizer: TaskAuthorizer
    ) -> None:
        """A5a: nothing tells the three apart."""
        hidden = world.task(world.workspace("theirs", "them").id)
        messages = []
        for task_id in (hidden.id, "no-such-task", ""):
            with pytest.raises(NotFound) as caught:
                authorizer.authorize_task(ME, task_id)
            assert type(caught.value) is NotFound
            messages.append(caught.value.message)
        assert messages == [NOT_FOUND_MESSAGE] * 3

    def test_visibility_is_the_set_of_unowned_and_own_workspaces(
        self, world: ContractWorld, authorizer: TaskAuthorizer
    ) -> None:
        """L1a, whichever form the authorizer returns (the owner rule or a set of ids); a caller
        who owns nothing and sees nothing sees no workspace (L1b)."""

        def seen(identity: Identity) -> set[str]:
            visibility = authorizer.visibility(identity)
            assert not visibility.unscoped
            return {w.id for w in world.host.list_workspaces() if visibility.sees(w.id, w.owner_id)}

        mine = world.workspace("mine", "me")
        world.workspace("theirs", "them")
        assert seen(ME) == {mine.id}
        assert seen(Identity.user("nobody")) == set()
        shared = world.workspace("shared")
        owned = world.workspace("private", "me")
        assert seen(ME) == {mine.id, shared.id, owned.id}
        assert seen(Identity.user("nobody")) == {shared.id}

    def test_visibility_agrees_with_authorize_task(
        self, world: ContractWorld, authorizer: TaskAuthorizer
    ) -> None:
        """L1c: the list predicate and the per-task check never disagree."""
        tasks = [
            world.task(world.workspace("mine", "me").id),
            world.task(world.workspace("shared").id),
            world.task(world.workspace("theirs", "them").id),
            world.task(""),
            world.task("no-such-workspace"),
        ]
        for identity in (ME, Identity.user("them"), Identity.user("nobody")):
            visibility = authorizer.visibility(identity)
            for task in tasks:
                workspace = world.host.get_workspace(task.workspace_id)
                owner_id = workspace.owner_id if workspace is not None else ""
                listed = task_visible(
                    visibility, task.workspace_id, workspace is not None, owner_id
                )
                try:
                    authorizer.authorize_task(identity, task.id)
                except NotFound:
                    allowed = False
                else:
                    allowed = True
                assert listed == allowed, (identity, task)
