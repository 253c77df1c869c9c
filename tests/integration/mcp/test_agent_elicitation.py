"""Issue #31: ``/mcp/agent`` offers its question in the asking client exactly like the session
endpoint — the SDK's own client over real HTTP, both protocol eras — racing every other surface
through the one resolver; a host's instant decline is "not shown"; URL mode links to the
answer page, bound to the asking identity.

Only SDK clients run here (no Claude Code, VS Code or Cursor build is on these machines).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import datetime, timedelta
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
)

from clarion.adapters.mcp.elicitation import DECLINE_REASON, INPUT_KEY, Setting
from clarion.adapters.system import SystemClock
from clarion.domain.model import Identity
from tests.integration.mcp.forms import (
    ANSWERED_Q1_OPT1,
    FormCallback,
    Late,
    Stall,
    accept,
    answer_over_mcp,
    answer_over_rest,
    fabricated_id_error,
    first_round,
    form_client,
    never,
    race,
    retry,
)
from tests.integration.mcp.harness import (
    ASK,
    McpWorld,
    Person,
    http_client,
    question_args,
    serving,
    structured,
    tool_error,
    watching,
)
from tests.integration.mcp.rpc import call_ask, task_method
from tests.integration.mcp.test_waits_that_survive import pending

pytestmark = pytest.mark.anyio


class SkewClock(SystemClock):
    """The system clock, plus however far a test moved it on (a person's slow decline
    without sleeping through it)."""

    def __init__(self) -> None:
        self.skew = timedelta(0)

    def now(self) -> datetime:
        return super().now() + self.skew


def agent_client(
    world: McpWorld, person: Person, callback: FormCallback, mode: str
) -> AbstractAsyncContextManager[Client]:
    """The SDK client on ``/mcp/agent`` with an elicitation callback (it declares form and
    URL elicitation)."""
    return form_client(world.agent_url, callback, token=person.token, mode=mode)


async def resolved_by(world: McpWorld, person: Person, pending_id: str) -> str:
    """The surface recorded with the winning claim (issue #20)."""
    bundle = await world.services.resolver.authorize_bundle(Identity.internal(), pending_id)
    [recorded] = {row.resolved_by for row in bundle.rows}
    assert recorded is not None
    return recorded.surface.value


# -- the form, both eras ----------------------------------------------------------------------


async def test_a_form_answer_on_the_agent_endpoint_wins_and_is_the_agent_clients(
    world: McpWorld, alice: Person, mode: str
) -> None:
    forms: list[ElicitRequestParams] = []

    async def answer_form(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        forms.append(params)
        return accept(option=2, text="by form")

    async with watching(world) as events:
        async with agent_client(world, alice, answer_form, mode) as client:
            asked = structured(await client.call_tool(ASK, {"questions": question_args(1)}))
        created = await events.wait_for("bundle.created")
    assert asked["q1"]["selected_options"] == ["q1_opt2"]
    assert asked["q1"]["custom_text"] == "by form"
    [form] = forms
    assert isinstance(form, ElicitRequestFormParams)
    later = await answer_over_rest(world, alice, created.pending_id)
    assert later["claimed"] is False
    assert await resolved_by(world, alice, created.pending_id) == "agent_client"
    assert world.resumes == []


async def test_legacy_rest_wins_over_an_open_form_on_the_agent_endpoint_and_cancels_it(
    world: McpWorld, alice: Person
) -> None:
    stall = Stall()
    raced = await race(
        world,
        lambda: agent_client(world, alice, stall, "legacy"),
        lambda pending_id: answer_over_rest(world, alice, pending_id),
        shown=stall.shown,
        after_ask=stall.wait_cancelled,
    )
    assert raced.won["claimed"] is True
    assert raced.asked == ANSWERED_Q1_OPT1
    assert stall.cancelled.is_set()  # notifications/cancelled reached the open form
    assert await resolved_by(world, alice, raced.pending_id) == "rest"


async def test_modern_rest_wins_while_the_form_is_open_and_the_retry_returns_its_answer(
    world: McpWorld, alice: Person
) -> None:
    late = Late()

    async def rest_answer(pending_id: str) -> dict[str, Any]:
        won = await answer_over_rest(world, alice, pending_id)
        late.release()
        return won

    raced = await race(
        world, lambda: agent_client(world, alice, late, "auto"), rest_answer, shown=late.shown
    )
    assert raced.won["claimed"] is True
    assert raced.asked == ANSWERED_Q1_OPT1  # the form submitted later lost the claim


# -- "not shown" and a person's decline -----------------------------------------------------


@pytest.mark.parametrize("action", ["decline", "cancel", "accept_empty"])
async def test_an_instant_decline_is_not_shown_the_question_stays_open_and_rest_answers_it(
    world: McpWorld, alice: Person, mode: str, action: str
) -> None:
    """#31 item 2: a decline 20 ms after the form was offered (VS Code's Claude Code extension
    declines in 15-75 ms), or an accept with nothing in it, is a host that could not show it:
    nothing is recorded, the question stays listed, the agent keeps waiting, and a REST answer
    reaches it."""
    declined = anyio.Event()
    asked: list[dict[str, Any]] = []

    async def host_declines(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        await anyio.sleep(0.02)
        declined.set()
        if action == "accept_empty":  # a renderer that could not show the fields (Codex)
            return ElicitResult(action="accept", content={})
        return ElicitResult(action=action)  # type: ignore[arg-type]

    async def ask() -> None:
        async with agent_client(world, alice, host_declines, mode) as client:
            asked.append(structured(await client.call_tool(ASK, {"questions": question_args(1)})))

    with anyio.fail_after(60):
        async with watching(world) as events, anyio.create_task_group() as tasks:
            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created")
            await declined.wait()
            await anyio.sleep(0.3)  # the server acted on the decline (or would have)
            assert await pending(world, alice) == [created.pending_id]
            assert not any(e.kind == "bundle.resolved" for e in events.events)
            won = await answer_over_rest(world, alice, created.pending_id)
    assert won["claimed"] is True
    assert asked == [ANSWERED_Q1_OPT1]


async def test_a_persons_decline_after_two_seconds_rejects_the_question_like_a_skip(
    sqlite_url: str, mode: str
) -> None:
    """#31 item 2: the form offered "skip", and a person took 2 s (a moved clock) to decline
    it: the spec's rejection (R9), recorded as the agent client's."""
    clock = SkewClock()
    async with serving(McpWorld.build(sqlite_url, clock=clock, progress_interval=0.05)) as world:
        alice = world.person("alice")

        async def person_declines(
            ctx: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            clock.skew += timedelta(seconds=2)
            return ElicitResult(action="decline")

        with anyio.fail_after(60):
            async with watching(world) as events:
                async with agent_client(world, alice, person_declines, mode) as client:
                    result = await client.call_tool(ASK, {"questions": question_args(1)})
                created = await events.wait_for("bundle.created")
        asked = structured(result)
        assert asked["rejected"] is True
        assert asked["reject_reason"] == DECLINE_REASON
        assert await pending(world, alice) == []
        assert await resolved_by(world, alice, created.pending_id) == "agent_client"


async def test_a_persons_cancel_after_two_seconds_leaves_the_question_open(
    sqlite_url: str, mode: str
) -> None:
    """A cancel is a dismissal, not a "no": however slow, the question stays open."""
    clock = SkewClock()
    async with serving(McpWorld.build(sqlite_url, clock=clock, progress_interval=0.05)) as world:
        alice = world.person("alice")
        dismissed = anyio.Event()
        asked: list[dict[str, Any]] = []

        async def person_cancels(
            ctx: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            clock.skew += timedelta(seconds=2)
            dismissed.set()
            return ElicitResult(action="cancel")

        async def ask() -> None:
            async with agent_client(world, alice, person_cancels, mode) as client:
                result = await client.call_tool(ASK, {"questions": question_args(1)})
                asked.append(structured(result))

        with anyio.fail_after(60):
            async with watching(world) as events, anyio.create_task_group() as tasks:
                tasks.start_soon(ask)
                created = await events.wait_for("bundle.created")
                await dismissed.wait()
                await anyio.sleep(0.3)
                assert await pending(world, alice) == [created.pending_id]
                await answer_over_rest(world, alice, created.pending_id)
        assert asked == [ANSWERED_Q1_OPT1]


# -- 2026-07-28: the round composes with the durable asks ---------------------------------------


async def test_modern_a_plain_repeat_of_the_first_round_offers_the_same_question(
    world: McpWorld, alice: Person
) -> None:
    """#28 with #31: the round is a recorded ask, so repeating the call (no state) does not ask
    a second time; a retry with the state and the form's answer ends it."""
    arguments = {"questions": question_args(1)}

    async with agent_client(world, alice, never, "auto") as client:
        first = await first_round(client, arguments)
        again = await first_round(client, arguments)
        assert first.request_state is not None
        assert await pending(world, alice) != []
        [pending_id] = await pending(world, alice)
        done = structured(await retry(client, arguments, first.request_state, accept(option=2)))
    assert again.input_requests is not None
    assert done["q1"]["selected_options"] == ["q1_opt2"]
    assert await pending(world, alice) == []
    assert await resolved_by(world, alice, pending_id) == "agent_client"


async def test_modern_another_identitys_state_is_refused_like_a_fabricated_id(
    world: McpWorld, alice: Person, bob: Person
) -> None:
    arguments = {"questions": question_args(1)}

    async with agent_client(world, alice, never, "auto") as client:
        theirs = await first_round(client, arguments)
    assert theirs.request_state is not None
    async with agent_client(world, bob, never, "auto") as client:
        refused = tool_error(await retry(client, arguments, theirs.request_state, accept()))
    assert refused == await fabricated_id_error(world, bob)
    assert refused[1]["code"] == "NOT_FOUND"
    assert len(await pending(world, alice)) == 1  # alice's question is untouched


async def test_a_task_on_the_agent_endpoint_offers_its_form(world: McpWorld) -> None:
    """The tasks extension keeps carrying the form in ``input_required``, now on /mcp/agent."""
    alice = world.person("alice")
    async with http_client(alice.token) as http:
        created = await call_ask(
            http, world.agent_url, ASK, {"questions": question_args(1)}, forms=True
        )
        polled = await task_method(
            http, world.agent_url, "tasks/get", created["taskId"], forms=True
        )
    assert polled["status"] == "input_required"
    [request] = polled["inputRequests"].values()
    assert request["params"]["mode"] == "form"


# -- URL mode ------------------------------------------------------------------------------


async def sign_in(http: httpx2.AsyncClient, world: McpWorld, person: Person) -> None:
    response = await http.post(f"{world.base_url}/api/v1/auth/login", json={"token": person.token})
    assert response.status_code == 200, response.text


def answer_page_form(option: int) -> dict[str, Any]:
    return {"action": "answer", "q0-options": [f"q1_opt{option}"], "q0-text": ""}


async def test_url_mode_the_link_opens_the_answer_page_and_answering_there_ends_the_wait(
    sqlite_url: str, mode: str
) -> None:
    """#31 item 3: the client gets a link instead of a form; the person opens it signed in as
    the asking identity, answers, and the agent's call returns that answer. Nobody signed in
    is asked to sign in; another user gets the page of a question they may not see."""
    build = McpWorld.build(sqlite_url, elicitation=Setting.URL, progress_interval=0.05)
    async with serving(build) as world:
        alice, bob = world.person("alice"), world.person("bob")
        links: list[str] = []
        opened = anyio.Event()
        asked: list[dict[str, Any]] = []

        async def consent(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
            assert isinstance(params, ElicitRequestURLParams)
            links.append(params.url)
            opened.set()
            return ElicitResult(action="accept")

        async def ask() -> None:
            async with agent_client(world, alice, consent, mode) as client:
                result = await client.call_tool(ASK, {"questions": question_args(1)})
                asked.append(structured(result))

        with anyio.fail_after(60):
            async with watching(world) as events, anyio.create_task_group() as tasks:
                tasks.start_soon(ask)
                created = await events.wait_for("bundle.created")
                await opened.wait()
                [link] = links
                assert link.startswith(f"{world.base_url}/answer/")
                async with httpx2.AsyncClient(timeout=30) as anonymous:
                    signed_out = await anonymous.get(link)
                async with httpx2.AsyncClient(timeout=30) as browser:
                    await sign_in(browser, world, bob)
                    foreign = await browser.get(link)
                    foreign_post = await browser.post(
                        link, data=answer_page_form(1), headers={"Origin": world.base_url}
                    )
                async with httpx2.AsyncClient(timeout=30) as browser:
                    await sign_in(browser, world, alice)
                    page = await browser.get(link)
                    answered = await browser.post(
                        link, data=answer_page_form(2), headers={"Origin": world.base_url}
                    )
        assert signed_out.status_code == 401
        assert "Sign in" in signed_out.text
        assert foreign.status_code == foreign_post.status_code == 404
        assert page.status_code == 200
        assert "Question 1?" in page.text
        assert answered.status_code == 200, answered.text
        assert asked[0]["q1"]["selected_options"] == ["q1_opt2"]
        assert await resolved_by(world, alice, created.pending_id) == "agent_client"


async def test_legacy_url_mode_sends_elicitation_complete_when_the_question_is_settled(
    sqlite_url: str,
) -> None:
    build = McpWorld.build(sqlite_url, elicitation=Setting.URL, progress_interval=0.05)
    async with serving(build) as world:
        alice = world.person("alice")
        ids: list[str] = []
        completed: list[str] = []
        consented = anyio.Event()
        asked: list[dict[str, Any]] = []

        async def consent(ctx: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
            assert isinstance(params, ElicitRequestURLParams)
            assert params.elicitation_id
            ids.append(params.elicitation_id)
            consented.set()
            return ElicitResult(action="accept")

        callback: FormCallback = consent

        async def on_message(message: Any) -> None:
            root = getattr(message, "root", message)
            if getattr(root, "method", "") == "notifications/elicitation/complete":
                completed.append(root.params.elicitation_id)

        async def ask() -> None:
            async with (
                http_client(alice.token) as http,
                Client(
                    streamable_http_client(world.agent_url, http_client=http),
                    mode="legacy",
                    elicitation_callback=callback,
                    message_handler=on_message,
                ) as client,
            ):
                asked.append(
                    structured(await client.call_tool(ASK, {"questions": question_args(1)}))
                )

        with anyio.fail_after(60):
            async with watching(world) as events, anyio.create_task_group() as tasks:
                tasks.start_soon(ask)
                created = await events.wait_for("bundle.created")
                await consented.wait()
                await answer_over_rest(world, alice, created.pending_id)
        assert asked == [ANSWERED_Q1_OPT1]
        assert completed == ids


async def test_modern_url_mode_a_foreign_identity_cannot_use_the_state_of_the_link_round(
    sqlite_url: str,
) -> None:
    build = McpWorld.build(sqlite_url, elicitation=Setting.URL, progress_interval=0.05)
    async with serving(build) as world:
        alice, bob = world.person("alice"), world.person("bob")
        arguments = {"questions": question_args(1)}

        async with agent_client(world, alice, never, "auto") as client:
            first = await client.session.call_tool(ASK, arguments, allow_input_required=True)
        request = (first.input_requests or {})[INPUT_KEY]  # type: ignore[union-attr]
        assert isinstance(request.params, ElicitRequestURLParams)
        state = first.request_state  # type: ignore[union-attr]
        assert state is not None
        async with agent_client(world, bob, never, "auto") as client:
            refused = tool_error(
                await retry(client, arguments, state, ElicitResult(action="accept"))
            )
        assert refused[1]["code"] == "NOT_FOUND"


async def test_the_external_answer_tool_still_wins_over_a_form_on_the_agent_endpoint(
    world: McpWorld, alice: Person
) -> None:
    """The form answers as the calling identity: another surface's answer is a plain loss for
    the form, the same single claim."""
    stall = Stall()
    raced = await race(
        world,
        lambda: agent_client(world, alice, stall, "legacy"),
        lambda pending_id: answer_over_mcp(world, alice, pending_id, mode="legacy"),
        shown=stall.shown,
    )
    assert raced.won["claimed"] is True
    assert raced.asked == ANSWERED_Q1_OPT1
