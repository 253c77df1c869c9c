"""Who is calling: personal access tokens, the browser session cookie with its CSRF guard,
the 401 shape, and the synthetic identity when auth is disabled (A4)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.testclient import TestClient

from clarion.adapters.rest import create_rest_app
from clarion.app.usecases.auth import current_identity, hash_credential
from tests.integration.rest.harness import LOCAL_URL, RestWorld, ok

AUTH_REQUIRED = b'{"error":"authentication required"}'
CSRF_FAILED = b'{"error":"CSRF token missing or invalid"}'
enabled_only = pytest.mark.parametrize("auth_enabled", [True], ids=["auth-enabled"])


def login(client: TestClient, token: str) -> str:
    """Sign in with ``token``; the CSRF token the session's writes need."""
    body = ok(client.post("/api/v1/auth/login", json={"token": token}))
    csrf = body["csrf_token"]
    assert isinstance(csrf, str)
    assert csrf
    return csrf


@enabled_only
@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "Bearer",
        "Bearer clarion_pat_0000000_short",
        "Bearer clarion_pat_deadbeef_" + "A" * 43,
        "Basic dXNlcjpwYXNz",
    ],
    ids=["none", "empty", "malformed", "unknown", "other-scheme"],
)
def test_no_identity_gets_401_with_a_bearer_challenge(
    client: TestClient, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for method, path in (
        ("GET", "/api/v1/tasks"),
        ("POST", "/api/v1/clarification/x/respond"),
        ("GET", "/api/v1/auth/me"),
        ("GET", "/api/v1/no-such-route"),
    ):
        response = client.request(method, path, headers=headers)
        assert response.status_code == 401
        assert response.content == AUTH_REQUIRED
        assert response.headers["www-authenticate"] == "Bearer"


@enabled_only
def test_public_paths_need_no_identity(client: TestClient) -> None:
    assert ok(client.get("/healthz")) == {"status": "ok", "database": "ok"}
    assert ok(client.get("/openapi.json"))["openapi"] == "3.1.0"


@enabled_only
def test_expired_and_revoked_tokens_are_refused(client: TestClient, world: RestWorld) -> None:
    user = world.authentication.create_user("carol")
    past = datetime.now(UTC) - timedelta(seconds=1)
    expired = world.authentication.issue_token(user.id, expires_at=past)
    revoked = world.authentication.issue_token(user.id)
    assert world.authentication.revoke_token(revoked.record.id)
    for issued in (expired, revoked):
        response = client.get("/api/v1/tasks", headers={"Authorization": f"Bearer {issued.token}"})
        assert response.status_code == 401


@enabled_only
def test_a_token_is_stored_hashed_and_its_use_is_recorded(
    client: TestClient, world: RestWorld
) -> None:
    user = world.authentication.create_user("dave")
    issued = world.authentication.issue_token(user.id, name="laptop")
    assert issued.token.startswith("clarion_pat_")
    public = issued.token.removeprefix("clarion_pat_").split("_", 1)[0]
    assert len(public) == 8
    assert set(public) <= set("0123456789abcdef")
    assert issued.record.token_hash == hash_credential(issued.token)
    assert issued.token not in repr(issued)
    assert world.ports.tokens.find_token(hash_credential(issued.token)) is not None
    me = ok(client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {issued.token}"}))
    assert me == {
        "user_id": user.id,
        "display_name": "dave",
        "is_admin": False,
        "auth_enabled": True,
        "authenticated_by": "token",
        "csrf_token": "",
    }
    record = world.ports.tokens.find_token(hash_credential(issued.token))
    assert record is not None
    assert record.last_used_at is not None


@enabled_only
def test_login_sets_an_httponly_strict_cookie_and_cookie_writes_need_the_csrf_token(
    client: TestClient, world: RestWorld
) -> None:
    user_id, headers = world.bearer("erin")
    token = headers["Authorization"].removeprefix("Bearer ")
    response = client.post("/api/v1/auth/login", json={"token": token})
    assert response.status_code == 200
    cookies = response.headers.get_list("set-cookie")
    session = next(c for c in cookies if c.startswith("clarion_session="))
    csrf_cookie = next(c for c in cookies if c.startswith("clarion_csrf="))
    for attribute in ("HttpOnly", "SameSite=strict", "Path=/"):
        assert attribute in session
    assert "HttpOnly" not in csrf_cookie
    assert "SameSite=strict" in csrf_cookie
    csrf = response.json()["csrf_token"]
    assert response.json()["user_id"] == user_id
    assert response.json()["display_name"] == "erin"
    assert f"clarion_csrf={csrf}" in csrf_cookie

    # Reads need only the cookie; /me hands the page its CSRF token.
    me = ok(client.get("/api/v1/auth/me"))
    assert (me["authenticated_by"], me["csrf_token"]) == ("session", csrf)
    # Writes need the token in the header too.
    body = {"name": "cookie workspace"}
    assert client.post("/api/v1/workspaces", json=body).content == CSRF_FAILED
    wrong = client.post("/api/v1/workspaces", json=body, headers={"X-CSRF-Token": "0" * 64})
    assert (wrong.status_code, wrong.content) == (403, CSRF_FAILED)
    created = ok(client.post("/api/v1/workspaces", json=body, headers={"X-CSRF-Token": csrf}), 201)
    assert created["owner_id"] == user_id


@enabled_only
def test_the_two_credentials_are_not_interchangeable(client: TestClient, world: RestWorld) -> None:
    _, headers = world.bearer("frank")
    token = headers["Authorization"].removeprefix("Bearer ")
    login(client, token)
    session = client.cookies["clarion_session"]
    client.cookies.clear()
    as_bearer = client.get("/api/v1/tasks", headers={"Authorization": f"Bearer {session}"})
    assert as_bearer.status_code == 401
    client.cookies.set("clarion_session", token)
    assert client.get("/api/v1/tasks").status_code == 401


@enabled_only
def test_a_bearer_header_is_judged_alone_even_beside_a_valid_cookie(
    client: TestClient, world: RestWorld
) -> None:
    _, headers = world.bearer("gina")
    login(client, headers["Authorization"].removeprefix("Bearer "))
    assert client.get("/api/v1/tasks").status_code == 200
    bad = client.get("/api/v1/tasks", headers={"Authorization": "Bearer clarion_pat_nope"})
    assert bad.status_code == 401


@enabled_only
def test_logout_ends_the_session_and_revoking_the_token_ends_its_sessions(
    client: TestClient, world: RestWorld
) -> None:
    _, headers = world.bearer("hank")
    token = headers["Authorization"].removeprefix("Bearer ")
    csrf = login(client, token)
    session = client.cookies["clarion_session"]
    assert client.post("/api/v1/auth/logout").content == CSRF_FAILED
    assert ok(client.post("/api/v1/auth/logout", headers={"X-CSRF-Token": csrf})) == {
        "success": True
    }
    client.cookies.set("clarion_session", session)
    assert client.get("/api/v1/tasks").status_code == 401

    client.cookies.clear()
    login(client, token)
    assert client.get("/api/v1/tasks").status_code == 200
    record = world.ports.tokens.find_token(hash_credential(token))
    assert record is not None
    world.authentication.revoke_token(record.id)
    assert client.get("/api/v1/tasks").status_code == 401


@enabled_only
def test_login_refuses_bad_tokens_and_non_json_bodies(client: TestClient, world: RestWorld) -> None:
    refused = client.post("/api/v1/auth/login", json={"token": "clarion_pat_nope"})
    assert refused.status_code == 401
    assert refused.json() == {"error": "invalid or expired token"}
    _, headers = world.bearer("ivy")
    token = headers["Authorization"].removeprefix("Bearer ")
    form = client.post(
        "/api/v1/auth/login",
        content=f'{{"token": "{token}"}}',
        headers={"Content-Type": "text/plain"},
    )
    assert form.status_code == 415
    assert "application/json" in form.json()["error"]
    assert "clarion_session" not in form.headers.get("set-cookie", "")


def test_auth_disabled_gives_every_request_the_synthetic_unscoped_identity() -> None:
    world = RestWorld.build(auth_enabled=False)
    with TestClient(world.app, base_url=LOCAL_URL) as client:
        for headers in ({}, {"Authorization": "Bearer clarion_pat_garbage"}):
            me = ok(client.get("/api/v1/auth/me", headers=headers))
            assert me == {
                "user_id": "clarion:synthetic",
                "display_name": "anonymous (auth disabled)",
                "is_admin": True,
                "auth_enabled": False,
                "authenticated_by": "disabled",
                "csrf_token": "",
            }


def test_the_identity_is_published_once_through_current_identity_and_only_under_api(
    auth_enabled: bool,
) -> None:
    """A host's route under ``/api/`` reads the caller from :func:`current_identity` (the one
    channel); a path outside it (assets, ``/healthz``, MCP, which authenticates itself) is not
    authenticated at all, whatever credentials it carries."""
    world = RestWorld.build(auth_enabled=auth_enabled)

    async def whoami(request: Request) -> Response:
        identity = current_identity()
        return JSONResponse({"user_id": identity.user_id if identity else None})

    app = create_rest_app(
        world.services,
        auth_enabled=auth_enabled,
        authentication=world.authentication,
        event_source=world.bus,
        extra_routes=[Route("/api/host/whoami", whoami), Route("/assets/whoami", whoami)],
    )
    user_id, headers = world.bearer("jo")
    with TestClient(app, base_url=LOCAL_URL) as client:
        expected = user_id if auth_enabled else "clarion:synthetic"
        assert ok(client.get("/api/host/whoami", headers=headers)) == {"user_id": expected}
        assert ok(client.get("/assets/whoami", headers=headers)) == {"user_id": None}


@enabled_only
def test_over_https_the_cookies_take_the_host_prefix_and_only_those_are_read(
    world: RestWorld,
) -> None:
    """A ``__Host-`` cookie is refused by the browser unless this origin set it over https
    with ``Secure`` and ``Path=/`` and no ``Domain``: nobody else can plant a session."""
    _, headers = world.bearer("hana")
    token = headers["Authorization"].removeprefix("Bearer ")
    with TestClient(world.app, base_url="https://127.0.0.1") as https:
        response = https.post("/api/v1/auth/login", json={"token": token})
        assert response.status_code == 200
        cookies = response.headers.get_list("set-cookie")
        session = next(c for c in cookies if c.startswith("__Host-clarion_session="))
        csrf_cookie = next(c for c in cookies if c.startswith("__Host-clarion_csrf="))
        for cookie in (session, csrf_cookie):
            assert "Secure" in cookie
            assert "Path=/" in cookie
            assert "Domain" not in cookie
        assert not any(c.startswith("clarion_") for c in cookies)
        assert ok(https.get("/api/v1/auth/me"))["authenticated_by"] == "session"
        value = https.cookies["__Host-clarion_session"]
        csrf = response.json()["csrf_token"]

        https.cookies.clear()
        https.cookies.set("clarion_session", value)  # the unprefixed name is not read over https
        assert https.get("/api/v1/auth/me").status_code == 401

        https.cookies.clear()
        https.cookies.set("__Host-clarion_session", value)
        logout = https.post("/api/v1/auth/logout", headers={"X-CSRF-Token": csrf})
        assert logout.status_code == 200
        cleared = logout.headers.get_list("set-cookie")
        assert any(c.startswith('__Host-clarion_session=""') for c in cleared), cleared
    with TestClient(world.app, base_url=LOCAL_URL) as plain:
        plain.cookies.set("__Host-clarion_session", value)  # nor the prefixed one over http
        assert plain.get("/api/v1/auth/me").status_code == 401
