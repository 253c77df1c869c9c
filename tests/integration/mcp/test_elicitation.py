"""The ask tool's bundle offered as a form in the asking client too (MCP elicitation), racing
every other surface through the one resolver — the SDK's own client over real HTTP, both eras.

On 2025-11-25 sessions the form is an ``elicitation/create`` request on the tool call's stream;
on 2026-07-28 it is an ``input_required`` round answered by the client's retry.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    InputRequiredResult,
)

from clarion.adapters.mcp.elicitation import INPUT_KEY
from tests.integration.mcp.harness import (
    ANSWER,
    ASK,
    PROTOCOL_OF_MODE,
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

pytestmark = pytest.mark.anyio

ANSWERED_Q1_OPT1 = {
    "q1": {
        "answered": True,
        "selected_option": "q1_opt1",
        "selected_options": ["q1_opt1"],
        "custom_text": "",
        "rejected": False,
    },
    "rejected": False,
    "reject_reason": "",
}

FormCallback = Any  # the SDK's ElicitationFnT protocol


@contextlib.asynccontextmanager
async def form_client(
    url: str, callback: FormCallback, *, token: str = "", mode: str = "auto"
) -> AsyncIterator[Client]:
    """The SDK client with an elicitation callback, so it declares form elicitation."""
    async with (
        http_client(token) as http,
        Client(
            streamable_http_client(url, http_client=http),
            mode=mode,
            elicitation_callback=callback,
        ) as client,
    ):
        assert client.protocol_version == PROTOCOL_OF_MODE[mode]
        yield client


def accept(option: int = 1, text: str = "", count: int = 1) -> ElicitResult:
    content: dict[str, Any] = {}
    for i in range(1, count + 1):
        content[f"q{i}_choice"] = [f"q{i}_opt{option}"]
        content[f"q{i}_text"] = text
    return ElicitResult(action="accept", content=content)


def form_of(params: ElicitRequestParams) -> ElicitRequestFormParams:
    assert isinstance(params, ElicitRequestFormParams)
    return params


async def test_a_form_answer_is_the_asks_answer_once_and_a_later_rest_answer_replays_it(
    world: McpWorld, alice: Person, mode: str
) -> None:
    agent = await world.agent(alice)
    forms: list[ElicitRequestFormParams] = []

    async def answer_form(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        forms.append(form_of(params))
        return accept(option=2, text=" from the form ")

    async with watching(world) as events:
        async with form_client(
            world.session_url(agent.session.id), answer_form, token=agent.token, mode=mode
        ) as client:
            asked = structured(
                await client.call_tool(ASK, {"questions": question_args(1), "context": "Why"})
            )
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
    assert asked == {
        "q1": {
            "answered": True,
            "selected_option": "q1_opt2",
            "selected_options": ["q1_opt2"],
            "custom_text": "from the form",
            "rejected": False,
        },
        "rejected": False,
        "reject_reason": "",
    }
    [form] = forms
    assert "Why" in form.message
    properties = form.requested_schema["properties"]
    assert list(properties) == ["q1_choice", "q1_text", "skip", "skip_reason"]
    assert properties["q1_choice"]["items"]["anyOf"] == [
        {"const": "q1_opt1", "title": "Choice 1"},
        {"const": "q1_opt2", "title": "Choice 2"},
    ]
    assert properties["q1_text"]["maxLength"] == properties["skip_reason"]["maxLength"] == 2000
    async with http_client(alice.token) as http:
        later = await http.post(
            world.respond_url(created.pending_id), json={"answers": answers_for(1)}
        )
    assert later.status_code == 200
    body = later.json()
    assert body["claimed"] is False
    assert body["response"]["answers"] == [
        {"question_id": "q1", "selected_options": ["q1_opt2"], "custom_text": "from the form"}
    ]
    assert world.resumes == []  # the asking call took the answer live: nothing to resume


async def test_a_skipped_form_rejects_the_bundle_with_its_reason(
    world: McpWorld, alice: Person, mode: str
) -> None:
    agent = await world.agent(alice)

    async def skip(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        return ElicitResult(action="accept", content={"skip": True, "skip_reason": "not mine"})

    async with form_client(
        world.session_url(agent.session.id), skip, token=agent.token, mode=mode
    ) as client:
        asked = structured(await client.call_tool(ASK, {"questions": question_args(2)}))
    assert asked["rejected"] is True
    assert asked["reject_reason"] == "not mine"
    assert asked["q1"]["rejected"] is True


NOT_AN_ANSWER = {
    "decline": ElicitResult(action="decline"),
    "cancel": ElicitResult(action="cancel"),
    # N8b: one code point over the limit; the resolver refuses it, so nothing is claimed.
    "too_long": ElicitResult(action="accept", content={"q1_text": "x" * 2001}),
    "unknown_option": ElicitResult(action="accept", content={"q1_choice": ["q9_opt9"]}),
}


@pytest.mark.parametrize("reply", sorted(NOT_AN_ANSWER))
async def test_a_declined_or_refused_form_keeps_the_call_waiting_until_the_inbox_answers(
    world: McpWorld, alice: Person, mode: str, reply: str
) -> None:
    agent = await world.agent(alice)
    declined = anyio.Event()
    waiting_after_decline = anyio.Event()
    asked: list[dict[str, Any]] = []

    async def decline(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        declined.set()
        return NOT_AN_ANSWER[reply]

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        if declined.is_set():
            waiting_after_decline.set()

    async def ask() -> None:
        async with form_client(
            world.session_url(agent.session.id), decline, token=agent.token, mode=mode
        ) as client:
            result = await client.call_tool(
                ASK, {"questions": question_args(1)}, progress_callback=on_progress
            )
            asked.append(structured(result))

    with anyio.fail_after(60):
        async with watching(world) as events, anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created", session_id=agent.session.id)
            await waiting_after_decline.wait()
            async with http_client(alice.token) as http:
                response = await http.post(
                    world.respond_url(created.pending_id), json={"answers": answers_for(1)}
                )
    assert response.json()["claimed"] is True
    assert asked == [ANSWERED_Q1_OPT1]
    assert world.resumes == []


async def test_legacy_a_stalled_form_is_cancelled_when_an_external_mcp_answer_wins(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    shown = anyio.Event()
    cancelled = anyio.Event()
    asked: list[dict[str, Any]] = []

    async def stall(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        shown.set()
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        raise AssertionError("unreachable")

    async def ask() -> None:
        async with form_client(
            world.session_url(agent.session.id), stall, token=agent.token, mode="legacy"
        ) as client:
            asked.append(structured(await client.call_tool(ASK, {"questions": question_args(1)})))
            with anyio.fail_after(20):
                await cancelled.wait()

    with anyio.fail_after(60):
        async with watching(world) as events, anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created", session_id=agent.session.id)
            await shown.wait()
            async with mcp_client(world.external_url, token=alice.token, mode="legacy") as ext:
                won = structured(
                    await ext.call_tool(
                        ANSWER, {"pending_id": created.pending_id, "answers": answers_for(1)}
                    )
                )
    assert won["claimed"] is True
    assert asked == [ANSWERED_Q1_OPT1]
    assert cancelled.is_set()  # notifications/cancelled reached the stalled form
    assert world.resumes == []


async def test_modern_an_answer_given_while_the_form_is_open_wins_and_the_retry_gets_the_replay(
    world: McpWorld, alice: Person
) -> None:
    """Between the input_required round and the retry nobody waits on the bundle, so the
    external answer resumes the agent through the dispatcher; the form submitted afterwards
    loses the claim, and the retried call returns the winner's answer."""
    agent = await world.agent(alice)
    shown = anyio.Event()
    external_won = anyio.Event()
    asked: list[dict[str, Any]] = []

    async def late(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        shown.set()
        await external_won.wait()
        return accept(option=2)

    async def ask() -> None:
        async with form_client(
            world.session_url(agent.session.id), late, token=agent.token, mode="auto"
        ) as client:
            asked.append(structured(await client.call_tool(ASK, {"questions": question_args(1)})))

    with anyio.fail_after(60):
        async with watching(world) as events, anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created", session_id=agent.session.id)
            await shown.wait()
            async with mcp_client(world.external_url, token=alice.token) as ext:
                won = structured(
                    await ext.call_tool(
                        ANSWER, {"pending_id": created.pending_id, "answers": answers_for(1)}
                    )
                )
            external_won.set()
    assert won["claimed"] is True
    assert asked == [ANSWERED_Q1_OPT1]
    [resume] = world.resumes
    assert resume.pending_id == created.pending_id


# -- 2026-07-28: the request state -------------------------------------------------------------


async def _first_round(client: Client, arguments: dict[str, Any]) -> InputRequiredResult:
    first = await client.session.call_tool(ASK, arguments, allow_input_required=True)
    assert isinstance(first, InputRequiredResult)
    request = (first.input_requests or {})[INPUT_KEY]
    assert isinstance(request, ElicitRequest)
    assert isinstance(request.params, ElicitRequestFormParams)
    assert first.request_state
    return first


async def _retry(
    client: Client, arguments: dict[str, Any], state: str, response: ElicitResult
) -> CallToolResult:
    result = await client.session.call_tool(
        ASK,
        arguments,
        input_responses={INPUT_KEY: response},
        request_state=state,
        allow_input_required=True,
    )
    assert isinstance(result, CallToolResult)
    return result


async def _never(ctx: ClientRequestContext, params: ElicitRequestParams) -> ErrorData:
    raise AssertionError("this test drives the rounds itself")


class _Recorder:
    """A form callback that only records that it was called (and declines)."""

    def __init__(self) -> None:
        self.calls: list[ElicitRequestParams] = []

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.calls.append(params)
        return ElicitResult(action="decline")


async def _fabricated_id_error(world: McpWorld, person: Person) -> tuple[str, dict[str, Any]]:
    async with mcp_client(world.external_url, token=person.token) as ext:
        arguments = {"pending_id": "no-such-bundle", "answers": answers_for(1)}
        return tool_error(await ext.call_tool(ANSWER, arguments))


async def test_modern_tampered_request_state_is_refused_like_a_fabricated_id_bundle_stays_open(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    arguments = {"questions": question_args(1)}
    async with watching(world) as events:
        async with form_client(
            world.session_url(agent.session.id), _never, token=agent.token
        ) as client:
            first = await _first_round(client, arguments)
            state = first.request_state
            assert state is not None
            flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
            refused = tool_error(await _retry(client, arguments, flipped, accept(option=2)))
            garbage = tool_error(await _retry(client, arguments, "v1.garbage", accept()))
            other_arguments = {"questions": question_args(1, prefix="Other")}
            rebound = tool_error(await _retry(client, other_arguments, state, accept()))
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
    fabricated = await _fabricated_id_error(world, alice)
    assert refused == garbage == rebound == fabricated
    assert fabricated[1]["code"] == "NOT_FOUND"
    # Nothing was claimed: the bundle is still answerable, and nobody waits on it, so the
    # answer resumes the agent through the dispatcher (the client never retried validly).
    async with http_client(alice.token) as http:
        answered = await http.post(
            world.respond_url(created.pending_id), json={"answers": answers_for(1)}
        )
    assert answered.json()["claimed"] is True
    [resume] = world.resumes
    assert resume.pending_id == created.pending_id


async def test_modern_request_state_from_another_session_is_refused_like_a_fabricated_id(
    world: McpWorld, alice: Person, bob: Person
) -> None:
    mine = await world.agent(alice)
    theirs = await world.agent(bob)
    arguments = {"questions": question_args(1)}
    async with form_client(world.session_url(theirs.session.id), _never, token=theirs.token) as c:
        foreign = await _first_round(c, arguments)
    assert foreign.request_state is not None
    async with form_client(world.session_url(mine.session.id), _never, token=mine.token) as c:
        refused = tool_error(await _retry(c, arguments, foreign.request_state, accept()))
    assert refused == await _fabricated_id_error(world, alice)


async def test_modern_a_replayed_retry_after_resolution_returns_the_same_answer_and_claims_nothing(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    arguments = {"questions": question_args(1)}
    async with watching(world) as events:
        async with form_client(
            world.session_url(agent.session.id), _never, token=agent.token
        ) as client:
            first = await _first_round(client, arguments)
            assert first.request_state is not None
            answer = accept(option=2)
            once = structured(await _retry(client, arguments, first.request_state, answer))
            again = structured(await _retry(client, arguments, first.request_state, accept()))
            declined = structured(
                await _retry(client, arguments, first.request_state, ElicitResult(action="decline"))
            )
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
        resolved = [e for e in events.events if e.kind == "bundle.resolved"]
    assert once["q1"]["selected_options"] == ["q1_opt2"]
    assert again == declined == once
    assert [e.pending_id for e in resolved] == [created.pending_id]
    assert world.resumes == []


async def test_with_elicitation_off_a_client_that_offers_forms_gets_the_plain_ask(
    sqlite_url: str, mode: str
) -> None:
    async with serving(McpWorld.build(sqlite_url, elicitation=False)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        asked: list[dict[str, Any]] = []
        recorder = _Recorder()

        async def ask() -> None:
            async with form_client(
                world.session_url(agent.session.id), recorder, token=agent.token, mode=mode
            ) as client:
                asked.append(
                    structured(await client.call_tool(ASK, {"questions": question_args(1)}))
                )

        with anyio.fail_after(60):
            async with watching(world) as events, anyio.create_task_group() as tasks:
                tasks.start_soon(ask)
                created = await events.wait_for("bundle.created", session_id=agent.session.id)
                async with http_client(alice.token) as http:
                    await http.post(
                        world.respond_url(created.pending_id), json={"answers": answers_for(1)}
                    )
        assert asked == [ANSWERED_Q1_OPT1]
        assert recorder.calls == []  # the client was never shown a form


async def test_a_stateless_legacy_client_has_no_channel_for_the_form_and_gets_the_plain_ask(
    sqlite_url: str,
) -> None:
    async with serving(McpWorld.build(sqlite_url, legacy_sessions=False)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        asked: list[dict[str, Any]] = []
        recorder = _Recorder()

        async def ask() -> None:
            async with form_client(
                world.session_url(agent.session.id), recorder, token=agent.token, mode="legacy"
            ) as client:
                asked.append(
                    structured(await client.call_tool(ASK, {"questions": question_args(1)}))
                )

        with anyio.fail_after(60):
            async with watching(world) as events, anyio.create_task_group() as tasks:
                tasks.start_soon(ask)
                created = await events.wait_for("bundle.created", session_id=agent.session.id)
                async with http_client(alice.token) as http:
                    await http.post(
                        world.respond_url(created.pending_id), json={"answers": answers_for(1)}
                    )
        assert asked == [ANSWERED_Q1_OPT1]
        assert recorder.calls == []  # the client was never shown a form
