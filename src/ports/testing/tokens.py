"""Contract suite for :class:`clarion.ports.TokenStore`."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta

import pytest

from clarion.domain.errors import NotFound
from clarion.domain.host import LOGIN_SESSION, PERSONAL_ACCESS_TOKEN
from clarion.ports.testing.world import ContractWorld
from clarion.ports.tokens import CredentialLookup


def token_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


class TokenStoreContract:
    """Users, personal access tokens and login sessions. Provide a ``world`` fixture."""

    def test_users_get_unique_ids_and_read_back(self, world: ContractWorld) -> None:
        admin = world.tokens.create_user("ada", is_admin=True)
        member = world.tokens.create_user("bob")
        assert admin.id != member.id
        assert admin.is_admin
        assert not member.is_admin
        assert member.active
        assert world.tokens.get_user(admin.id) == admin
        assert world.tokens.get_user("nope") is None

    def test_users_are_listed_oldest_first_deactivated_ones_included(
        self, world: ContractWorld
    ) -> None:
        assert world.tokens.list_users() == ()
        ada = world.tokens.create_user("ada", is_admin=True)
        world.clock.advance(timedelta(seconds=1))
        bob = world.tokens.create_user("bob")
        world.tokens.deactivate_user(bob.id)
        listed = world.tokens.list_users()
        assert [user.id for user in listed] == [ada.id, bob.id]
        assert [(user.name, user.is_admin, user.active) for user in listed] == [
            ("ada", True, True),
            ("bob", False, False),
        ]

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

    def test_a_session_is_found_with_its_parent_token_and_users(self, world: ContractWorld) -> None:
        user = world.tokens.create_user("ada")
        parent = world.tokens.create_token(user.id, token_id="pat1", token_hash=token_hash("p"))
        session = world.tokens.create_token(
            user.id,
            token_id="ses1",
            token_hash=token_hash("s"),
            kind=LOGIN_SESSION,
            parent_id=parent.id,
        )
        found = world.tokens.find_token_with_parent(token_hash("s"))
        assert found == CredentialLookup(token=session, user=user, parent=parent, parent_user=user)
        alone = world.tokens.find_token_with_parent(token_hash("p"))  # a PAT has no parent
        assert alone == CredentialLookup(token=parent, user=user)
        assert world.tokens.find_token_with_parent(token_hash("x")) is None

    def test_a_session_whose_parent_is_gone_is_found_without_it(self, world: ContractWorld) -> None:
        user = world.tokens.create_user("ada")
        world.tokens.create_token(
            user.id,
            token_id="ses1",
            token_hash=token_hash("s"),
            kind=LOGIN_SESSION,
            parent_id="no-such-token",
        )
        found = world.tokens.find_token_with_parent(token_hash("s"))
        assert found is not None
        assert (found.user, found.parent, found.parent_user) == (user, None, None)

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

    def test_kind_and_parent_are_stored_as_given_whatever_the_name(
        self, world: ContractWorld
    ) -> None:
        user = world.tokens.create_user("ada")
        pat = world.tokens.create_token(
            user.id, token_id="t1", token_hash=token_hash("t1"), name="session:" + "0" * 64
        )
        session = world.tokens.create_token(
            user.id, token_id="s1", token_hash=token_hash("s1"), kind=LOGIN_SESSION, parent_id="t1"
        )
        assert (pat.kind, pat.parent_id) == (PERSONAL_ACCESS_TOKEN, "")
        assert (session.kind, session.parent_id) == (LOGIN_SESSION, "t1")
        assert world.tokens.find_token(token_hash("t1")) == pat
        assert world.tokens.find_token(token_hash("s1")) == session
        assert world.tokens.get_token("s1") == session
        assert world.tokens.get_token("nope") is None

    def test_a_users_tokens_are_listed_oldest_first_with_every_kind_and_state(
        self, world: ContractWorld
    ) -> None:
        ada = world.tokens.create_user("ada")
        bob = world.tokens.create_user("bob")
        first = world.tokens.create_token(ada.id, token_id="a1", token_hash=token_hash("a1"))
        world.tokens.create_token(bob.id, token_id="b1", token_hash=token_hash("b1"))
        session = world.tokens.create_token(
            ada.id, token_id="a2", token_hash=token_hash("a2"), kind=LOGIN_SESSION, parent_id="a1"
        )
        world.tokens.revoke_token("a1")
        revoked = world.tokens.get_token("a1")
        assert world.tokens.list_tokens(ada.id) == (revoked, session)
        assert first.revoked_at is None
        assert [t.id for t in world.tokens.list_tokens(bob.id)] == ["b1"]
        assert world.tokens.list_tokens(world.tokens.create_user("cal").id) == ()
        with pytest.raises(NotFound):
            world.tokens.list_tokens("nope")

    def test_a_deactivated_user_reads_back_inactive_once(self, world: ContractWorld) -> None:
        ada = world.tokens.create_user("ada", is_admin=True)
        bob = world.tokens.create_user("bob")
        assert world.tokens.deactivate_user(ada.id)
        assert not world.tokens.deactivate_user(ada.id)
        found = world.tokens.get_user(ada.id)
        assert found is not None
        assert (found.active, found.is_admin, found.name) == (False, True, "ada")
        assert world.tokens.get_user(bob.id) == bob
        with pytest.raises(NotFound):
            world.tokens.deactivate_user("nope")

    def test_purging_deletes_only_sessions_that_can_never_work_again(
        self, world: ContractWorld
    ) -> None:
        user = world.tokens.create_user("ada")
        now = world.clock.peek()
        soon, past = now + timedelta(minutes=5), now - timedelta(seconds=1)

        def add(token_id: str, kind: str, expires_at: datetime | None = None) -> None:
            world.tokens.create_token(
                user.id,
                token_id=token_id,
                token_hash=token_hash(token_id),
                kind=kind,
                parent_id="" if kind == PERSONAL_ACCESS_TOKEN else "pat-live",
                expires_at=expires_at,
            )

        add("pat-live", PERSONAL_ACCESS_TOKEN)
        add("pat-expired", PERSONAL_ACCESS_TOKEN, past)
        add("pat-revoked", PERSONAL_ACCESS_TOKEN)
        add("ses-live", LOGIN_SESSION, soon)
        add("ses-expired", LOGIN_SESSION, past)
        add("ses-expiring-now", LOGIN_SESSION, now)
        add("ses-logged-out", LOGIN_SESSION, soon)
        world.tokens.revoke_token("pat-revoked")
        world.tokens.revoke_token("ses-logged-out")
        assert world.tokens.purge_sessions(now) == 3
        kept = {t.id for t in world.tokens.list_tokens(user.id)}
        assert kept == {"pat-live", "pat-expired", "pat-revoked", "ses-live"}
        assert world.tokens.find_token(token_hash("ses-expired")) is None
        assert world.tokens.purge_sessions(now) == 0
        assert world.tokens.purge_sessions(soon) == 1
        assert {t.id for t in world.tokens.list_tokens(user.id)} == kept - {"ses-live"}

    def test_a_login_session_ends_the_users_oldest_live_sessions_beyond_the_bound(
        self, world: ContractWorld
    ) -> None:
        """#29 S11: at most ``keep`` live sessions per user, the new one always among them;
        ended, expired and other users' sessions and personal access tokens are untouched."""
        ada, bob = world.tokens.create_user("ada"), world.tokens.create_user("bob")
        parent = world.tokens.create_token(ada.id, token_id="pat", token_hash=token_hash("pat"))
        soon = world.clock.peek() + timedelta(hours=1)
        world.tokens.create_token(
            ada.id,
            token_id="ses-expired",
            token_hash=token_hash("ses-expired"),
            kind=LOGIN_SESSION,
            parent_id=parent.id,
            expires_at=world.clock.peek(),
        )
        world.tokens.create_token(
            bob.id, token_id="bob-ses", token_hash=token_hash("bob-ses"), kind=LOGIN_SESSION
        )
        ended = []
        for n in range(5):
            session, count = world.tokens.create_login_session(
                ada.id,
                token_id=f"ses-{n}",
                token_hash=token_hash(f"ses-{n}"),
                parent_id=parent.id,
                expires_at=soon,
                keep=3,
            )
            assert (session.kind, session.parent_id, session.expires_at) == (
                LOGIN_SESSION,
                parent.id,
                soon,
            )
            assert world.tokens.find_token(token_hash(f"ses-{n}")) == session
            ended.append(count)
        assert ended == [0, 0, 0, 1, 1]
        now = world.clock.peek()
        live = {t.id for t in world.tokens.list_tokens(ada.id) if t.usable_at(now)}
        assert live == {"pat", "ses-2", "ses-3", "ses-4"}
        bobs = world.tokens.get_token("bob-ses")
        assert bobs is not None
        assert bobs.revoked_at is None
        with pytest.raises(NotFound):
            world.tokens.create_login_session(
                "nobody", token_id="x", token_hash="x", parent_id="", expires_at=None, keep=1
            )

    def test_a_bound_of_one_keeps_only_the_newest_login_session(self, world: ContractWorld) -> None:
        ada = world.tokens.create_user("ada")
        for n in range(3):
            world.tokens.create_login_session(
                ada.id,
                token_id=f"s{n}",
                token_hash=token_hash(f"s{n}"),
                parent_id="",
                expires_at=None,
                keep=1,
            )
        now = world.clock.peek()
        assert [t.id for t in world.tokens.list_tokens(ada.id) if t.usable_at(now)] == ["s2"]
