"""The external surface's tools over HTTP: listing (L1–L16), answering (N1–N9), tasks (T1, T2)."""

from __future__ import annotations

from typing import Any

import pytest
from mcp import Client

from clarion.domain.model import Option, Question, SessionState
from clarion.domain.rows import clarification_metadata
from tests.integration.mcp.harness import (
    ANSWER,
    LIST_PENDING,
    LIST_TASKS,
    Agent,
    McpWorld,
    Person,
    answers_for,
    mcp_client,
    structured,
    tool_error,
)

pytestmark = pytest.mark.anyio

NOT_FOUND = "clarification request not found"
NOT_ACTIVE = "clarification request is no longer active"


async def _pending_ids(client: Client, **arguments: Any) -> list[str]:
    page = structured(await client.call_tool(LIST_PENDING, arguments))
    return [bundle["pending_id"] for bundle in page["bundles"]]


async def _walk(client: Client, limit: int) -> tuple[list[str], list[int]]:
    """Follow ``next_cursor`` to the end; the ids seen and each page's size."""
    seen: list[str] = []
    sizes: list[int] = []
    cursor = ""
    while True:
        page = structured(await client.call_tool(LIST_PENDING, {"limit": limit, "cursor": cursor}))
        assert page["count"] == len(page["bundles"])
        seen += [bundle["pending_id"] for bundle in page["bundles"]]
        sizes.append(page["count"])
        cursor = page["next_cursor"]
        if not cursor:
            return seen, sizes


async def test_l1a_pages_are_full_across_two_workspaces_and_a_cursor_walk_sees_each_once(
    world: McpWorld, alice: Person, bob: Person, mode: str
) -> None:
    """L1a, L6, L9, L11: visibility is a query predicate, so ``limit`` counts bundles
    returned; a foreign workspace's bundles never appear (L1)."""
    first, second = await world.workspace(alice, "one"), await world.workspace(alice, "two")
    foreign = await world.workspace(bob, "bob's")
    mine: list[str] = []
    for number in range(5):
        agent = await world.agent(alice, first if number % 2 == 0 else second)
        mine.append(await world.bundle(alice, agent, prefix=f"Mine {number}"))
        other = await world.agent(bob, foreign)
        await world.bundle(bob, other, prefix=f"Bob's {number}")
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        everything = await _pending_ids(client)
        walked, sizes = await _walk(client, limit=2)
        in_second = await _pending_ids(client, workspace_id=second.id)
        in_foreign = await _pending_ids(client, workspace_id=foreign.id)
    assert everything == mine  # oldest first (L6)
    assert walked == mine
    assert sizes == [2, 2, 1]
    assert in_second == [mine[1], mine[3]]  # L7
    assert in_foreign == []  # L7: same as an empty workspace, no leak


async def test_l2a_superseded_and_terminal_session_bundles_are_not_listed(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """L2a/D4: an older turn's bundle and a terminal session's still-pending rows are not
    active; answering the superseded one is the distinct not-active error (N4a)."""
    live = await world.agent(alice)
    superseded = await world.agent(alice)
    terminal = await world.agent(alice)
    live_id = await world.bundle(alice, live)
    superseded_id = await world.bundle(alice, superseded)
    terminal_id = await world.bundle(alice, terminal)
    await world.services.lifecycle.start_turn(alice.identity, superseded.session.id)
    # Straight through the repository: the rows stay "pending", only the session is terminal.
    world.host_repository.set_session_state(terminal.session.id, SessionState.FAILED)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        assert await _pending_ids(client) == [live_id]
        for pending_id, why in ((superseded_id, "superseded"), (terminal_id, "session_ended")):
            result = await client.call_tool(
                ANSWER, {"pending_id": pending_id, "answers": answers_for(1)}
            )
            # #30: the spec's text and code, and why the bundle closed.
            assert tool_error(result) == (NOT_ACTIVE, {"code": "CONFLICT", "closed_reason": why})


def _seed_bundle_without_question_ids(world: McpWorld, agent: Agent) -> str:
    """A legacy bundle whose rows carry neither ``question_id`` nor ``question.id`` (L16)."""
    pending_id = "legacy-no-question-id"
    turn = world.host_repository.current_turn(agent.session.id)
    assert turn is not None
    question = Question(
        id="",
        prompt="Which?",
        options=(Option("a", "A", "first"), Option("b", "B", "second")),
    )
    metadata = clarification_metadata(
        pending_id=pending_id, question=question, index=0, total=1, context=""
    )
    del metadata["question_id"]
    del metadata["question"]["id"]
    world.host_repository.append_message(
        agent.session.id,
        turn_id=turn.id,
        content="Which?",
        author_type="agent",
        type="clarification_request",
        metadata=metadata,
    )
    return pending_id


async def test_l16_a_bundle_missing_a_question_id_is_not_listed_and_answering_it_is_invalid(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """L16: excluded from the list; answer and rejection alike are a validation error naming
    the condition, never an internal error (R4a)."""
    agent = await world.agent(alice)
    pending_id = _seed_bundle_without_question_ids(world, agent)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        assert await _pending_ids(client) == []
        for outcome in ({"answers": [{"question_id": "q1"}]}, {"rejected": True}):
            result = await client.call_tool(ANSWER, {"pending_id": pending_id, **outcome})
            text, details = tool_error(result)
            assert details == {"code": "VALIDATION_ERROR", "field": "question_id"}
            assert "question_id" in text


async def test_scenario_4_another_users_token_cannot_list_or_answer_a_foreign_bundle(
    world: McpWorld, alice: Person, bob: Person, mode: str
) -> None:
    """Scenario 4, N5, A3: the foreign bundle's error equals a fabricated id's, to the byte."""
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent)
    async with mcp_client(world.external_url, token=bob.token, mode=mode) as client:
        assert await _pending_ids(client) == []
        tasks = structured(await client.call_tool(LIST_TASKS, {}))
        assert tasks == {"tasks": [], "total": 0}
        foreign = await client.call_tool(
            ANSWER, {"pending_id": pending_id, "answers": answers_for(1)}
        )
        fabricated = await client.call_tool(
            ANSWER, {"pending_id": "no-such-bundle", "answers": answers_for(1)}
        )
    assert tool_error(foreign) == tool_error(fabricated) == (NOT_FOUND, {"code": "NOT_FOUND"})
    assert foreign.content == fabricated.content
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as owner:
        assert await _pending_ids(owner) == [pending_id]  # untouched


async def test_n3_n4_the_winner_claims_and_a_later_caller_gets_the_winners_payload(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """N3/N3a: normalized answers; N4: the loser — even a rejection — is a success carrying
    the winner's status and response, not an error; the bundle then leaves the list."""
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent, count=2)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        won = structured(
            await client.call_tool(
                ANSWER,
                {
                    "pending_id": pending_id,
                    "answers": [
                        {"question_id": "q2", "selected_options": ["q2_opt2", "q2_opt1"]},
                        {"question_id": "q1", "custom_text": "  because  "},
                    ],
                },
            )
        )
        lost = structured(
            await client.call_tool(
                ANSWER, {"pending_id": pending_id, "rejected": True, "reject_reason": "late"}
            )
        )
        assert await _pending_ids(client) == []
    assert won["claimed"] is True
    assert lost["claimed"] is False
    assert won["status"] == lost["status"] == "answered"
    assert won["response"] == lost["response"]
    assert won["response"]["answers"] == [
        {"question_id": "q1", "selected_options": [], "custom_text": "because"},
        {"question_id": "q2", "selected_options": ["q2_opt1", "q2_opt2"], "custom_text": ""},
    ]
    assert won["response"]["rejected"] is False
    assert won["response"]["reject_reason"] == ""


async def test_a_rejection_claims_with_reject_reason_and_empty_answers(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """N1 with ``reject_reason`` (the spec's ``reason``), R12's always-present keys."""
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        rejected = structured(
            await client.call_tool(
                ANSWER, {"pending_id": pending_id, "rejected": True, "reject_reason": " no "}
            )
        )
    assert rejected["claimed"] is True
    assert rejected["status"] == "rejected"
    response = rejected["response"]
    assert (response["answers"], response["rejected"], response["reject_reason"]) == (
        [],
        True,
        "no",
    )
    assert world.resumes == []  # R9: a detached rejection resumes nobody


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"answers": answers_for(1)}, "pending_id"),
        ({"pending_id": 7, "answers": answers_for(1)}, "pending_id"),
        ({"pending_id": "{id}", "rejected": True, "reason": "x"}, "reason"),
        (
            {
                "pending_id": "{id}",
                "answers": [{"question_id": "q1", "selected_options": ["nope"]}],
            },
            "answers[0].selected_options",
        ),
        ({"pending_id": "{id}", "rejected": True, "answers": answers_for(1)}, "answers"),
        ({"pending_id": "{id}", "answers": []}, "answers"),
        (
            {"pending_id": "{id}", "answers": [{"question_id": "q1", "custom_text": 5}]},
            "answers[0].custom_text",
        ),
        (
            {"pending_id": "{id}", "answers": answers_for(1, text="x" * 2001)},
            "answers[0].custom_text",
        ),
    ],
    ids=["no-id", "id-type", "reason", "option", "both", "empty", "text-type", "too-long"],
)
async def test_n6_n9_invalid_answers_are_validation_errors_naming_the_field_and_claim_nothing(
    world: McpWorld, alice: Person, arguments: dict[str, Any], field: str
) -> None:
    """N6–N8b, N8d, N9 (``pending_id`` required and nothing else; ``reason`` is not a field):
    each rule in isolation names its field, and the bundle stays answerable (N8c)."""
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent)
    if arguments.get("pending_id") == "{id}":
        arguments = {**arguments, "pending_id": pending_id}
    async with mcp_client(world.external_url, token=alice.token) as client:
        _, details = tool_error(await client.call_tool(ANSWER, arguments))
        assert details == {"code": "VALIDATION_ERROR", "field": field}
        assert await _pending_ids(client) == [pending_id]


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"cursor": "not a cursor!"}, "cursor"),
        ({"created_since": "yesterday"}, "created_since"),
        ({"created_since": "2026-W01-1T00:00Z"}, "created_since"),  # #29 F20
        ({"limit": "ten"}, "limit"),
        ({"limit": True}, "limit"),
        ({"workspace_id": 3}, "workspace_id"),
        ({"page": 2}, "page"),
    ],
)
async def test_l13_bad_listing_arguments_are_validation_errors_naming_the_argument(
    world: McpWorld, alice: Person, arguments: dict[str, Any], field: str
) -> None:
    async with mcp_client(world.external_url, token=alice.token) as client:
        text, details = tool_error(await client.call_tool(LIST_PENDING, arguments))
    assert details == {"code": "VALIDATION_ERROR", "field": field}
    assert field in text


async def test_l8_l10_l11_filters_clamps_and_the_empty_envelope(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """L10: out-of-range limits are clamped, not rejected; L8: ``created_since`` is inclusive;
    L11: no match is an empty envelope, not an error."""
    agent = await world.agent(alice)
    pending_id = await world.bundle(alice, agent)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        for limit in (0, -5, 500, 2.7):
            assert await _pending_ids(client, limit=limit) == [pending_id]
        created_at = structured(await client.call_tool(LIST_PENDING, {}))["bundles"][0][
            "created_at"
        ]
        # L8: at or after; the listed created_at round-trips as an RFC 3339 argument.
        assert await _pending_ids(client, created_since=created_at) == [pending_id]
        empty = structured(
            await client.call_tool(LIST_PENDING, {"created_since": "2999-01-01T00:00:00+02:00"})
        )
    assert empty == {"bundles": [], "count": 0, "next_cursor": ""}


async def test_t1_t2_list_tasks_carries_pending_actions_null_when_nothing_is_pending(
    world: McpWorld, alice: Person, mode: str
) -> None:
    """T1/T2 on both surfaces, with the optional ``workspace_id`` filter."""
    workspace = await world.workspace(alice)
    blocked = await world.agent(alice, workspace)
    idle = await world.agent(alice, workspace)
    elsewhere = await world.agent(alice)
    await world.bundle(alice, blocked)
    async with mcp_client(world.external_url, token=alice.token, mode=mode) as client:
        listed = structured(await client.call_tool(LIST_TASKS, {"workspace_id": workspace.id}))
        everything = structured(await client.call_tool(LIST_TASKS, {}))
    url = world.session_url(idle.session.id)
    async with mcp_client(url, token=idle.token, mode=mode) as in_session:
        as_agent = structured(await in_session.call_tool(LIST_TASKS, {}))
        filtered = structured(await in_session.call_tool(LIST_TASKS, {"workspace_id": "other"}))
    actions = {
        task["id"]: (task["task_pending_action"], task["primary_session_pending_action"])
        for task in listed["tasks"]
    }
    assert actions == {
        blocked.task.id: ("clarification", "clarification"),
        idle.task.id: (None, None),
    }
    assert listed["total"] == 2
    assert {task["id"] for task in everything["tasks"]} == {
        blocked.task.id,
        idle.task.id,
        elsewhere.task.id,
    }
    # An agent token sees its own session's task only, with the same projection.
    assert as_agent == {
        "tasks": [task for task in everything["tasks"] if task["id"] == idle.task.id],
        "total": 1,
    }
    assert filtered == {"tasks": [], "total": 0}
