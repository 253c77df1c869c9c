"""What the elicitation tests share (issue #31; one module since #32): those of the session
endpoints (``test_elicitation.py``) and of ``/mcp/agent`` (``test_agent_elicitation.py``).

The SDK client with a form callback, the callbacks the tests answer forms with, the 2026-07-28
rounds driven by hand, and :func:`race`: an ask whose form is open while another surface
answers.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

import anyio
import attrs
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    ElicitRequest,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
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
    structured,
    tool_error,
    watching,
)

# The ask's result when another surface answered q1 with its first option.
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
    """The form submitted with option ``option`` (and ``text``) for each of ``count``
    questions."""
    content: dict[str, Any] = {}
    for i in range(1, count + 1):
        content[f"q{i}_choice"] = [f"q{i}_opt{option}"]
        content[f"q{i}_text"] = text
    return ElicitResult(action="accept", content=content)


def form_of(params: ElicitRequestParams) -> ElicitRequestFormParams:
    assert isinstance(params, ElicitRequestFormParams)
    return params


async def never(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    """The callback of a test that drives the 2026-07-28 rounds itself."""
    raise AssertionError("this test drives the rounds itself")


class Recorder:
    """A form callback that only records that it was called (and declines)."""

    def __init__(self) -> None:
        self.calls: list[ElicitRequestParams] = []

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.calls.append(params)
        return ElicitResult(action="decline")


class Stall:
    """A form left open until the call ends: ``shown`` once it is, ``cancelled`` once
    ``notifications/cancelled`` (or the call's end) reached it."""

    def __init__(self) -> None:
        self.shown = anyio.Event()
        self.cancelled = anyio.Event()

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.shown.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled.set()
        raise AssertionError("unreachable")

    async def wait_cancelled(self) -> None:
        with anyio.fail_after(20):
            await self.cancelled.wait()


class Late:
    """A form submitted (option 2) only once :meth:`release` is called: ``shown`` once it is
    open."""

    def __init__(self) -> None:
        self.shown = anyio.Event()
        self._released = anyio.Event()

    async def __call__(
        self, ctx: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.shown.set()
        await self._released.wait()
        return accept(option=2)

    def release(self) -> None:
        self._released.set()


async def first_round(client: Client, arguments: dict[str, Any]) -> InputRequiredResult:
    """The 2026-07-28 ask's ``input_required`` round, offering the form."""
    first = await client.session.call_tool(ASK, arguments, allow_input_required=True)
    assert isinstance(first, InputRequiredResult)
    request = (first.input_requests or {})[INPUT_KEY]
    assert isinstance(request, ElicitRequest)
    assert isinstance(request.params, ElicitRequestFormParams)
    assert first.request_state
    return first


async def retry(
    client: Client, arguments: dict[str, Any], state: str, response: ElicitResult
) -> CallToolResult:
    """The client's retry of a round: the same arguments, the state and the form's
    ``response``."""
    result = await client.session.call_tool(
        ASK,
        arguments,
        input_responses={INPUT_KEY: response},
        request_state=state,
        allow_input_required=True,
    )
    assert isinstance(result, CallToolResult)
    return result


async def fabricated_id_error(world: McpWorld, person: Person) -> tuple[str, dict[str, Any]]:
    """The external answer tool's error for a bundle id nobody made (what a refused request
    state must look like)."""
    async with mcp_client(world.external_url, token=person.token) as ext:
        arguments = {"pending_id": "no-such-bundle", "answers": answers_for(1)}
        return tool_error(await ext.call_tool(ANSWER, arguments))


async def answer_over_rest(world: McpWorld, person: Person, pending_id: str) -> dict[str, Any]:
    """``person`` answers q1 with its first option over REST."""
    async with http_client(person.token) as http:
        response = await http.post(world.respond_url(pending_id), json={"answers": answers_for(1)})
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


async def answer_over_mcp(
    world: McpWorld, person: Person, pending_id: str, *, mode: str = "auto"
) -> dict[str, Any]:
    """``person`` answers q1 with its first option through the external answer tool."""
    async with mcp_client(world.external_url, token=person.token, mode=mode) as ext:
        arguments = {"pending_id": pending_id, "answers": answers_for(1)}
        return structured(await ext.call_tool(ANSWER, arguments))


@attrs.frozen
class Raced:
    """What :func:`race` saw: the ask's result, the other surface's and the bundle asked."""

    asked: dict[str, Any]
    won: dict[str, Any]
    pending_id: str


async def race(
    world: McpWorld,
    opened: Callable[[], AbstractAsyncContextManager[Client]],
    answer: Callable[[str], Awaitable[dict[str, Any]]],
    *,
    shown: anyio.Event | None = None,
    after_ask: Callable[[], Awaitable[None]] | None = None,
    session_id: str | None = None,
) -> Raced:
    """Ask one question in ``opened``'s client; once the bundle is created (in ``session_id``
    when given) and the form is ``shown``, ``answer`` answers it on another surface.
    ``after_ask`` runs in the client once the ask returned."""
    asked: list[dict[str, Any]] = []

    async def ask() -> None:
        async with opened() as client:
            asked.append(structured(await client.call_tool(ASK, {"questions": question_args(1)})))
            if after_ask is not None:
                await after_ask()

    with anyio.fail_after(60):
        async with watching(world) as events, anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            created = (
                await events.wait_for("bundle.created", session_id=session_id)
                if session_id is not None
                else await events.wait_for("bundle.created")
            )
            if shown is not None:
                await shown.wait()
            won = await answer(created.pending_id)
    [result] = asked
    return Raced(result, won, created.pending_id)
