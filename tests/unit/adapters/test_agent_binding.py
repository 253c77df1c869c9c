"""#29 S6: ``/mcp/agent``'s binding of MCP sessions to Clarion sessions takes no global lock:
a first ask that is slow to open its session holds up only the asks of its own MCP session."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from clarion.adapters.mcp.agent import AgentBinding
from clarion.adapters.mcp.arguments import AskArguments
from clarion.adapters.mcp.server import Caller, ToolCall
from clarion.app.usecases.agents import AgentSessions
from clarion.domain.model import Identity
from tests.unit.app.world import ALICE, BOB, make_world

pytestmark = pytest.mark.anyio


@attrs.define(kw_only=True)
class _SlowForAlice(AgentSessions):
    """Alice's first session opens only once ``release`` is set; everyone else's at once."""

    release: anyio.Event = attrs.field(factory=anyio.Event)
    opened: list[str] = attrs.field(factory=list)

    async def open(self, identity: Identity, **_: Any) -> str:
        if identity == ALICE:
            await self.release.wait()
        session_id = f"session-{len(self.opened)}-{identity.user_id}"
        self.opened.append(session_id)
        return session_id

    async def end(self, identity: Identity, session_id: str) -> int:
        return 0


def _call(identity: Identity, mcp_id: str) -> ToolCall:
    async def progress(_done: float, _message: str) -> None:
        return None

    return ToolCall(
        arguments={},
        caller=Caller(identity=identity),
        report_progress=progress,
        headers={"mcp-session-id": mcp_id},
    )


ARGS = AskArguments(questions=(), context="")


async def test_a_slow_first_ask_holds_up_its_own_mcp_session_only() -> None:
    world = make_world()
    sessions = _SlowForAlice(
        host=world.services.host,
        lifecycle=world.services.lifecycle,
        asking=world.services.asking,
        clock=world.clock,
    )
    binding = AgentBinding(sessions, is_open=lambda _mcp_id: True)
    alices: list[str] = []

    async def ask(identity: Identity, mcp_id: str, into: list[str]) -> None:
        async with binding.session_scope(_call(identity, mcp_id), ARGS) as session_id:
            into.append(session_id)

    with anyio.fail_after(10):  # a deadlock guard, not a timing assertion
        async with anyio.create_task_group() as tasks:
            for _ in range(3):  # concurrent first asks of one MCP session
                tasks.start_soon(ask, ALICE, "mcp-alice", alices)
            await anyio.wait_all_tasks_blocked()
            bobs: list[str] = []
            # Bob's first ask completes while Alice's session is still being opened.
            await ask(BOB, "mcp-bob", bobs)
            assert bobs == ["session-0-bob"]
            assert alices == []
            sessions.release.set()
    # Alice's three concurrent first asks share the one session opened for her MCP session.
    assert alices == ["session-1-alice"] * 3
    assert binding.bound_sessions() == {"mcp-alice": "session-1-alice", "mcp-bob": "session-0-bob"}
    assert binding._opening == {}  # no lock outlives its MCP session's opening
