"""Contract suite for :class:`clarion.ports.TokenStore`."""

from __future__ import annotations

import hashlib
from datetime import timedelta

import pytest

from clarion.domain.errors import NotFound
from clarion.ports.testing.world import ContractWorld


def token_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class TokenStoreContract:
    """Users and personal access tokens. Provide a ``world`` fixture."""

    def test_users_get_unique_ids_and_read_back(self, world: ContractWorld) -> None:
        admin = world.tokens.create_user("ada", is_admin=True)
        member = world.tokens.create_user("bob")
        assert admin.id != member.id
        assert admin.is_admin
        assert not member.is_admin
        assert member.active
        assert world.tokens.get_user(admin.id) == admin
        assert world.tokens.get_user("nope") is None

    def test_a_token_is_found_only_by_its_hash(self, world: ContractWorld) -> None:
        user = world.tokens.create_user("ada")
        secret = "clarion_pat_0123abcd_secret"
        stored = world.tokens.create_token(
            user.id, token_id="0123abcd", token_hash=token_hash(secret), name="laptop"
        )
        assert (stored.user_id, stored.name, stored.id) == (user.id, "laptop", "0123abcd")
        assert world.tokens.find_token(token_hash(secret)) == stored
        assert world.tokens.find_token(secret) is None
        assert world.tokens.find_token(token_hash(secret + "x")) is None
        assert world.tokens.find_token_and_user(token_hash(secret)) == (stored, user)
        assert world.tokens.find_token_and_user(token_hash(secret + "x")) is None

    def test_a_token_needs_an_existing_user(self, world: ContractWorld) -> None:
        with pytest.raises(NotFound):
            world.tokens.create_token("nope", token_id="t1", token_hash=token_hash("t1"))

    def test_a_revoked_token_stays_findable_but_unusable(self, world: ContractWorld) -> None:
        user = world.tokens.create_user("ada")
        world.tokens.create_token(user.id, token_id="t1", token_hash=token_hash("t1"))
        assert world.tokens.revoke_token("t1")
        assert not world.tokens.revoke_token("t1")
        assert not world.tokens.revoke_token("nope")
        found = world.tokens.find_token(token_hash("t1"))
        assert found is not None
        assert found.revoked_at is not None
        assert not found.usable_at(world.clock.peek())

    def test_an_expiring_token_is_usable_until_it_expires(self, world: ContractWorld) -> None:
        user = world.tokens.create_user("ada")
        expires = world.clock.peek() + timedelta(hours=1)
        world.tokens.create_token(
            user.id, token_id="t1", token_hash=token_hash("t1"), expires_at=expires
        )
        found = world.tokens.find_token(token_hash("t1"))
        assert found is not None
        assert found.expires_at == expires
        assert found.usable_at(expires - timedelta(seconds=1))
        assert not found.usable_at(expires)

    def test_touch_records_last_use(self, world: ContractWorld) -> None:
        user = world.tokens.create_user("ada")
        world.tokens.create_token(user.id, token_id="t1", token_hash=token_hash("t1"))
        used = world.clock.peek() + timedelta(minutes=3)
        world.tokens.touch_token("t1", used)
        world.tokens.touch_token("nope", used)
        found = world.tokens.find_token(token_hash("t1"))
        assert found is not None
        assert found.last_used_at == used
