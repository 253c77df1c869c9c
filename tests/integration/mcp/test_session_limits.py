"""Issue #14: legacy (2025-11-25) MCP sessions belong to the credential that opened them,
expire after the configured idle time, and are capped per identity."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest

from clarion.domain.limits import Limits
from tests.integration.mcp.harness import McpWorld, Person, serving

LEGACY = "2025-11-25"
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": LEGACY,
}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": LEGACY,
        "capabilities": {},
        "clientInfo": {"name": "session-test", "version": "1"},
    },
}
PING = {"jsonrpc": "2.0", "id": 2, "method": "ping"}


@asynccontextmanager
async def _served(database_url: str, limits: Limits) -> AsyncIterator[McpWorld]:
    world = McpWorld.build(database_url, limits=limits)
    async with serving(world) as served:
        yield served


def _headers(token: str, session_id: str = "") -> dict[str, str]:
    headers = {**HEADERS, "Authorization": f"Bearer {token}"}
    if session_id:
        headers["Mcp-Session-Id"] = session_id
    return headers


async def _open(http: httpx2.AsyncClient, world: McpWorld, token: str) -> httpx2.Response:
    return await http.post(world.external_url, json=INITIALIZE, headers=_headers(token))


async def _session(http: httpx2.AsyncClient, world: McpWorld, token: str) -> str:
    response = await _open(http, world, token)
    assert response.status_code == 200, response.text
    session_id = response.headers["mcp-session-id"]
    assert session_id
    return session_id


def _second_token(world: McpWorld, person: Person) -> str:
    user_id = person.identity.user_id
    assert user_id is not None
    return world.authentication.issue_token(user_id, name="second").token


def _shape(response: httpx2.Response) -> tuple[int, Any]:
    return response.status_code, json.loads(response.content)


@pytest.mark.anyio
async def test_a_session_opened_with_one_token_is_refused_to_any_other_like_an_unknown_id(
    database_url: str,
) -> None:
    async with _served(database_url, Limits()) as world, httpx2.AsyncClient(timeout=30) as http:
        alice, bob = world.person("alice"), world.person("bob")
        alices_other = _second_token(world, alice)
        session_id = await _session(http, world, alice.token)
        url = world.external_url
        unknown = await http.post(url, json=PING, headers=_headers(alices_other, "f" * 32))
        assert unknown.status_code == 404
        for token in (alices_other, bob.token):
            foreign = await http.post(url, json=PING, headers=_headers(token, session_id))
            assert _shape(foreign) == _shape(unknown)
            deleted = await http.delete(url, headers=_headers(token, session_id))
            assert deleted.status_code == 404
        # The owner's session survived both attempts.
        own = await http.post(url, json=PING, headers=_headers(alice.token, session_id))
        assert own.status_code == 200, own.text


@pytest.mark.anyio
async def test_each_identity_holds_at_most_the_configured_number_of_sessions(
    database_url: str,
) -> None:
    message = "too many MCP sessions: the limit is 2 per identity (CLARION_MAX_MCP_SESSIONS)"
    async with (
        _served(database_url, Limits(max_mcp_sessions=2)) as world,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        alice, bob = world.person("alice"), world.person("bob")
        alices_other = _second_token(world, alice)
        first = await _session(http, world, alice.token)
        await _session(http, world, alices_other)  # the cap counts the identity, not the token
        refused = await _open(http, world, alice.token)
        assert _shape(refused) == (429, {"error": message})
        assert world.mcp.managers[0].sessions_of(alice.identity.user_id or "") == 2
        await _session(http, world, bob.token)
        # The sessionless 2026-07-28 protocol opens nothing and is never refused by the cap.
        modern = await http.post(
            world.external_url,
            json=PING,
            headers={**_headers(alice.token), "MCP-Protocol-Version": "2026-07-28"},
        )
        assert modern.status_code != 429
        closed = await http.delete(world.external_url, headers=_headers(alice.token, first))
        assert closed.status_code == 200
        await _session(http, world, alice.token)


@pytest.mark.anyio
async def test_an_idle_session_expires_and_its_id_is_then_unknown(database_url: str) -> None:
    async with (
        _served(database_url, Limits(mcp_session_idle_s=0.2)) as world,
        httpx2.AsyncClient(timeout=30) as http,
    ):
        alice = world.person("alice")
        session_id = await _session(http, world, alice.token)
        manager = world.mcp.managers[0]
        assert manager.sessions_of(alice.identity.user_id or "") == 1
        with anyio.fail_after(20):
            while manager.sessions_of(alice.identity.user_id or ""):
                await anyio.sleep(0.05)
        gone = await http.post(
            world.external_url, json=PING, headers=_headers(alice.token, session_id)
        )
        assert gone.status_code == 404
