"""``/mcp/agent``: which Clarion session an agent's ask goes to, and when that session ends.

An agent that no host manages asks on ``/mcp/agent`` without naming a session; Clarion creates
one for it (:class:`clarion.app.usecases.agents.AgentSessions`) when it first asks:

- 2025-11-25 era (``Mcp-Session-Id`` sessions): one Clarion session per MCP session. The first
  ask creates it; later asks in the same MCP session reuse it. When the MCP session ends —
  DELETE, idle expiry (``CLARION_MCP_SESSION_IDLE_S``), or the server stopping — its turn is
  completed. A client that reconnects opens a new MCP session and so gets a new Clarion
  session; the old one's detached bundles stay answerable and resume through the dispatcher.
- 2026-07-28 era (no MCP session: every request stands alone), and legacy clients when legacy
  sessions are off: one Clarion session per ask call. The call's end — answered, rejected,
  timed out or the client gone — completes its turn.

The MCP session id is taken from the ``Mcp-Session-Id`` header only when the SDK routed the
request through that session (a legacy-era request to an open session): the SDK has then
already checked that the session belongs to the caller's credential, so one agent can never
reach another's Clarion session.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Final

import anyio
import attrs
import structlog

from clarion.adapters.mcp.arguments import AskArguments
from clarion.adapters.mcp.server import ToolCall, is_legacy_request
from clarion.app.usecases.agents import AgentSessions
from clarion.domain.model import Identity

END_TIMEOUT_S: Final = 10.0

_log = structlog.get_logger(__name__)


@attrs.frozen
class _Bound:
    identity: Identity
    session_id: str


@attrs.define
class _Opening:
    """The lock of one MCP session's first asks, and how many asks hold or await it."""

    lock: anyio.Lock = attrs.field(factory=anyio.Lock)
    users: int = 0


class AgentBinding:
    """The Clarion sessions of ``/mcp/agent``'s open MCP sessions (in memory, like the MCP
    sessions themselves)."""

    def __init__(self, sessions: AgentSessions, *, is_open: Callable[[str], bool]) -> None:
        """``is_open(mcp_session_id)`` tells whether the session manager still serves that
        legacy session (always False when it serves none)."""
        self._sessions = sessions
        self._is_open = is_open
        self._bound: dict[str, _Bound] = {}
        # One lock per MCP session being opened (none global: issue #29 S6), dropped when no
        # ask holds or awaits it.
        self._opening: dict[str, _Opening] = {}

    def bound_sessions(self) -> dict[str, str]:
        """MCP session id → Clarion session id, for every open MCP session that has asked."""
        return {mcp_id: bound.session_id for mcp_id, bound in self._bound.items()}

    def _mcp_session_of(self, headers: Mapping[str, str]) -> str:
        mcp_id = headers.get("mcp-session-id", "")
        if mcp_id and is_legacy_request(headers) and self._is_open(mcp_id):
            return mcp_id
        return ""

    @asynccontextmanager
    async def session_scope(self, call: ToolCall, args: AskArguments) -> AsyncIterator[str]:
        """The ask tool's session scope (:data:`clarion.adapters.mcp.tools.SessionScope`): the
        caller's MCP session's Clarion session, created on its first ask; or, without an MCP
        session, a new one whose turn is completed when the call is over."""
        identity = call.caller.identity
        mcp_id = self._mcp_session_of(call.headers)
        if not mcp_id:
            session_id, per_call = await self._open(call, args), True
        else:
            bound = self._bound.get(mcp_id)
            if bound is None:
                session_id, per_call = await self._first(call, args, mcp_id)
            else:
                session_id, per_call = bound.session_id, False
        try:
            yield session_id
        finally:
            if per_call:
                await self._end(_Bound(identity, session_id))

    async def _first(self, call: ToolCall, args: AskArguments, mcp_id: str) -> tuple[str, bool]:
        """The MCP session's Clarion session, opened by the first of its concurrent first asks
        (the others wait for it under that MCP session's own lock, and asks of other MCP
        sessions never do); whether it must end with this call."""
        opening = self._opening.setdefault(mcp_id, _Opening())
        opening.users += 1
        try:
            async with opening.lock:
                bound = self._bound.get(mcp_id)
                if bound is not None:
                    return bound.session_id, False
                session_id = await self._open(call, args)
                # Checked with no await since the session was created: an MCP session that
                # ended meanwhile leaves this one to end with the call instead.
                if not self._is_open(mcp_id):
                    return session_id, True
                self._bound[mcp_id] = _Bound(call.caller.identity, session_id)
                _log.info("mcp_agent_session_opened", mcp_session=mcp_id, session_id=session_id)
                return session_id, False
        finally:
            opening.users -= 1
            if opening.users == 0 and self._opening.get(mcp_id) is opening:
                del self._opening[mcp_id]

    async def _open(self, call: ToolCall, args: AskArguments) -> str:
        return await self._sessions.open(
            call.caller.identity,
            client_name=call.client.name,
            client_version=call.client.version,
            drafts=args.questions,
            context=args.context,
            context_paragraphs=args.context_paragraphs,
        )

    async def session_ended(self, mcp_id: str) -> None:
        """The MCP session ``mcp_id`` is gone: complete its Clarion session's turn (once)."""
        bound = self._bound.pop(mcp_id, None)
        if bound is not None:
            _log.info("mcp_agent_session_ended", mcp_session=mcp_id, session_id=bound.session_id)
            await self._end(bound)

    async def _end(self, bound: _Bound) -> None:
        """Complete the turn even while the caller is being cancelled (a client that went
        away), bounded in time; a failure is logged — the bundles stay answerable anyway."""
        with anyio.move_on_after(END_TIMEOUT_S, shield=True):
            try:
                await self._sessions.end(bound.identity, bound.session_id)
            except Exception:  # noqa: BLE001 - best effort: durable rows stay answerable
                _log.warning(
                    "mcp_agent_session_end_failed", session_id=bound.session_id, exc_info=True
                )
