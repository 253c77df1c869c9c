"""``ask_user_question_kandev`` on the in-session surface, answered through the external one."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.integration.mcp.harness import (
    ANSWER,
    ASK,
    LIST_PENDING,
    McpWorld,
    Person,
    answers_for,
    mcp_client,
    question_args,
    serving,
    structured,
    tool_error,
    watching,
)

pytestmark = pytest.mark.anyio


async def test_scenario_1_blocked_agent_receives_the_external_answer_in_the_same_call(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """Scenario 1 (§9.25 fixed): every selected option reaches the live agent."""
    agent = await world.agent(alice)
    seen: list[float] = []
    pinged = anyio.Event()
    result: dict[str, Any] = {}

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)
        pinged.set()

    async def ask() -> None:
        async with mcp_client(
            world.session_url(agent.session.id), token=agent.token, mode=mode
        ) as c:
            outcome = await c.call_tool(
                ASK,
                {"questions": question_args(2, options=3), "context": "why"},
                progress_callback=on_progress,
            )
            result.update(structured(outcome))

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
        await pinged.wait()
        async with mcp_client(world.external_url, token=alice.token, mode=mode) as external:
            listed = structured(await external.call_tool(LIST_PENDING, {}))
            [bundle] = listed["bundles"]
            assert bundle["pending_id"] == created.pending_id
            assert [q["question_id"] for q in bundle["questions"]] == ["q1", "q2"]
            assert [o["option_id"] for o in bundle["questions"][0]["options"]] == [
                "q1_opt1",
                "q1_opt2",
                "q1_opt3",
            ]
            answered = structured(
                await external.call_tool(
                    ANSWER,
                    {
                        "pending_id": created.pending_id,
                        "answers": [
                            {"question_id": "q2", "custom_text": "  free text "},
                            {"question_id": "q1", "selected_options": ["q1_opt3", "q1_opt1"]},
                        ],
                    },
                )
            )
    assert answered["claimed"] is True
    assert answered["status"] == "answered"
    assert result == {
        "q1": {
            "answered": True,
            "selected_option": "q1_opt1",
            "selected_options": ["q1_opt1", "q1_opt3"],
            "custom_text": "",
            "rejected": False,
        },
        "q2": {
            "answered": True,
            "selected_option": "",
            "selected_options": [],
            "custom_text": "free text",
            "rejected": False,
        },
        "rejected": False,
        "reject_reason": "",
    }
    assert seen == sorted(set(seen))  # MCP progress increases on every notification
    assert len(seen) >= 1


async def test_abandoned_ask_leaves_a_detached_bundle_that_a_later_answer_resumes(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """Facts §4.9: the client goes away mid-wait; the bundle detaches, stays listed and
    answerable, and the answer resumes the agent through the dispatcher (R7)."""
    agent = await world.agent(alice)
    async with watching(world) as events:
        async with anyio.create_task_group() as tasks:

            async def ask() -> None:
                url = world.session_url(agent.session.id)
                async with mcp_client(url, token=agent.token, mode=mode) as client:
                    await client.call_tool(ASK, {"questions": question_args(1)})

            tasks.start_soon(ask)
            created = await events.wait_for("bundle.created", session_id=agent.session.id)
            tasks.cancel_scope.cancel()
        await events.wait_for("bundle.detached", pending_id=created.pending_id)

    async with mcp_client(world.external_url, token=alice.token, mode=mode) as external:
        listed = structured(await external.call_tool(LIST_PENDING, {}))
        assert [b["pending_id"] for b in listed["bundles"]] == [created.pending_id]
        answered = structured(
            await external.call_tool(
                ANSWER,
                {"pending_id": created.pending_id, "answers": [{"question_id": "q1"}]},
            )
        )
    assert answered["claimed"] is True
    [resume] = world.resumes
    assert resume.pending_id == created.pending_id
    assert resume.session_id == agent.session.id
    assert resume.task_id == agent.task.id


async def test_a_rejection_reaches_the_blocked_agent_with_its_reason(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """R9: an external rejection means the same to the agent as a human skip."""
    agent = await world.agent(alice)
    result: dict[str, Any] = {}

    async def ask() -> None:
        url = world.session_url(agent.session.id)
        async with mcp_client(url, token=agent.token, mode=mode) as client:
            result.update(structured(await client.call_tool(ASK, {"questions": question_args(1)})))

    async with watching(world) as events, anyio.create_task_group() as tasks:
        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
        async with mcp_client(world.external_url, token=alice.token, mode=mode) as external:
            arguments = {"pending_id": created.pending_id, "rejected": True, "reject_reason": "no"}
            assert structured(await external.call_tool(ANSWER, arguments))["claimed"] is True
    assert result == {
        "q1": {
            "answered": False,
            "selected_option": "",
            "selected_options": [],
            "custom_text": "",
            "rejected": True,
        },
        "rejected": True,
        "reject_reason": "no",
    }


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({}, "questions"),
        ({"questions": question_args(5)}, "questions"),
        ({"questions": []}, "questions"),
        ({"questions": "Which?"}, "questions"),
        ({"questions": question_args(1, options=1)}, "questions[0].options"),
        ({"questions": question_args(1, options=7)}, "questions[0].options"),
        ({"questions": [{**question_args(1)[0], "prompt": ""}]}, "questions[0].prompt"),
        (
            {"questions": [{**question_args(1)[0], "options": [{"label": "x"}] * 2}]},
            "questions[0].options[0].description",
        ),
        ({"questions": [{**question_args(1)[0], "id": "rejected"}]}, "questions[0].id"),
        ({"questions": question_args(1), "context_paragraphs": "one"}, "context_paragraphs"),
        ({"questions": question_args(1), "session_id": "other"}, "session_id"),
    ],
    ids=[
        "missing",
        "five",
        "none",
        "not-array",
        "one-option",
        "seven-options",
        "no-prompt",
        "no-description",
        "reserved-id",
        "paragraphs-type",
        "unknown-field",
    ],
)
async def test_invalid_questions_are_tool_errors_naming_the_problem_and_create_nothing(
    world: McpWorld, alice: Person, arguments: dict[str, Any], field: str
) -> None:
    """Facts §2.2/§2.5: 1–4 questions, 2–6 options with label and description."""
    agent = await world.agent(alice)
    url = world.session_url(agent.session.id)
    async with mcp_client(url, token=agent.token) as client:
        text, details = tool_error(await client.call_tool(ASK, arguments))
    assert details == {"code": "VALIDATION_ERROR", "field": field}
    assert text
    async with mcp_client(world.external_url, token=alice.token) as external:
        assert structured(await external.call_tool(LIST_PENDING, {}))["bundles"] == []


async def test_context_paragraphs_override_context_joined_by_blank_lines(
    world: McpWorld, alice: Person
) -> None:
    agent = await world.agent(alice)
    arguments = {
        "questions": question_args(1),
        "context": "ignored",
        "context_paragraphs": ["First.", "Second."],
    }
    async with watching(world) as events, anyio.create_task_group() as tasks:

        async def ask() -> None:
            url = world.session_url(agent.session.id)
            async with mcp_client(url, token=agent.token) as client:
                await client.call_tool(ASK, arguments)

        tasks.start_soon(ask)
        created = await events.wait_for("bundle.created", session_id=agent.session.id)
        async with mcp_client(world.external_url, token=alice.token) as external:
            [bundle] = structured(await external.call_tool(LIST_PENDING, {}))["bundles"]
            await external.call_tool(
                ANSWER, {"pending_id": created.pending_id, "answers": [{"question_id": "q1"}]}
            )
    assert bundle["context"] == "First.\n\nSecond."


async def test_a_wait_that_ends_unanswered_is_a_tool_error_and_the_bundle_stays_answerable(
    sqlite_url: str, mode: str
) -> None:
    """Facts §4.9: the ask times out, the bundle detaches, and a later answer resumes the
    agent through the dispatcher with the M5-resolved task (fixes §9.28)."""
    build = McpWorld.build(sqlite_url, progress_interval=0.05, ask_timeout=0.5)
    async with serving(build) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        url = world.session_url(agent.session.id)
        async with mcp_client(url, token=agent.token, mode=mode) as client:
            text, details = tool_error(await client.call_tool(ASK, {"questions": question_args(1)}))
        assert text.startswith("clarification request timed out or was cancelled. ")
        assert details["code"] == "WAIT_ENDED"
        assert details["reason"] == "timeout"
        pending_id = details["pending_id"]
        async with mcp_client(world.external_url, token=alice.token, mode=mode) as external:
            assert structured(await external.call_tool(LIST_PENDING, {}))["count"] == 1
            arguments = {"pending_id": pending_id, "answers": answers_for(1, text="late")}
            assert structured(await external.call_tool(ANSWER, arguments))["claimed"] is True
        [resume] = world.resumes
        assert (resume.pending_id, resume.task_id) == (pending_id, agent.task.id)
        assert "late" in resume.prompt


async def test_an_unknown_session_is_not_found_when_auth_is_disabled(sqlite_url: str) -> None:
    async with (
        serving(McpWorld.build(sqlite_url, auth_enabled=False)) as world,
        mcp_client(world.session_url("no-such-session")) as client,
    ):
        text, details = tool_error(await client.call_tool(ASK, {"questions": question_args(1)}))
    assert (text, details) == ("session not found", {"code": "NOT_FOUND"})
