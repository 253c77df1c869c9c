"""#35: a 2026-07-28 ``tasks/get`` poll is served by the endpoint's JSON-reply twin of its
session manager (no response stream, task group or disconnect watcher for a read that answers
at once); every other request by the manager itself."""

from __future__ import annotations

from typing import Any

import pytest
from mcp.server import Server
from starlette.types import Message, Receive, Scope, Send

from clarion.adapters.mcp.surfaces import AT_ONCE_METHODS, IdentitySessionManager

pytestmark = pytest.mark.anyio


def _scope(**headers: str) -> Scope:
    return {
        "type": "http",
        "method": "POST",
        "headers": [
            (name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()
        ],
    }


@pytest.mark.parametrize(
    ("headers", "at_once"),
    [
        ({"mcp_protocol_version": "2026-07-28", "mcp_method": "tasks/get"}, True),
        ({"mcp_protocol_version": "2026-07-28", "mcp_method": "tools/call"}, False),
        ({"mcp_protocol_version": "2026-07-28", "mcp_method": "tasks/cancel"}, False),
        ({"mcp_protocol_version": "2026-07-28"}, False),
        ({"mcp_protocol_version": "2025-11-25", "mcp_method": "tasks/get"}, False),
        ({"mcp_method": "tasks/get"}, False),
    ],
)
async def test_only_a_modern_poll_takes_the_json_replies(
    headers: dict[str, str], at_once: bool
) -> None:
    manager = IdentitySessionManager(app=Server("t"), stateless=True, max_sessions_per_identity=1)
    served: list[str] = []

    def recorder(name: str) -> Any:
        async def app(_scope: Scope, _receive: Receive, _send: Send) -> None:
            served.append(name)

        return app

    manager.asgi_app = recorder("event-stream")
    manager._at_once.asgi_app = recorder("json")

    async def receive() -> Message:
        raise AssertionError("not read")

    async def send(_message: Message) -> None:
        raise AssertionError("nothing sent")

    await manager.serve(_scope(**headers), receive, send)
    assert served == ["json" if at_once else "event-stream"]


def test_the_twin_replies_with_json_and_keeps_the_managers_limits() -> None:
    manager = IdentitySessionManager(
        app=Server("t"), stateless=False, max_request_body_size=1234, max_sessions_per_identity=1
    )
    twin = manager._at_once
    assert twin.app is manager.app
    assert (twin.json_response, twin.stateless) == (True, True)
    assert twin.max_request_body_size == 1234
    assert twin.security_settings is manager.security_settings
    assert {"tasks/get"} == AT_ONCE_METHODS
