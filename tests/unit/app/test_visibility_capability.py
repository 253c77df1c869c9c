"""#32: the store judges visibility inside its read for any authorizer that declares the
capability on the port (:class:`VisibilityAuthorizer`), not for one exact class; a subclass
that changes what is decided, or an authorizer that does not declare it, is asked after the
read (issue #14's two paths)."""

from __future__ import annotations

from typing import Any

import pytest

from clarion.adapters.memory import InMemoryClaimRepository, InMemoryHostRepository, InMemoryStore
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.access import load_authorized_bundle
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.domain.errors import NotFound
from clarion.domain.listing import Visibility
from clarion.domain.model import Identity, Option, Question
from clarion.ports.authorizer import VisibilityAuthorizer

BOB = Identity.user("bob")


class CountingClaims:
    """The claim repository, counting which bundle read was made."""

    def __init__(self, inner: InMemoryClaimRepository) -> None:
        self.inner = inner
        self.reads: list[str] = []

    def load_bundle(self, pending_id: str) -> Any:
        self.reads.append("load_bundle")
        return self.inner.load_bundle(pending_id)

    def load_visible_bundle(self, pending_id: str, visibility: Visibility) -> Any:
        self.reads.append("load_visible_bundle")
        return self.inner.load_visible_bundle(pending_id, visibility)


class Narrowed(HostTaskAuthorizer):
    """A subclass that changes what ``authorize_task`` decides."""

    def authorize_task(self, identity: Identity, task_id: str) -> None:
        raise NotFound("nobody sees anything")


class Declaring:
    """A host's authorizer declaring that the owner rule decides (it wraps the built-in)."""

    def __init__(self, inner: HostTaskAuthorizer) -> None:
        self._inner = inner

    decides_by_visibility = True

    def authorize_task(self, identity: Identity, task_id: str) -> None:
        self._inner.authorize_task(identity, task_id)

    def visibility(self, identity: Identity) -> Visibility:
        return self._inner.visibility(identity)


@pytest.fixture(name="world")
def fixture_world() -> tuple[InMemoryHostRepository, CountingClaims]:
    store, clock, ids = InMemoryStore(), SystemClock(), UuidIds()
    host = InMemoryHostRepository(store, clock, ids)
    claims = InMemoryClaimRepository(store, clock, ids)
    task = host.create_task("t", host.create_workspace("alice's", owner_id="alice").id)
    session, _ = host.create_session(task.id)
    question = Question(id="q1", title="T", prompt="?", options=(Option("q1_opt1", "A", "a"),))
    claims.create_bundle(
        pending_id="p-1", session_id=session.id, task_id=task.id, questions=[question], context=""
    )
    return host, CountingClaims(claims)


def test_the_built_in_authorizer_declares_the_capability() -> None:
    authorizer = HostTaskAuthorizer(
        InMemoryHostRepository(InMemoryStore(), SystemClock(), UuidIds())
    )
    assert isinstance(authorizer, VisibilityAuthorizer)
    assert authorizer.decides_by_visibility is True


def test_a_subclass_that_changes_the_decision_loses_it() -> None:
    host = InMemoryHostRepository(InMemoryStore(), SystemClock(), UuidIds())
    assert Narrowed(host).decides_by_visibility is False


@pytest.mark.parametrize(
    ("make", "reads"),
    [
        (HostTaskAuthorizer, ["load_visible_bundle"]),
        (lambda host: Declaring(HostTaskAuthorizer(host)), ["load_visible_bundle"]),
        (Narrowed, ["load_bundle"]),
    ],
)
def test_the_store_judges_only_for_an_authorizer_declaring_it(
    world: tuple[InMemoryHostRepository, CountingClaims], make: Any, reads: list[str]
) -> None:
    host, claims = world
    with pytest.raises(NotFound):
        load_authorized_bundle(claims, make(host), BOB, "p-1")  # type: ignore[arg-type]
    assert claims.reads == reads
