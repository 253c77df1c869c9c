"""Task sessions created on demand for agents that no host manages (``/mcp/agent``).

An agent on someone's own machine has no host to create a workspace, a task and a session for
it. :class:`AgentSessions` does that when the agent first asks: a task titled from the client's
reported name and version and the time ("claude-code 2.1 — 2026-12-01 14:05"), in the
configured workspace or else the caller's own "Agents" workspace (created on first use, one per
owner even across processes; unowned when the caller is unscoped, i.e. authentication is
disabled), and a primary RUNNING session in
it. Everything is done as the caller, with the same visibility rules as any other request, so
the task is in the caller's visible set and nobody else's. Ending the session completes its
turn: pending bundles detach and stay answerable, and an answer resumes the agent through the
resume dispatcher (facts §4.2).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Final

import attrs

from clarion.app.usecases.ask import Asking
from clarion.app.usecases.host import HostOperations
from clarion.app.usecases.lifecycle import Lifecycle
from clarion.domain.model import Identity
from clarion.domain.questions import QuestionDraft
from clarion.ports.system import Clock

AGENT_WORKSPACE_NAME: Final = "Agents"
UNKNOWN_CLIENT: Final = "MCP agent"
MAX_CLIENT_LABEL: Final = 120


def agent_task_title(client_name: str, client_version: str, at: datetime) -> str:
    """``"<name> <version> — <YYYY-MM-DD HH:MM>"`` (UTC); whitespace in what the client
    reported is collapsed and the label is cut at 120 characters. A client that reported no
    name is "MCP agent"."""
    name = " ".join(client_name.split()) or UNKNOWN_CLIENT
    version = " ".join(client_version.split())
    label = f"{name} {version}" if version else name
    return f"{label[:MAX_CLIENT_LABEL]} — {at:%Y-%m-%d %H:%M}"


@attrs.define(kw_only=True)
class AgentSessions:
    """Open and end the task sessions of agents that ask without a host."""

    _host: HostOperations = attrs.field(alias="host")
    _lifecycle: Lifecycle = attrs.field(alias="lifecycle")
    _asking: Asking = attrs.field(alias="asking")
    _clock: Clock = attrs.field(alias="clock")
    # Where every agent's tasks go (CLARION_AGENT_WORKSPACE); "" gives each caller its own
    # "Agents" workspace.
    workspace_id: str = ""

    async def open(
        self,
        identity: Identity,
        *,
        client_name: str,
        client_version: str,
        drafts: Sequence[QuestionDraft],
        context: str,
        context_paragraphs: Sequence[str] = (),
    ) -> str:
        """Create a task and its primary session for an agent about to ask ``drafts``; return
        the session id. The ask is checked first (:meth:`Asking.check_first_ask`), so a task
        is only created for an ask the identity's limits allow.

        Raises:
            InvalidQuestions, LimitExceeded: the ask would be refused.
            NotFound: the configured workspace does not exist or ``identity`` may not see it.
            ClaimError: the store failed.
        """
        await self._asking.check_first_ask(
            identity, drafts, context, context_paragraphs=context_paragraphs
        )
        workspace_id = self.workspace_id or await self._own_workspace(identity)
        title = agent_task_title(client_name, client_version, self._clock.now())
        task = await self._host.create_task(identity, title, workspace_id)
        created = await self._host.create_session(identity, task.id, is_primary=True)
        return created.session.id

    async def end(self, identity: Identity, session_id: str) -> int:
        """The agent's session ended: complete its turn (pending bundles detach and stay
        answerable). Returns how many bundles detached.

        Raises:
            NotFound: the session does not exist or ``identity`` may not see it.
            ClaimError: the store failed.
        """
        return await self._lifecycle.complete_turn(identity, session_id)

    async def _own_workspace(self, identity: Identity) -> str:
        """The caller's "Agents" workspace, created on first use: one per owner, kept so by
        the store (a unique key, issue #29 S6), so no lock is needed here — concurrent first
        asks in any process get the same one — and found by that key, not by listing the
        caller's workspaces."""
        workspace = await self._host.agents_workspace(identity, AGENT_WORKSPACE_NAME)
        return workspace.id
