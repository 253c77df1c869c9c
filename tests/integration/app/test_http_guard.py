"""The one HTTP gate of a composed server (issue #14): DNS rebinding, cross-site writes and
non-JSON bodies are refused on every route family, in both auth modes; loopback and the
configured host names are served; API answers are never cached."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.errors import ValidationError

LOCAL = "127.0.0.1:8765"
FOREIGN_HOST = "attacker.example:8765"
FOREIGN_ORIGIN = "http://attacker.example:8765"
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}

# (method, path, JSON body or None): one request of every route family.
READS: list[tuple[str, str, Any]] = [
    ("GET", "/api/v1/clarification/pending", None),
    ("GET", "/api/v1/workspaces", None),
    ("GET", "/api/v1/events", None),
    ("GET", "/api/v1/auth/me", None),
    ("GET", "/openapi.json", None),
    ("GET", "/", None),
    ("GET", "/static/inbox.css", None),
    ("GET", "/mcp", None),
]
WRITES: list[tuple[str, str, Any]] = [
    ("POST", "/api/v1/workspaces", {"name": "planted"}),
    ("POST", "/api/v1/tasks", {"title": "planted", "workspace_id": "w"}),
    ("POST", "/api/v1/clarification/x/respond", {"answers": []}),
    ("POST", "/api/v1/clarification/x/cancel", None),
    ("POST", "/api/v1/auth/login", {"token": "clarion_pat_x"}),
    ("POST", "/api/v1/auth/logout", None),
    ("POST", "/mcp", INITIALIZE),
    ("POST", "/mcp/session/s1", INITIALIZE),
    ("DELETE", "/mcp", None),
]


@pytest.fixture(name="auth_enabled", params=[False, True], ids=["auth-disabled", "auth-enabled"])
def fixture_auth_enabled(request: pytest.FixtureRequest) -> bool:
    enabled = request.param
    assert isinstance(enabled, bool)
    return enabled


@pytest.fixture(name="client")
def fixture_client(auth_enabled: bool) -> Iterator[TestClient]:
    settings = Settings(
        database_url="memory://",
        auth_enabled=auth_enabled,
        allowed_hosts=("Clarion.Example.com", "proxy.example:443", "other.example:8443"),
    )
    clarion = build_clarion(settings)
    with TestClient(clarion.asgi_app, base_url=f"http://{LOCAL}") as client:
        if auth_enabled:  # every request acts as an admin, so writes would succeed
            admin = clarion.authentication.create_user("admin", is_admin=True)
            token = clarion.authentication.issue_token(admin.id).token
            client.headers["Authorization"] = f"Bearer {token}"
        yield client


def _send(client: TestClient, method: str, path: str, body: Any, headers: dict[str, str]) -> Any:
    content = None if body is None else json.dumps(body)
    sent = {**MCP_ACCEPT, **headers}
    if content is not None:
        sent.setdefault("Content-Type", "application/json")
    return client.request(method, path, content=content, headers=sent)


def _workspaces(client: TestClient) -> list[Any]:
    listed = client.get("/api/v1/workspaces")
    assert listed.status_code == 200, listed.text
    return list(listed.json()["workspaces"])


@pytest.mark.parametrize(("method", "path", "body"), READS + WRITES)
def test_a_foreign_host_is_refused_with_421_on_every_route(
    client: TestClient, method: str, path: str, body: Any
) -> None:
    """DNS rebinding: the attacker's page sends its own name as ``Host``."""
    response = _send(client, method, path, body, {"Host": FOREIGN_HOST, "Origin": FOREIGN_ORIGIN})
    assert response.status_code == 421, response.text
    assert response.json() == {"error": "host not allowed: 'attacker.example:8765'"}
    assert response.headers["cache-control"] == "no-store"


@pytest.mark.parametrize(("method", "path", "body"), READS + WRITES)
def test_a_foreign_origin_is_refused_with_403_even_on_a_loopback_host(
    client: TestClient, method: str, path: str, body: Any
) -> None:
    response = _send(client, method, path, body, {"Origin": FOREIGN_ORIGIN})
    assert response.status_code == 403, response.text
    assert response.json() == {"error": "origin not allowed: 'http://attacker.example:8765'"}


@pytest.mark.parametrize("origin", ["null", "file://", "http://127.0.0.1.attacker.example"])
def test_opaque_and_lookalike_origins_are_refused(client: TestClient, origin: str) -> None:
    response = client.post("/api/v1/workspaces", json={"name": "x"}, headers={"Origin": origin})
    assert response.status_code == 403


@pytest.mark.parametrize(
    ("host", "origin"),
    [
        ("127.0.0.1:8765", "http://127.0.0.1:8765"),
        ("localhost:1234", "http://LOCALHOST:1234"),
        ("[::1]:8765", "http://[::1]:8765"),
        ("clarion.example.com", "https://clarion.example.com"),
        ("CLARION.EXAMPLE.COM:8080", "http://clarion.example.com:8080"),
        ("other.example:8443", "https://other.example:8443"),
    ],
)
def test_loopback_and_configured_hosts_are_served(
    client: TestClient, auth_enabled: bool, host: str, origin: str
) -> None:
    headers = {"Host": host, "Origin": origin}
    for method, path, body in READS + WRITES:
        if path == "/api/v1/events":
            continue  # an endless stream; refusals are checked above
        response = _send(client, method, path, body, headers)
        assert response.status_code not in (403, 415, 421), (method, path, response.text)
    page = client.get("/", headers=headers)
    assert page.status_code == 200
    assert client.get("/openapi.json", headers=headers).status_code == 200


@pytest.mark.parametrize(
    "host", ["other.example", "other.example:8444", "proxy.example", "proxy.example:80", ""]
)
def test_a_configured_port_is_that_port_only(client: TestClient, host: str) -> None:
    """``name:port`` entries: a Host without a port is the scheme's default port (80 here)."""
    response = client.get("/api/v1/clarification/pending", headers={"Host": host})
    assert response.status_code == 421


def test_a_bare_host_matches_a_port_443_entry_over_https(auth_enabled: bool) -> None:
    settings = Settings(
        database_url="memory://", auth_enabled=auth_enabled, allowed_hosts=("proxy.example:443",)
    )
    with TestClient(build_clarion(settings).asgi_app, base_url="https://proxy.example") as https:
        assert https.get("/openapi.json").status_code == 200
        assert https.get("/openapi.json", headers={"Host": "proxy.example:8443"}).status_code == 421


def test_health_checks_answer_any_host(client: TestClient) -> None:
    """Probes address the process by its IP; the answer says nothing but "up"."""
    response = client.get("/healthz", headers={"Host": "10.0.0.7:8765"})
    assert response.status_code == 200


@pytest.mark.parametrize(
    "content_type",
    [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; boundary=x",
        "application/json; charset=latin-1",
        "application/jsonx",
        None,
    ],
)
@pytest.mark.parametrize(("method", "path", "body"), [w for w in WRITES if w[2] is not None])
def test_writes_that_are_not_json_get_415_and_change_nothing(
    client: TestClient, method: str, path: str, body: Any, content_type: str | None
) -> None:
    before = _workspaces(client)
    headers = {**MCP_ACCEPT}
    if content_type is not None:
        headers["Content-Type"] = content_type
    response = client.request(method, path, content=json.dumps(body).encode(), headers=headers)
    assert response.status_code == 415, response.text
    assert response.json() == {
        "error": "unsupported media type: Content-Type must be application/json "
        "(optionally charset=utf-8)"
    }
    assert _workspaces(client) == before


@pytest.mark.parametrize(
    "content_type",
    ["application/json", "Application/JSON; charset=UTF-8", 'application/json;charset="utf-8"'],
)
def test_json_with_an_optional_utf8_charset_is_accepted(
    client: TestClient, content_type: str
) -> None:
    response = client.post(
        "/api/v1/workspaces", content=b'{"name": "ok"}', headers={"Content-Type": content_type}
    )
    assert response.status_code == 201, response.text


def test_a_duplicate_key_is_a_400_and_changes_nothing(client: TestClient) -> None:
    before = _workspaces(client)
    response = client.post(
        "/api/v1/workspaces",
        content=b'{"name": "first", "name": "second"}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": "invalid payload: duplicate key 'name' in a JSON object",
        "field": "body",
    }
    assert _workspaces(client) == before


@pytest.mark.parametrize(
    "path",
    ["/api/v1/clarification/pending", "/api/v1/auth/me", "/openapi.json", "/healthz", "/mcp"],
)
def test_api_answers_are_not_cached(client: TestClient, path: str) -> None:
    response = client.get(path, headers=MCP_ACCEPT)
    assert response.headers["cache-control"] == "no-store", (response.status_code, path)


def test_the_inbox_keeps_its_own_revalidation_policy(client: TestClient) -> None:
    assert client.get("/").headers["cache-control"] == "no-cache"
    assert client.get("/static/inbox.css").headers["cache-control"] == "no-cache"


def test_a_malformed_allowed_host_stops_the_build_naming_it() -> None:
    with pytest.raises(ValidationError, match=re.escape("'https://x.example'")):
        build_clarion(Settings(database_url="memory://", allowed_hosts=("https://x.example",)))


def test_a_duplicate_key_in_an_mcp_body_is_a_400_parse_error(client: TestClient) -> None:
    """Both MCP endpoints are built with the same ``DuplicateKeyGate`` (``build_mcp``)."""
    path = "/mcp"
    body = json.dumps(INITIALIZE)[:-1] + ', "method": "tools/list"}'
    response = client.post(
        path, content=body, headers={**MCP_ACCEPT, "Content-Type": "application/json"}
    )
    assert response.status_code == 400
    assert response.json() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": -32700,
            "message": "Parse error: duplicate key 'method' in a JSON object",
        },
    }
    accepted = _send(client, "POST", path, INITIALIZE, {})
    assert accepted.status_code == 200, accepted.text


@pytest.fixture(
    name="stored_client",
    params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)],
)
def fixture_stored_client(
    request: pytest.FixtureRequest, tmp_path: Path, auth_enabled: bool
) -> Iterator[TestClient]:
    """A composed server over a SQLite file or a PostgreSQL database, with a workspace, a
    task and a session already stored (the writes below must leave them as they are)."""
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path / 'clarion.db'}"
    else:
        url = request.getfixturevalue("postgres_database_url")
    clarion = build_clarion(Settings(database_url=url, auth_enabled=auth_enabled))
    try:
        with TestClient(clarion.asgi_app, base_url=f"http://{LOCAL}") as client:
            if auth_enabled:
                admin = clarion.authentication.create_user("admin", is_admin=True)
                token = clarion.authentication.issue_token(admin.id).token
                client.headers["Authorization"] = f"Bearer {token}"
            workspace = client.post("/api/v1/workspaces", json={"name": "kept"}).json()
            task = client.post(
                "/api/v1/tasks", json={"title": "kept", "workspace_id": workspace["id"]}
            ).json()
            created = client.post(f"/api/v1/tasks/{task['id']}/sessions", json={})
            assert created.status_code == 201, created.text
            yield client
    finally:
        clarion.close()


def _stored(client: TestClient) -> tuple[Any, ...]:
    """Everything the refused writes could have changed, as the API lists it."""
    workspaces = client.get("/api/v1/workspaces").json()
    tasks = client.get("/api/v1/tasks").json()
    pending = client.get("/api/v1/clarification/pending").json()
    return workspaces, tasks, pending


@pytest.mark.parametrize(
    "content_type", ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data"]
)
@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/workspaces", {"name": "planted"}),
        ("/api/v1/tasks", {"title": "planted"}),
        ("/api/v1/clarification/request", {"session_id": "s", "questions": []}),
    ],
)
def test_cross_site_body_types_get_415_and_store_nothing_on_sqlite_and_postgres(
    stored_client: TestClient, path: str, body: Any, content_type: str
) -> None:
    """Issue #14 "Tests": ``text/plain`` and form-encoded writes change nothing, on both
    databases (the memory tests above cover every route family)."""
    before = _stored(stored_client)
    response = stored_client.post(
        path, content=json.dumps(body).encode(), headers={"Content-Type": content_type}
    )
    assert response.status_code == 415, response.text
    assert _stored(stored_client) == before


def test_a_duplicate_key_is_a_400_and_stores_nothing_on_sqlite_and_postgres(
    stored_client: TestClient,
) -> None:
    before = _stored(stored_client)
    for path, content in (
        ("/api/v1/workspaces", b'{"name": "first", "name": "second"}'),
        ("/api/v1/tasks", b'{"title": "a", "title": "b"}'),
    ):
        response = stored_client.post(
            path, content=content, headers={"Content-Type": "application/json"}
        )
        assert response.status_code == 400, response.text
        assert "duplicate key" in response.json()["error"]
    assert _stored(stored_client) == before
