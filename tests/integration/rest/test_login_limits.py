"""#29 S11: logins are bounded and throttled — a user holds at most
``CLARION_MAX_LOGIN_SESSIONS`` live browser sessions (the oldest end), and after
``CLARION_MAX_LOGIN_FAILURES`` failed logins from one client address or with one token id,
login answers 429 with ``Retry-After`` without checking the token."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.limits import Limits
from tests.integration.rest.harness import LOCAL_URL

LOGIN = "/api/v1/auth/login"
ME = "/api/v1/auth/me"


@pytest.fixture(name="clarion")
def fixture_clarion() -> Iterator[Clarion]:
    limits = Limits(max_login_sessions=2, max_login_failures=3, login_failure_window_s=600)
    clarion = build_clarion(
        Settings(database_url="memory://", auth_enabled=True, live_delivery="memory", limits=limits)
    )
    # One client runs the application's lifespan; the others (other addresses) share it.
    with TestClient(clarion.asgi_app, base_url=LOCAL_URL):
        yield clarion
    clarion.close()


def _client(clarion: Clarion, address: str) -> TestClient:
    """A client from ``address`` (not entered: the fixture's client runs the lifespan)."""
    return TestClient(clarion.asgi_app, base_url=LOCAL_URL, client=(address, 40000))


def _token(clarion: Clarion, name: str) -> str:
    user = clarion.authentication.create_user(name)
    return clarion.authentication.issue_token(user.id).token


def test_a_user_holds_at_most_the_bound_of_live_sessions_the_oldest_end(
    clarion: Clarion,
) -> None:
    token = _token(clarion, "ann")
    client = _client(clarion, "10.0.0.1")
    cookies = []
    for _ in range(4):
        response = client.post(LOGIN, json={"token": token})
        assert response.status_code == 200, response.text
        cookies.append(response.cookies["clarion_session"])
        client.cookies.clear()
    status = []
    for cookie in cookies:
        client.cookies.set("clarion_session", cookie)
        status.append(client.get(ME).status_code)
        client.cookies.clear()
    assert status == [401, 401, 200, 200]


def test_failed_logins_from_one_client_are_throttled_with_retry_after(clarion: Clarion) -> None:
    token = _token(clarion, "ann")
    bogus = "clarion_pat_0badc0de_" + "A" * 43
    attacker, other = _client(clarion, "10.0.0.2"), _client(clarion, "10.0.0.3")
    for _ in range(3):
        assert attacker.post(LOGIN, json={"token": bogus}).status_code == 401
    refused = attacker.post(LOGIN, json={"token": token})  # even the right token
    assert refused.status_code == 429, refused.text
    assert int(refused.headers["retry-after"]) >= 1
    assert "too many failed logins" in refused.json()["error"]
    assert "clarion_session" not in refused.headers.get("set-cookie", "")
    # Another client address is not affected.
    assert other.post(LOGIN, json={"token": token}).status_code == 200


def test_failed_logins_with_one_token_id_are_throttled_from_every_address(
    clarion: Clarion,
) -> None:
    token = _token(clarion, "ann")
    token_id = token.removeprefix("clarion_pat_")[:8]
    guess = f"clarion_pat_{token_id}_" + "B" * 43  # the right id, a wrong secret
    for n in range(3):
        client = _client(clarion, f"10.0.1.{n}")
        assert client.post(LOGIN, json={"token": guess}).status_code == 401
    client = _client(clarion, "10.0.2.1")
    refused = client.post(LOGIN, json={"token": token})
    assert refused.status_code == 429
    assert int(refused.headers["retry-after"]) >= 1
    # Bearer use of the token is not a login and is not throttled.
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get(ME, headers=headers).status_code == 200
