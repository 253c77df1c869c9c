"""Issue #13: NUL (and lone surrogates) are refused at every input — REST path and query
parameters, MCP tool arguments — with the same clear error as in bodies, on SQLite and on
PostgreSQL (whose text type refuses NUL with a driver error), and nothing a caller sent reaches
the logs through a driver's error text."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from clarion.adapters.mcp.errors import ERROR_META_KEY
from clarion.adapters.rest.parameters import INVALID_PARAMETER
from tests.integration.mcp.harness import (
    McpWorld,
    answers_for,
    http_client,
    mcp_client,
    serving,
    structured,
    tool_error,
)

pytestmark = pytest.mark.anyio

SECRET = "hunter2-answer-text"


def _clarion_logs(caplog: pytest.LogCaptureFixture) -> str:
    """What Clarion itself logged (the test's own HTTP and MCP clients log their requests)."""
    return "\n".join(
        record.getMessage() for record in caplog.records if record.name.startswith("clarion")
    )


@pytest.fixture(
    name="database_url", params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'clarion.db'}"
    make: Callable[[], str] = request.getfixturevalue("make_postgres_database")
    return make()


@pytest.fixture(name="served")
async def fixture_served(database_url: str) -> AsyncIterator[McpWorld]:
    async with serving(McpWorld.build(database_url)) as world:
        yield world


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/api/v1/clarification/p%00x"),
        ("GET", "/api/v1/clarification/p%00x/wait"),
        ("POST", "/api/v1/clarification/p%00x/respond"),
        ("POST", "/api/v1/clarification/p%00x/cancel"),
        ("GET", "/api/v1/clarification/pending?workspace_id=w%00"),
        ("GET", "/api/v1/clarification/pending?cursor=%00"),
        ("GET", "/api/v1/tasks?workspace_id=w%00x"),
        ("GET", "/api/v1/sessions/s%00/messages"),
        ("POST", "/api/v1/tasks/t%00/sessions"),
    ],
)
async def test_nul_in_a_path_or_query_parameter_is_the_400_bodies_get(
    served: McpWorld, method: str, path: str, caplog: pytest.LogCaptureFixture
) -> None:
    person = served.person("alice")
    caplog.set_level(logging.DEBUG)
    async with http_client(person.token) as http:
        response = await http.request(
            method, served.base_url + path, json={"answers": [{"custom_text": SECRET}]}
        )
    assert response.status_code == 400, response.text
    assert response.json() == {"error": INVALID_PARAMETER}
    assert SECRET not in _clarion_logs(caplog)


async def test_nul_in_mcp_tool_arguments_is_a_validation_error_and_nothing_leaks(
    served: McpWorld, caplog: pytest.LogCaptureFixture
) -> None:
    alice = served.person("alice")
    agent = await served.agent(alice)
    pending_id = await served.bundle(alice, agent)
    caplog.set_level(logging.DEBUG)
    async with mcp_client(served.external_url, token=alice.token) as client:
        calls: dict[str, dict[str, Any]] = {
            "answer_question_kandev": {
                "pending_id": pending_id,
                "answers": [{"question_id": "q1", "custom_text": f"{SECRET}\x00"}],
            },
            "list_pending_questions_kandev": {"workspace_id": "w\x00"},
            "list_tasks_kandev": {"workspace_id": "\x00"},
        }
        for tool, arguments in calls.items():
            result = await client.call_tool(tool, arguments)
            text, details = tool_error(result)
            assert details == {"code": "VALIDATION_ERROR", "field": "arguments"}, tool
            assert "NUL" in text
            assert result.meta is not None
            assert ERROR_META_KEY in result.meta
        # The bundle is untouched and still answerable.
        answered = await client.call_tool(
            "answer_question_kandev", {"pending_id": pending_id, "answers": answers_for(1)}
        )
        assert structured(answered)["claimed"] is True
    assert SECRET not in _clarion_logs(caplog)
