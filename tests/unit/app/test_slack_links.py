"""Linking Slack accounts to users (issue #18), a use case of its own (#32: no longer in the
composition root): only a Slack member id, only an active user, and links read back."""

from __future__ import annotations

import pytest

from clarion.adapters.memory import InMemoryNotificationStore, InMemoryStore, InMemoryTokenStore
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.slack import PROVIDER, SlackLinks, is_slack_user_id
from clarion.domain.errors import ValidationError


@pytest.fixture(name="store")
def fixture_store() -> InMemoryStore:
    return InMemoryStore()


@pytest.fixture(name="users")
def fixture_users(store: InMemoryStore) -> InMemoryTokenStore:
    return InMemoryTokenStore(store, SystemClock(), UuidIds())


@pytest.fixture(name="links")
def fixture_links(store: InMemoryStore, users: InMemoryTokenStore) -> SlackLinks:
    return SlackLinks(InMemoryNotificationStore(store, SystemClock(), UuidIds()), users)


@pytest.mark.parametrize("value", ["U0ALICE", "W0123ABCD", "U12"])
def test_slack_member_ids_are_accepted(value: str) -> None:
    assert is_slack_user_id(value)


@pytest.mark.parametrize("value", ["", "U", "U1", "alice", "u0alice", "X0ALICE", "U0-ALICE"])
def test_anything_else_is_not_a_slack_member_id(value: str) -> None:
    assert not is_slack_user_id(value)


def test_a_link_is_stored_read_back_and_removed(
    links: SlackLinks, users: InMemoryTokenStore
) -> None:
    alice = users.create_user("alice")
    link = links.link(alice.id, "  U0ALICE ")
    assert (link.provider, link.external_id, link.user_id) == (PROVIDER, "U0ALICE", alice.id)
    assert [(found.external_id, found.user_id) for found in links.links()] == [
        ("U0ALICE", alice.id)
    ]
    assert links.unlink(" U0ALICE") is True
    assert links.unlink("U0ALICE") is False
    assert links.links() == ()


def test_not_a_slack_id_is_refused_naming_the_field(
    links: SlackLinks, users: InMemoryTokenStore
) -> None:
    alice = users.create_user("alice")
    with pytest.raises(ValidationError, match="not a Slack user id: 'alice'") as caught:
        links.link(alice.id, "alice")
    assert caught.value.field == "slack_user_id"
    assert links.links() == ()


def test_an_unknown_or_deactivated_user_is_refused(
    links: SlackLinks, users: InMemoryTokenStore
) -> None:
    with pytest.raises(ValidationError, match="no active user 'nobody'") as caught:
        links.link("nobody", "U0ALICE")
    assert caught.value.field == "user_id"
    bob = users.create_user("bob")
    users.deactivate_user(bob.id)
    with pytest.raises(ValidationError, match=f"no active user '{bob.id}'"):
        links.link(bob.id, "U0BOB")
    assert links.links() == ()
