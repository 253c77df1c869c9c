"""A foreign id and a fabricated one are refused after the same work (issue #14: no timing
oracle). The timing itself is measured by ``benchmarks/not_found_timing.py``; here the store
calls each refusal makes are recorded and compared."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.adapters.memory import InMemoryClaimRepository, InMemoryHostRepository, InMemoryStore
from clarion.adapters.system import SystemClock
from clarion.app.usecases.access import load_authorized_bundle, load_authorized_session
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.domain.errors import NotFound
from clarion.domain.listing import Visibility
from clarion.domain.model import Identity, Option, Question
from tests.unit.app.world import CountingIds

ALICE = Identity.user("alice")
BOB = Identity.user("bob")


class Recording:
    """Forwards every call to ``inner`` and records the method's name."""

    def __init__(self, inner: Any, calls: list[str]) -> None:
        self._inner = inner
        self._calls = calls

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not callable(attribute):
            return attribute

        def call(*args: Any, **kwargs: Any) -> Any:
            self._calls.append(name)
            return attribute(*args, **kwargs)

        return call


@pytest.fixture(name="world")
def fixture_world() -> dict[str, Any]:
    store, clock, ids = InMemoryStore(), SystemClock(), CountingIds()
    host = InMemoryHostRepository(store, clock, ids)
    claims = InMemoryClaimRepository(store, clock, ids)
    workspace = host.create_workspace("alice's", owner_id="alice")
    task = host.create_task("t", workspace.id)
    session, _ = host.create_session(task.id)
    question = Question(
        id="q1",
        title="T",
        prompt="Which?",
        options=(Option("q1_opt1", "A", "a"), Option("q1_opt2", "B", "b")),
    )
    claims.create_bundle(
        pending_id="p-1", session_id=session.id, task_id=task.id, questions=[question], context=""
    )
    return {"host": host, "claims": claims, "session_id": session.id, "pending_id": "p-1"}


def _refusal_calls(refuse: Any) -> list[str]:
    calls: list[str] = []
    with pytest.raises(NotFound):
        refuse(calls)
    return calls


def test_a_foreign_and_a_fabricated_bundle_id_cost_the_same_store_calls(
    world: dict[str, Any],
) -> None:
    def refuse(pending_id: str) -> list[str]:
        def run(calls: list[str]) -> None:
            host = Recording(world["host"], calls)
            claims = Recording(world["claims"], calls)
            load_authorized_bundle(claims, HostTaskAuthorizer(host), BOB, pending_id)

        return _refusal_calls(run)

    foreign = refuse(world["pending_id"])
    assert foreign == ["load_visible_bundle"]  # the built-in authorizer: judged in the read
    assert refuse("never-issued") == foreign


class HostAuthorizer:
    """A host-supplied authorizer (the port, not the built-in class) that knows only a set of
    workspace ids; it answers as the built-in one would."""

    def __init__(self, inner: HostTaskAuthorizer, workspace_ids: set[str]) -> None:
        self._inner = inner
        self._workspace_ids = workspace_ids

    def authorize_task(self, identity: Identity, task_id: str) -> None:
        self._inner.authorize_task(identity, task_id)

    def visibility(self, identity: Identity) -> Visibility:
        return Visibility.only(self._workspace_ids)


def test_a_host_supplied_authorizer_is_asked_after_the_read_for_both_kinds(
    world: dict[str, Any],
) -> None:
    """Issue #14: a host's authorizer still decides (the slower path: two reads, and a missing
    bundle is authorized against an absent task so it costs what a foreign one does)."""

    def refuse(pending_id: str) -> list[str]:
        def run(calls: list[str]) -> None:
            host = Recording(world["host"], calls)
            claims = Recording(world["claims"], calls)
            authorizer = HostAuthorizer(HostTaskAuthorizer(host), set())
            load_authorized_bundle(claims, authorizer, BOB, pending_id)

        return _refusal_calls(run)

    foreign = refuse(world["pending_id"])
    assert foreign == ["load_bundle", "get_task_and_workspace"]
    assert refuse("never-issued") == foreign
    owner = HostAuthorizer(HostTaskAuthorizer(world["host"]), set())
    assert load_authorized_bundle(world["claims"], owner, ALICE, world["pending_id"]).rows


def test_a_foreign_and_a_fabricated_session_id_cost_the_same_store_calls(
    world: dict[str, Any],
) -> None:
    def refuse(session_id: str) -> list[str]:
        def run(calls: list[str]) -> None:
            host = Recording(world["host"], calls)
            load_authorized_session(host, HostTaskAuthorizer(host), BOB, session_id)

        return _refusal_calls(run)

    foreign = refuse(world["session_id"])
    assert foreign == ["get_session", "get_task_and_workspace"]
    assert refuse("never-issued") == foreign


def test_the_owner_still_sees_the_bundle_and_the_session(world: dict[str, Any]) -> None:
    authorizer = HostTaskAuthorizer(world["host"])
    bundle = load_authorized_bundle(world["claims"], authorizer, ALICE, world["pending_id"])
    assert bundle.rows
    session = load_authorized_session(world["host"], authorizer, ALICE, world["session_id"])
    assert session.id == world["session_id"]
