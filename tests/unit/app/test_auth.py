"""The authentication use case: token format and hashing, expiry, revocation, use recording,
browser sessions tied to their token, CSRF tokens, and the request identity variable."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from clarion.adapters.memory import InMemoryStore, InMemoryTokenStore
from clarion.adapters.system import UuidIds
from clarion.app.usecases.auth import (
    Authentication,
    LoginThrottle,
    LoginThrottled,
    current_identity,
    hash_credential,
    identity_bound,
    login_keys,
)
from clarion.domain.errors import NotFound
from clarion.domain.model import Identity
from clarion.ports.testing import ManualClock


@pytest.fixture(name="clock")
def fixture_clock() -> ManualClock:
    return ManualClock(step=timedelta(0))


@pytest.fixture(name="tokens")
def fixture_tokens(clock: ManualClock) -> InMemoryTokenStore:
    return InMemoryTokenStore(InMemoryStore(), clock, UuidIds())


@pytest.fixture(name="auth")
def fixture_auth(tokens: InMemoryTokenStore, clock: ManualClock) -> Authentication:
    return Authentication(
        tokens,
        clock,
        UuidIds(),
        session_ttl=timedelta(hours=1),
        touch_interval=timedelta(minutes=1),
    )


def test_a_token_resolves_to_its_users_scoped_identity_and_only_its_hash_is_kept(
    auth: Authentication, tokens: InMemoryTokenStore
) -> None:
    user = auth.create_user("ann", is_admin=True)
    issued = auth.issue_token(user.id, name="ci")
    assert auth.resolve_bearer(issued.token) == Identity.user(user.id, is_admin=True)
    stored = tokens.find_token(hash_credential(issued.token))
    assert stored is not None
    assert stored.token_hash != issued.token
    assert stored.name == "ci"


def test_tampered_foreign_or_malformed_tokens_resolve_to_nobody(auth: Authentication) -> None:
    user = auth.create_user("ben")
    token = auth.issue_token(user.id).token
    for candidate in (
        token[:-1] + ("A" if token[-1] != "A" else "B"),
        token.replace("clarion_pat_", "kandev_pat_"),
        "clarion_pat_zzzzzzzz_" + token.rsplit("_", 1)[-1],
        "",
        token + " ",
    ):
        assert auth.resolve_bearer(candidate) is None


def test_issuing_for_a_missing_user_is_not_found(auth: Authentication) -> None:
    with pytest.raises(NotFound):
        auth.issue_token("nobody")


def test_a_token_stops_working_when_it_expires_or_is_revoked(
    auth: Authentication, clock: ManualClock
) -> None:
    user = auth.create_user("cal")
    expiring = auth.issue_token(user.id, expires_at=clock.peek() + timedelta(minutes=5))
    revoked = auth.issue_token(user.id)
    assert auth.resolve_bearer(expiring.token) is not None
    clock.advance(timedelta(minutes=5))
    assert auth.resolve_bearer(expiring.token) is None
    assert auth.revoke_token(revoked.record.id)
    assert not auth.revoke_token(revoked.record.id)
    assert auth.resolve_bearer(revoked.token) is None


def test_use_is_recorded_at_most_once_per_touch_interval(
    auth: Authentication, tokens: InMemoryTokenStore, clock: ManualClock
) -> None:
    user = auth.create_user("dee")
    issued = auth.issue_token(user.id)

    def last_used() -> object:
        record = tokens.find_token(issued.record.token_hash)
        assert record is not None
        return record.last_used_at

    assert last_used() is None
    first = clock.peek()
    auth.resolve_bearer(issued.token)
    assert last_used() == first
    clock.advance(timedelta(seconds=59))
    auth.resolve_bearer(issued.token)
    assert last_used() == first
    clock.advance(timedelta(seconds=1))
    auth.resolve_bearer(issued.token)
    assert last_used() == first + timedelta(minutes=1)


def test_a_session_lives_for_its_ttl_never_past_its_token_and_ends_with_it(
    auth: Authentication, clock: ManualClock
) -> None:
    user = auth.create_user("eve")
    short = auth.issue_token(user.id, expires_at=clock.peek() + timedelta(minutes=10))
    session = auth.login(short.token)
    assert session is not None
    assert session.expires_at == clock.peek() + timedelta(minutes=10)
    resolved = auth.resolve_session(session.cookie)
    assert resolved is not None
    assert resolved.identity == Identity.user(user.id)
    assert resolved.csrf_token == session.csrf_token

    long = auth.issue_token(user.id)
    lasting = auth.login(long.token)
    assert lasting is not None
    assert lasting.expires_at == clock.peek() + timedelta(hours=1)
    auth.revoke_token(long.record.id)
    assert auth.resolve_session(lasting.cookie) is None  # the token's revocation ends it
    clock.advance(timedelta(minutes=10))
    assert auth.resolve_session(session.cookie) is None  # expired with its token


def test_logout_ends_only_that_session(auth: Authentication) -> None:
    user = auth.create_user("fay")
    token = auth.issue_token(user.id).token
    first, second = auth.login(token), auth.login(token)
    assert first is not None
    assert second is not None
    assert first.csrf_token != second.csrf_token
    assert auth.logout(first.cookie)
    assert not auth.logout(first.cookie)
    assert auth.resolve_session(first.cookie) is None
    assert auth.resolve_session(second.cookie) is not None
    assert not auth.logout(token)  # a token is not a session


def test_credentials_of_one_kind_never_pass_for_the_other(auth: Authentication) -> None:
    user = auth.create_user("gus")
    token = auth.issue_token(user.id).token
    session = auth.login(token)
    assert session is not None
    assert auth.resolve_session(token) is None
    assert auth.resolve_bearer(session.cookie) is None
    assert auth.login(session.cookie) is None


def test_the_csrf_token_is_bound_to_its_session(auth: Authentication) -> None:
    user = auth.create_user("hal")
    session = auth.login(auth.issue_token(user.id).token)
    assert session is not None
    assert Authentication.csrf_matches(session.cookie, session.csrf_token)
    assert not Authentication.csrf_matches(session.cookie, "")
    assert not Authentication.csrf_matches(session.cookie, session.csrf_token.upper())
    assert session.cookie not in repr(session)


def test_the_request_identity_is_bound_for_a_block_and_restored_after() -> None:
    assert current_identity() is None
    outer, inner = Identity.user("u1"), Identity.synthetic_admin()
    with identity_bound(outer):
        assert current_identity() == outer
        with identity_bound(inner):
            assert current_identity() == inner
        assert current_identity() == outer
    assert current_identity() is None


def test_a_token_named_like_a_session_is_an_ordinary_token(auth: Authentication) -> None:
    """Issue 16 item 8: sessions are told apart by their kind, never by a name prefix."""
    user = auth.create_user("ida")
    issued = auth.issue_token(user.id, name="session:" + "0" * 64)
    assert auth.resolve_bearer(issued.token) == Identity.user(user.id)
    session = auth.login(issued.token)
    assert session is not None
    assert auth.resolve_session(session.cookie) is not None
    assert auth.resolve_session(issued.token) is None
    assert not auth.logout(issued.token)
    assert auth.resolve_bearer(issued.token) is not None


def test_a_deactivated_users_tokens_and_sessions_stop_and_others_do_not(
    auth: Authentication,
) -> None:
    ann, ben = auth.create_user("ann"), auth.create_user("ben")
    token, other = auth.issue_token(ann.id).token, auth.issue_token(ben.id).token
    session = auth.login(token)
    assert session is not None
    assert auth.deactivate_user(ann.id)
    assert not auth.deactivate_user(ann.id)
    assert auth.resolve_bearer(token) is None
    assert auth.resolve_session(session.cookie) is None
    assert auth.login(token) is None
    assert auth.resolve_bearer(other) == Identity.user(ben.id)
    with pytest.raises(NotFound):
        auth.deactivate_user("nobody")


def test_ended_sessions_are_purged_at_login_and_on_demand(
    auth: Authentication, tokens: InMemoryTokenStore, clock: ManualClock
) -> None:
    user = auth.create_user("jo")
    token = auth.issue_token(user.id)
    expiring, logged_out = auth.login(token.token), auth.login(token.token)
    assert expiring is not None
    assert logged_out is not None
    assert auth.logout(logged_out.cookie)
    clock.advance(timedelta(hours=1))  # the session TTL: ``expiring`` has expired
    kinds = sorted(t.kind for t in auth.list_tokens(user.id))
    assert kinds == ["pat", "session", "session"]
    live = auth.login(token.token)  # purges the two ended sessions first
    assert live is not None
    stored = tokens.find_token(hash_credential(live.cookie))
    assert stored is not None
    assert [t.id for t in auth.list_tokens(user.id)] == [token.record.id, stored.id]
    clock.advance(timedelta(hours=1))
    assert auth.purge_sessions() == 1
    assert [t.id for t in auth.list_tokens(user.id)] == [token.record.id]
    assert auth.resolve_bearer(token.token) is not None  # tokens are never purged


class CountingTokenStore(InMemoryTokenStore):
    """The in-memory store, counting the reads authentication makes."""

    reads: list[str]

    def find_token_and_user(self, token_hash: str) -> Any:
        self.reads.append("find_token_and_user")
        return super().find_token_and_user(token_hash)

    def find_token_with_parent(self, token_hash: str) -> Any:
        self.reads.append("find_token_with_parent")
        return super().find_token_with_parent(token_hash)

    def get_token(self, token_id: str) -> Any:
        self.reads.append("get_token")
        return super().get_token(token_id)

    def get_user(self, user_id: str) -> Any:
        self.reads.append("get_user")
        return super().get_user(user_id)


def test_a_bearer_token_and_a_session_cookie_each_resolve_in_one_read(clock: ManualClock) -> None:
    """Issue 15: authenticating a personal access token is one read, and so is resolving a
    browser session (the session, its user, its parent token and that token's user)."""
    tokens = CountingTokenStore(InMemoryStore(), clock, UuidIds())
    tokens.reads = []
    auth = Authentication(tokens, clock, UuidIds(), touch_interval=timedelta(hours=1))
    user = auth.create_user("ann")
    issued = auth.issue_token(user.id)
    session = auth.login(issued.token)
    assert session is not None
    tokens.reads.clear()
    assert auth.resolve_bearer(issued.token) == Identity.user(user.id)
    assert tokens.reads == ["find_token_and_user"]
    tokens.reads.clear()
    resolved = auth.resolve_session(session.cookie)
    assert resolved is not None
    assert resolved.identity == Identity.user(user.id)
    assert tokens.reads == ["find_token_with_parent"]


class _Ticks:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_login_throttle_admits_again_once_the_oldest_failure_leaves_the_window() -> None:
    """#29 S11: per key, ``max_failures`` failures within the window refuse further attempts
    until the oldest is a window old; the refusal says how long to wait."""
    ticks = _Ticks()
    throttle = LoginThrottle(max_failures=3, window_s=60, clock=ticks)
    keys = login_keys("clarion_pat_0123abcd_" + "x" * 43, "10.0.0.1")
    assert keys == ("client:10.0.0.1", "token:0123abcd")
    for step in range(3):
        throttle.check(keys)
        throttle.failed(keys)
        ticks.now += 5 * (step + 1)  # failures at 1000, 1005, 1015
    with pytest.raises(LoginThrottled) as refused:
        throttle.check(keys)  # at 1030
    assert refused.value.retry_after_s == 30
    throttle.check(("client:10.0.0.9",))  # another address is admitted
    ticks.now = 1060.5
    throttle.check(keys)  # the failure at 1000 has left the window
    throttle.failed(keys)
    with pytest.raises(LoginThrottled) as again:
        throttle.check(keys)
    assert again.value.retry_after_s == 5  # until the failure at 1005 leaves (4.5 s)


def test_the_login_throttle_remembers_a_bounded_number_of_keys() -> None:
    ticks = _Ticks()
    throttle = LoginThrottle(max_failures=1, window_s=60, max_keys=2, clock=ticks)
    for address in ("a", "b", "c"):
        throttle.failed((f"client:{address}",))
    throttle.check(("client:a",))  # forgotten: the least recently failed key
    with pytest.raises(LoginThrottled):
        throttle.check(("client:c",))


def test_login_bounds_the_users_sessions_and_counts_failures() -> None:
    """#29 S11: the oldest browser sessions end beyond ``max_sessions``; a failed login
    counts against its client and token id, and a throttled login does not check the
    token."""
    throttle = LoginThrottle(max_failures=2, window_s=60, clock=_Ticks())
    clock = ManualClock()  # advancing: the sessions' ages differ
    tokens = InMemoryTokenStore(InMemoryStore(), clock, UuidIds())
    auth = Authentication(tokens, clock, UuidIds(), max_sessions=2, throttle=throttle)
    user = auth.create_user("ann")
    token = auth.issue_token(user.id).token
    sessions = [auth.login(token, client="10.0.0.1") for _ in range(3)]
    assert all(session is not None for session in sessions)
    assert [
        auth.resolve_session(session.cookie) is not None for session in sessions if session
    ] == [False, True, True]
    for _ in range(2):
        assert auth.login("clarion_pat_nope", client="10.0.0.2") is None
    with pytest.raises(LoginThrottled):
        auth.login(token, client="10.0.0.2")
    assert auth.login(token, client="10.0.0.3") is not None
