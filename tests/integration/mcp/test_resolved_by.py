"""Issue #20 over MCP: the external answer tool records "mcp" with the token's user, and an
answer given in the asking agent's own client (elicitation) records "agent_client" with the
agent (its session token) as the resolver."""

from __future__ import annotations

import pytest
from mcp.client.session import ClientRequestContext
from mcp.types import ElicitRequestParams, ElicitResult

from clarion.domain.model import Identity
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from tests.integration.mcp.forms import accept, form_client
from tests.integration.mcp.harness import (
    ANSWER,
    ASK,
    McpWorld,
    Person,
    answers_for,
    mcp_client,
    question_args,
    structured,
    watching,
)

pytestmark = pytest.mark.anyio


async def _recorded(world: McpWorld, pending_id: str) -> ResolvedBy:
    bundle = await world.services.resolver.authorize_bundle(Identity.internal(), pending_id)
    [recorded] = {row.resolved_by for row in bundle.rows}
    assert recorded is not None
    return recorded


async def test_the_external_answer_tool_records_mcp_and_the_tokens_user(
    world: McpWorld, alice: Person, mode: str
) -> None:
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent, count=2)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        won = structured(
            await client.call_tool(ANSWER, {"pending_id": pending_id, "answers": answers_for(2)})
        )
    assert won["claimed"] is True
    recorded = await _recorded(world, pending_id)
    assert recorded.surface is Surface.MCP
    assert recorded.kind is IdentityKind.USER
    assert (recorded.identity_id, recorded.display_name) == (alice.identity.user_id, "alice")
    assert recorded.at is not None


async def test_an_elicitation_answer_records_agent_client_and_the_agent(
    world: McpWorld, alice: Person, mode: str
) -> None:
    agent = await world.agent(alice)

    async def answer_form(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return accept()

    async with watching(world) as events:
        async with form_client(
            world.session_url(agent.session.id), answer_form, token=agent.token, mode=mode
        ) as client:
            structured(await client.call_tool(ASK, {"questions": question_args(1)}))
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
    recorded = await _recorded(world, created.pending_id)
    assert recorded.surface is Surface.AGENT_CLIENT
    assert recorded.kind is IdentityKind.AGENT
    assert recorded.identity_id == alice.identity.user_id  # the agent acts as the owner
    assert recorded.display_name == f"agent of session {agent.session.id}"
