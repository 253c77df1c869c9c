"""The ask tool's bundle offered as a form in the asking client too (MCP elicitation), racing
every other surface through the one resolver — the SDK's own client over real HTTP, both eras.

On 2025-11-25 sessions the form is an ``elicitation/create`` request on the tool call's stream;
on 2026-07-28 it is an ``input_required`` round answered by the client's retry.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp.client.session import ClientRequestContext
from mcp.types import (
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitResult,
)

from tests.integration.mcp.forms import (
    ANSWERED_Q1_OPT1,
    Late,
    Recorder,
    Stall,
    accept,
    answer_over_mcp,
    answer_over_rest,
    fabricated_id_error,
    first_round,
    form_client,
    form_of,
    never,
    race,
    retry,
)
from tests.integration.mcp.harness import (
    ASK,
    McpWorld,
    Person,
    answers_for,
    http_client,
    question_args,
    serving,
    structured,
    tool_error,
    watching,
)

pytestmark = pytest.mark.anyio


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
    stall = Stall()
    raced = await race(
        world,
        lambda: form_client(
            world.session_url(agent.session.id), stall, token=agent.token, mode="legacy"
        ),
        lambda pending_id: answer_over_mcp(world, alice, pending_id, mode="legacy"),
        shown=stall.shown,
        after_ask=stall.wait_cancelled,
        session_id=agent.session.id,
    )
    assert raced.won["claimed"] is True
    assert raced.asked == ANSWERED_Q1_OPT1
    assert stall.cancelled.is_set()  # notifications/cancelled reached the stalled form
    assert world.resumes == []


async def test_modern_an_answer_given_while_the_form_is_open_wins_and_the_retry_gets_the_replay(
    world: McpWorld, alice: Person
) -> None:
    """Between the input_required round and the retry nobody waits on the bundle, so the
    external answer resumes the agent through the dispatcher; the form submitted afterwards
    loses the claim, and the retried call returns the winner's answer."""
    agent = await world.agent(alice)
    late = Late()

    async def external_answer(pending_id: str) -> dict[str, Any]:
        won = await answer_over_mcp(world, alice, pending_id)
        late.release()
        return won

    raced = await race(
        world,
        lambda: form_client(world.session_url(agent.session.id), late, token=agent.token),
        external_answer,
        shown=late.shown,
        session_id=agent.session.id,
    )
    assert raced.won["claimed"] is True
    assert raced.asked == ANSWERED_Q1_OPT1
    [resume] = world.resumes
    assert resume.pending_id == raced.pending_id


# -- 2026-07-28: the request state -------------------------------------------------------------


async def test_modern_tampered_request_state_is_refused_like_a_fabricated_id_bundle_stays_open(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    arguments = {"questions": question_args(1)}
    async with watching(world) as events:
        async with form_client(
            world.session_url(agent.session.id), never, token=agent.token
        ) as client:
            first = await first_round(client, arguments)
            state = first.request_state
            assert state is not None
            flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
            refused = tool_error(await retry(client, arguments, flipped, accept(option=2)))
            garbage = tool_error(await retry(client, arguments, "v1.garbage", accept()))
            other_arguments = {"questions": question_args(1, prefix="Other")}
            rebound = tool_error(await retry(client, other_arguments, state, accept()))
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
    fabricated = await fabricated_id_error(world, alice)
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
    async with form_client(world.session_url(theirs.session.id), never, token=theirs.token) as c:
        foreign = await first_round(c, arguments)
    assert foreign.request_state is not None
    async with form_client(world.session_url(mine.session.id), never, token=mine.token) as c:
        refused = tool_error(await retry(c, arguments, foreign.request_state, accept()))
    assert refused == await fabricated_id_error(world, alice)


async def test_modern_a_replayed_retry_after_resolution_returns_the_same_answer_and_claims_nothing(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    arguments = {"questions": question_args(1)}
    async with watching(world) as events:
        async with form_client(
            world.session_url(agent.session.id), never, token=agent.token
        ) as client:
            first = await first_round(client, arguments)
            assert first.request_state is not None
            answer = accept(option=2)
            once = structured(await retry(client, arguments, first.request_state, answer))
            again = structured(await retry(client, arguments, first.request_state, accept()))
            declined = structured(
                await retry(client, arguments, first.request_state, ElicitResult(action="decline"))
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
        recorder = Recorder()
        raced = await race(
            world,
            lambda: form_client(
                world.session_url(agent.session.id), recorder, token=agent.token, mode=mode
            ),
            lambda pending_id: answer_over_rest(world, alice, pending_id),
            session_id=agent.session.id,
        )
        assert raced.asked == ANSWERED_Q1_OPT1
        assert recorder.calls == []  # the client was never shown a form


async def test_a_stateless_legacy_client_has_no_channel_for_the_form_and_gets_the_plain_ask(
    sqlite_url: str,
) -> None:
    async with serving(McpWorld.build(sqlite_url, legacy_sessions=False)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        recorder = Recorder()
        raced = await race(
            world,
            lambda: form_client(
                world.session_url(agent.session.id), recorder, token=agent.token, mode="legacy"
            ),
            lambda pending_id: answer_over_rest(world, alice, pending_id),
            session_id=agent.session.id,
        )
        assert raced.asked == ANSWERED_Q1_OPT1
        assert recorder.calls == []  # the client was never shown a form
