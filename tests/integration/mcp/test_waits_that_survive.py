"""Issue #28: the agent gets its answer whatever happens to its call — MCP tasks, exact
retries and late answers, on both MCP agent endpoints, in both protocol eras where they apply,
on SQLite and PostgreSQL where storage is involved."""

from __future__ import annotations

from typing import Any, cast

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import ElicitRequestParams, ElicitResult, RequestParamsMeta

from clarion.adapters.mcp.errors import WAIT_ENDED_MESSAGE
from tests.integration.mcp.harness import (
    ASK,
    LIST_PENDING,
    McpWorld,
    Person,
    answers_for,
    http_client,
    mcp_client,
    question_args,
    serving,
    structured,
    tool_error,
    watching,
)
from tests.integration.mcp.rpc import IDEMPOTENCY, PROTOCOL, call_ask, capabilities, task_method

pytestmark = pytest.mark.anyio

NOT_FOUND = {"code": -32602, "message": "Failed to retrieve task: Task not found"}


def answered(option: int = 1, text: str = "") -> dict[str, Any]:
    """The blocking ask's result for one question answered with ``option``."""
    return {
        "q1": {
            "answered": True,
            "custom_text": text,
            "rejected": False,
            "selected_option": f"q1_opt{option}",
            "selected_options": [f"q1_opt{option}"],
        },
        "rejected": False,
        "reject_reason": "",
    }


async def pending(world: McpWorld, person: Person) -> list[str]:
    async with mcp_client(world.external_url, token=person.token) as external:
        listed = structured(await external.call_tool(LIST_PENDING, {}))
    return [bundle["pending_id"] for bundle in listed["bundles"]]


async def answer_over_rest(
    world: McpWorld, person: Person, pending_id: str, option: int = 1
) -> None:
    async with http_client(person.token) as http:
        response = await http.post(
            world.respond_url(pending_id), json={"answers": answers_for(1, option=option)}
        )
    assert response.status_code == 200, response.text
    assert response.json()["claimed"] is True


async def waiting_live(world: McpWorld, count: int) -> None:
    """Until ``count`` asks wait live in the server (a retry attaching writes nothing)."""
    with anyio.fail_after(20):
        while world.services.asking.live_asks != count:
            await anyio.sleep(0.02)


# -- tasks ------------------------------------------------------------------------------------


async def test_a_task_survives_a_restart_and_tasks_get_returns_what_the_blocking_call_returns(
    database_url: str,
) -> None:
    """#28 item 1: the ask answers at once with a task; after a restart (a new server on the
    same database) the answer is given over REST and ``tasks/get`` returns exactly the
    blocking call's result."""
    async with serving(McpWorld.build(database_url)) as first:
        alice = first.person("alice")
        agent = await first.agent(alice)
        async with http_client(agent.token) as http:
            created = await call_ask(
                http, first.session_url(agent.session.id), ASK, {"questions": question_args(1)}
            )
            assert (created["resultType"], created["status"]) == ("task", "working")
            task_id = created["taskId"]
            pending_id = created["_meta"]["dev.clarion/pending-id"]
            polled = await task_method(
                http, first.session_url(agent.session.id), "tasks/get", task_id
            )
            assert (polled["status"], polled["resultType"]) == ("working", "complete")
        assert await pending(first, alice) == [pending_id]
    async with serving(McpWorld.build(database_url)) as second:
        await answer_over_rest(second, alice, pending_id, option=2)
        async with http_client(agent.token) as http:
            url = second.session_url(agent.session.id)
            done = await task_method(http, url, "tasks/get", task_id)
            again = await task_method(http, url, "tasks/get", task_id)
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == answered(2)
    assert done["result"]["isError"] is False
    assert again["result"] == done["result"]


async def test_another_identitys_task_is_the_same_error_as_a_made_up_one(world: McpWorld) -> None:
    """#28 item 1: a task is bound to the credential that created it."""
    alice, bob = world.person("alice"), world.person("bob")
    async with http_client(alice.token) as http:
        created = await call_ask(http, world.agent_url, ASK, {"questions": question_args(1)})
        own = await task_method(http, world.agent_url, "tasks/get", created["taskId"])
    assert own["status"] == "working"
    async with http_client(bob.token) as http:
        foreign = await task_method(http, world.agent_url, "tasks/get", created["taskId"])
        made_up = await task_method(http, world.agent_url, "tasks/get", "no-such-task")
        cancel_foreign = await task_method(http, world.agent_url, "tasks/cancel", created["taskId"])
    assert foreign == made_up == {"error": NOT_FOUND}
    assert cancel_foreign == {"error": NOT_FOUND}
    assert len(await pending(world, alice)) == 1


async def test_tasks_cancel_withdraws_the_question(world: McpWorld) -> None:
    """#28 item 1: ``tasks/cancel`` means the agent no longer wants the answer: the bundle is
    cancelled like an operator cancel (A9) and the task reads ``cancelled``."""
    alice = world.person("alice")
    async with http_client(alice.token) as http:
        created = await call_ask(http, world.agent_url, ASK, {"questions": question_args(1)})
        pending_id = created["_meta"]["dev.clarion/pending-id"]
        assert await task_method(http, world.agent_url, "tasks/cancel", created["taskId"]) == {
            "resultType": "complete",
            "_meta": {
                "io.modelcontextprotocol/serverInfo": {"name": "clarion-agent", "version": "0.1.0"}
            },
        }
        polled = await task_method(http, world.agent_url, "tasks/get", created["taskId"])
        late = await http.post(world.respond_url(pending_id), json={"answers": answers_for(1)})
    assert polled["status"] == "cancelled"
    assert await pending(world, alice) == []
    assert late.status_code == 409


async def test_a_task_offers_its_form_and_takes_the_answer_through_tasks_update(
    world: McpWorld,
) -> None:
    """#28 item 1: ``input_required`` with the form for a client that can show forms; the
    form's answer goes through the resolver and the task completes with it."""
    alice = world.person("alice")
    agent = await world.agent(alice)
    url = world.session_url(agent.session.id)
    async with http_client(agent.token) as http:
        created = await call_ask(http, url, ASK, {"questions": question_args(1)}, forms=True)
        polled = await task_method(http, url, "tasks/get", created["taskId"], forms=True)
        assert polled["status"] == "input_required"
        [(key, request)] = polled["inputRequests"].items()
        assert request["method"] == "elicitation/create"
        response = {"action": "accept", "content": {"q1_choice": ["q1_opt2"], "q1_text": "why"}}
        ack = await task_method(
            http, url, "tasks/update", created["taskId"], inputResponses={key: response}
        )
        assert "error" not in ack
        done = await task_method(http, url, "tasks/get", created["taskId"])
    assert done["status"] == "completed"
    assert done["result"]["structuredContent"] == answered(2, text="why")


async def test_concurrent_task_asks_with_one_idempotency_key_make_one_question(
    database_url: str,
) -> None:
    """#28 item 2: the same key from the same credential is the same ask, even at once."""
    async with serving(McpWorld.build(database_url)) as world:
        alice = world.person("alice")
        created: list[dict[str, Any]] = []
        async with http_client(alice.token) as http, anyio.create_task_group() as tasks:

            async def ask() -> None:
                created.append(
                    await call_ask(
                        http, world.agent_url, ASK, {"questions": question_args(1)}, key="k-1"
                    )
                )

            for _ in range(4):
                tasks.start_soon(ask)
        assert len({result["taskId"] for result in created}) == 1
        assert len(await pending(world, alice)) == 1


# -- exact retries and late answers --------------------------------------------------------------


async def test_a_retry_after_a_broken_call_attaches_to_the_same_question(
    world: McpWorld, mode: str
) -> None:
    """#28 item 2: the client's call breaks mid-wait and it re-issues the same ask: no second
    question; the answer reaches the retry."""
    alice = world.person("alice")
    arguments = {"questions": question_args(1)}
    async with watching(world) as events:
        async with anyio.create_task_group() as tasks:

            async def broken() -> None:
                async with mcp_client(world.agent_url, token=alice.token, mode=mode) as client:
                    await client.call_tool(ASK, arguments)

            tasks.start_soon(broken)
            created = await events.wait_for("bundle.created")
            tasks.cancel_scope.cancel()
        await events.wait_for("bundle.detached", pending_id=created.pending_id)
        results: list[dict[str, Any]] = []
        async with anyio.create_task_group() as tasks:

            async def retry() -> None:
                async with mcp_client(world.agent_url, token=alice.token, mode=mode) as client:
                    results.append(structured(await client.call_tool(ASK, arguments)))

            tasks.start_soon(retry)
            await waiting_live(world, 1)
            assert await pending(world, alice) == [created.pending_id]
            await answer_over_rest(world, alice, created.pending_id)
    assert results == [answered(1)]


async def test_a_timed_out_call_gets_its_late_answer_by_repeating_the_call_exactly_once(
    database_url: str, mode: str
) -> None:
    """#28 item 3: the wait ends, the text says how to get the answer, the answer arrives while
    nobody waits, and the repeated call returns it at once — once: the call after that asks
    anew."""
    build = McpWorld.build(database_url, progress_interval=0.05, ask_timeout=0.5)
    async with serving(build) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        url = world.session_url(agent.session.id)
        arguments = {"questions": question_args(1)}
        async with mcp_client(url, token=agent.token, mode=mode) as client:
            text, details = tool_error(await client.call_tool(ASK, arguments))
        assert text.startswith(WAIT_ENDED_MESSAGE)
        assert f"call {ASK} again with exactly the same arguments" in text
        assert details["code"] == "WAIT_ENDED"
        pending_id = details["pending_id"]
        await answer_over_rest(world, alice, pending_id, option=2)
        async with mcp_client(url, token=agent.token, mode=mode) as client:
            assert structured(await client.call_tool(ASK, arguments)) == answered(2)
            _, again = tool_error(await client.call_tool(ASK, arguments))
        assert again["pending_id"] != pending_id  # asked anew, and timed out again
        assert await pending(world, alice) == [again["pending_id"]]


async def test_a_different_next_ask_carries_the_earlier_late_answer(
    world: McpWorld, mode: str
) -> None:
    """#28 item 3: the agent's next call is another question; its result carries the earlier
    answer (``earlier_answers``), and only once."""
    build = McpWorld.build(
        str(world.engine.url.render_as_string(hide_password=False)),
        progress_interval=0.05,
        ask_timeout=0.5,
    )
    async with serving(build) as world:
        alice = world.person("alice")
        async with mcp_client(world.agent_url, token=alice.token, mode=mode) as client:
            _, first = tool_error(await client.call_tool(ASK, {"questions": question_args(1)}))
        await answer_over_rest(world, alice, first["pending_id"])
        second_args = {"questions": question_args(1, prefix="Other")}
        async with watching(world) as events, anyio.create_task_group() as tasks:
            results: list[dict[str, Any]] = []

            async def ask_again() -> None:
                async with mcp_client(world.agent_url, token=alice.token, mode=mode) as client:
                    results.append(structured(await client.call_tool(ASK, second_args)))

            tasks.start_soon(ask_again)
            created = await events.wait_for("bundle.created")
            await answer_over_rest(world, alice, created.pending_id, option=2)
        [result] = results
        assert result["earlier_answers"] == [
            {"pending_id": first["pending_id"], "status": "answered", "answers": answered(1)}
        ]
        assert {key: value for key, value in result.items() if key != "earlier_answers"} == (
            answered(2)
        )


async def test_a_blocking_call_with_an_idempotency_key_returns_the_stored_outcome(
    world: McpWorld, mode: str
) -> None:
    """#28 item 2: a retried call carrying the same ``_meta`` idempotency key gets the stored
    outcome, even after a call already returned it."""
    alice = world.person("alice")
    arguments = {"questions": question_args(1)}
    meta = cast("RequestParamsMeta", {IDEMPOTENCY: "deploy-42"})
    async with watching(world) as events, anyio.create_task_group() as tasks:
        results: list[dict[str, Any]] = []

        async def ask() -> None:
            async with mcp_client(world.agent_url, token=alice.token, mode=mode) as client:
                results.append(structured(await client.call_tool(ASK, arguments, meta=meta)))

        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created")
        await answer_over_rest(world, alice, created.pending_id)
    async with mcp_client(world.agent_url, token=alice.token, mode=mode) as client:
        results.append(structured(await client.call_tool(ASK, arguments, meta=meta)))
    assert results == [answered(1), answered(1)]
    assert await pending(world, alice) == []


async def test_a_legacy_form_client_whose_wait_ended_gets_the_late_answer_by_retrying(
    sqlite_url: str,
) -> None:
    """#28 item 3 with the 2025-11-25 form: the ask that offered a form is recorded like any
    other, so the retry after its wait ended returns the answer given meanwhile."""
    build = McpWorld.build(sqlite_url, progress_interval=0.05, ask_timeout=0.5)
    async with serving(build) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        url = world.session_url(agent.session.id)
        arguments = {"questions": question_args(1)}
        forms: list[str] = []

        async def decline(
            context: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            forms.append(params.message)
            return ElicitResult(action="decline")

        async with (
            http_client(agent.token) as http,
            Client(
                streamable_http_client(url, http_client=http),
                mode="legacy",
                elicitation_callback=decline,
            ) as client,
        ):
            _, details = tool_error(await client.call_tool(ASK, arguments))
            await answer_over_rest(world, alice, details["pending_id"], option=2)
            assert structured(await client.call_tool(ASK, arguments)) == answered(2)
        assert forms  # the first call did offer the form


async def test_a_poll_is_one_json_reply_and_a_mislabelled_ask_is_refused(world: McpWorld) -> None:
    """#35: a 2026-07-28 ``tasks/get`` is served with the SDK's JSON replies (no response
    stream set up for a read that answers at once): one ``application/json`` JSON-RPC
    response. The route is chosen by the ``Mcp-Method`` header, so a blocking ask labelled
    ``tasks/get`` must not run there: the SDK checks the header against the body and refuses
    it before any question is asked."""
    alice = world.person("alice")
    async with http_client(alice.token) as http:
        created = await call_ask(http, world.agent_url, ASK, {"questions": question_args(1)})
        poll = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tasks/get",
            "params": {"taskId": created["taskId"], "_meta": _envelope()},
        }
        polled = await http.post(world.agent_url, json=poll, headers=_headers("tasks/get"))
        ask = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {
                "name": ASK,
                "arguments": {"questions": question_args(1)},
                "_meta": _envelope(),
            },
        }
        mislabelled = await http.post(world.agent_url, json=ask, headers=_headers("tasks/get"))
    assert polled.status_code == 200
    assert polled.headers["content-type"].startswith("application/json")
    assert polled.json()["result"]["status"] == "working"
    assert mislabelled.headers["content-type"].startswith("application/json")
    assert "error" in mislabelled.json(), mislabelled.text
    assert "result" not in mislabelled.json()
    assert await pending(world, alice) == [created["_meta"]["dev.clarion/pending-id"]]


def _envelope() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": capabilities(),
        "io.modelcontextprotocol/clientInfo": {"name": "rpc-test", "version": "1"},
    }


def _headers(method: str) -> dict[str, str]:
    return {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": method,
    }
