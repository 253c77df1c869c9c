"""Issue #29 S8: revocation reaches calls already running. An agent's ask made with a token
that is revoked (or whose user is deactivated) while it waits ends within seconds, its question
detached and still answerable — and the answer does not reach the revoked caller; a REST
``/wait`` on a revoked token ends with 401."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from clarion.domain.model import Answer, Outcome
from clarion.domain.resolved_by import Surface
from tests.integration.mcp.harness import (
    ASK,
    McpWorld,
    Person,
    http_client,
    mcp_client,
    question_args,
    serving,
    watching,
)

pytestmark = pytest.mark.anyio


def token_id(world: McpWorld, person: Person) -> str:
    [record] = world.authentication.list_tokens(person.identity.user_id or "")
    return record.id


@pytest.mark.parametrize("how", ["revoke", "deactivate"])
async def test_a_running_ask_ends_when_its_token_stops_working(
    sqlite_url: str, mode: str, how: str
) -> None:
    build = McpWorld.build(sqlite_url, progress_interval=0.05, revocation_interval=0.2)
    async with serving(build) as world:
        alice = world.person("alice")
        ended: list[Any] = []
        async with watching(world) as events:
            with anyio.fail_after(20):
                async with anyio.create_task_group() as tasks:

                    async def ask() -> None:
                        try:
                            async with mcp_client(
                                world.agent_url, token=alice.token, mode=mode
                            ) as client:
                                ended.append(
                                    await client.call_tool(ASK, {"questions": question_args(1)})
                                )
                        except Exception as exc:  # noqa: BLE001 - the stream is cut
                            ended.append(exc)

                    tasks.start_soon(ask)
                    created = await events.wait_for("bundle.created")
                    if how == "revoke":
                        assert world.authentication.revoke_token(token_id(world, alice))
                    else:
                        assert world.authentication.deactivate_user(alice.identity.user_id or "")
            await events.wait_for("bundle.detached", pending_id=created.pending_id)
        assert ended, "the call must have ended"
        assert world.resumes == []
        # The question stays answerable (here through the resolver, as the workspace owner);
        # the answer resumes the agent instead of reaching the revoked caller's call.
        answer = Outcome(answers=(Answer(question_id="q1", selected_options=("q1_opt1",)),))
        resolution = await world.services.resolver.resolve(
            alice.identity, created.pending_id, answer, surface=Surface.REST
        )
        assert resolution.claimed is True
        [resume] = world.resumes
        assert resume.pending_id == created.pending_id


async def test_a_rest_wait_on_a_revoked_token_ends_with_401(sqlite_url: str) -> None:
    async with serving(McpWorld.build(sqlite_url)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        pending_id = await world.bundle(alice, agent)
        responses: list[Any] = []
        with anyio.fail_after(20):
            async with http_client(alice.token) as http, anyio.create_task_group() as tasks:

                async def wait() -> None:
                    url = f"{world.base_url}/api/v1/clarification/{pending_id}/wait"
                    responses.append(await http.get(url))

                tasks.start_soon(wait)
                await anyio.sleep(0.3)
                assert world.authentication.revoke_token(token_id(world, alice))
        [response] = responses
        assert response.status_code == 401
        assert response.json() == {"error": "credential revoked"}
