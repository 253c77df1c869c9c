"""Issue #14's limits, on REST and MCP alike, against one served application: every limit is
accepted at its value and refused one past it with the documented status and message, and a
refusal writes nothing (the pending list is unchanged)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest

from clarion.domain.limits import Limits
from clarion.domain.model import Identity, Outcome
from clarion.domain.resolved_by import Surface
from tests.integration.mcp.harness import (
    ASK,
    LIST_PENDING,
    LIST_TASKS,
    Agent,
    McpWorld,
    Person,
    drafts,
    http_client,
    mcp_client,
    question_args,
    serving,
    structured,
    tool_error,
    watching,
)

SMALL_TEXT = Limits(
    max_title=8,
    max_prompt=20,
    max_option_label=10,
    max_option_description=12,
    max_context=30,
    max_context_paragraph=10,
    max_id=10,
)

Mutation = Callable[[list[dict[str, Any]], dict[str, Any], int], None]


def _set_question(key: str) -> Mutation:
    def mutate(questions: list[dict[str, Any]], extra: dict[str, Any], length: int) -> None:
        questions[0][key] = "x" * length

    return mutate


def _set_option(key: str) -> Mutation:
    def mutate(questions: list[dict[str, Any]], extra: dict[str, Any], length: int) -> None:
        questions[0]["options"][1][key] = "x" * length

    return mutate


def _set_context(questions: list[dict[str, Any]], extra: dict[str, Any], length: int) -> None:
    extra["context"] = "x" * length


def _set_paragraph(questions: list[dict[str, Any]], extra: dict[str, Any], length: int) -> None:
    extra["context_paragraphs"] = ["first", "x" * length]


# (field named in the refusal, the limit, how to reach a length, what the message calls it)
TEXT_CASES = [
    ("questions[0].title", SMALL_TEXT.max_title, _set_question("title"), "a title"),
    ("questions[0].prompt", SMALL_TEXT.max_prompt, _set_question("prompt"), "a prompt"),
    ("questions[0].id", SMALL_TEXT.max_id, _set_question("id"), "an id"),
    ("questions[0].options[1].label", SMALL_TEXT.max_option_label, _set_option("label"), "a label"),
    (
        "questions[0].options[1].description",
        SMALL_TEXT.max_option_description,
        _set_option("description"),
        "a description",
    ),
    ("questions[0].options[1].option_id", SMALL_TEXT.max_id, _set_option("option_id"), "an id"),
    ("context", SMALL_TEXT.max_context, _set_context, "the context"),
]
PARAGRAPH_CASE = (
    "context_paragraphs[1]",
    SMALL_TEXT.max_context_paragraph,
    _set_paragraph,
    "a context paragraph",
)


@asynccontextmanager
async def _served(database_url: str, limits: Limits) -> AsyncIterator[McpWorld]:
    async with serving(McpWorld.build(database_url, progress_interval=0.05, limits=limits)) as w:
        yield w


def _bundle_body(agent: Agent, questions: list[dict[str, Any]], extra: dict[str, Any]) -> Any:
    body = {"session_id": agent.session.id, "questions": questions, **extra}
    body.pop("context_paragraphs", None)  # REST takes one context string
    return body


async def _pending_count(world: McpWorld, person: Person) -> int:
    async with http_client(person.token) as http:
        response = await http.get(f"{world.base_url}/api/v1/clarification/pending?limit=200")
    assert response.status_code == 200
    count = response.json()["count"]
    assert isinstance(count, int)
    return count


async def _ask_and_reject(world: McpWorld, agent: Agent, arguments: dict[str, Any]) -> Any:
    """Run the blocking ask on ``agent``'s endpoint until its bundle is listed, reject it,
    and return the tool's result (an accepted ask)."""
    results: list[Any] = []
    async with watching(world) as log, anyio.create_task_group() as tasks:

        async def ask() -> None:
            async with mcp_client(world.session_url(agent.session.id), token=agent.token) as c:
                results.append(await c.call_tool(ASK, arguments))

        tasks.start_soon(ask)
        created = await log.wait_for("bundle.created", session_id=agent.session.id)
        await world.services.resolver.resolve(
            Identity.internal(), created.pending_id, Outcome.reject("done"), surface=Surface.REST
        )
    return results[0]


async def _ask_refused(world: McpWorld, agent: Agent, arguments: dict[str, Any]) -> Any:
    async with mcp_client(world.session_url(agent.session.id), token=agent.token) as client:
        return await client.call_tool(ASK, arguments)


@pytest.mark.anyio
@pytest.mark.parametrize(("field", "limit", "mutate", "what"), [*TEXT_CASES, PARAGRAPH_CASE])
async def test_every_text_field_is_accepted_at_its_limit_and_refused_one_past_it_on_rest_and_mcp(
    database_url: str, field: str, limit: int, mutate: Mutation, what: str
) -> None:
    async with _served(database_url, SMALL_TEXT) as world:
        alice = world.person("alice")
        expected = f"{field} is too long: {limit + 1} characters, the limit for {what} is {limit}"
        at_limit: tuple[list[dict[str, Any]], dict[str, Any]] = (question_args(), {})
        mutate(*at_limit, limit)
        past: tuple[list[dict[str, Any]], dict[str, Any]] = (question_args(), {})
        mutate(*past, limit + 1)
        agent = await world.agent(alice)
        before = await _pending_count(world, alice)

        # MCP: refused with the field named, nothing listed; then accepted at the limit.
        refused = await _ask_refused(world, agent, {"questions": past[0], **past[1]})
        assert tool_error(refused) == (expected, {"code": "VALIDATION_ERROR", "field": field})
        assert await _pending_count(world, alice) == before
        accepted = await _ask_and_reject(world, agent, {"questions": at_limit[0], **at_limit[1]})
        assert structured(accepted)["rejected"] is True

        if field.startswith("context_paragraphs"):
            return  # REST takes one context string; its limit is the "context" case
        # REST: the same message as a 400, nothing written; then accepted at the limit.
        async with http_client(alice.token) as http:
            url = f"{world.base_url}/api/v1/clarification/request"
            response = await http.post(url, json=_bundle_body(agent, *past))
            assert (response.status_code, response.json()) == (
                400,
                {"error": expected, "field": field},
            )
            assert await _pending_count(world, alice) == before
            response = await http.post(url, json=_bundle_body(agent, *at_limit))
            assert response.status_code == 200
        assert await _pending_count(world, alice) == before + 1


def _padded(document: dict[str, Any], size: int) -> bytes:
    raw = json.dumps(document).encode()
    assert len(raw) <= size
    return raw + b" " * (size - len(raw))


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "limits-test", "version": "1"},
    },
}
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


@pytest.mark.anyio
@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_the_body_limit_is_the_same_on_rest_and_mcp(database_url: str, chunked: bool) -> None:
    limit = 4096
    message = f"request body too large: the limit is {limit} bytes (CLARION_MAX_BODY_BYTES)"
    async with _served(database_url, Limits(max_body_bytes=limit)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        rest_body = _bundle_body(agent, question_args(), {"context": "c"})
        targets = [
            (
                f"{world.base_url}/api/v1/clarification/request",
                rest_body,
                {"Content-Type": "application/json"},
            ),
            (world.external_url, INITIALIZE, MCP_HEADERS),
            (world.session_url(agent.session.id), INITIALIZE, MCP_HEADERS),
        ]
        async with http_client(alice.token) as http:
            for url, document, headers in targets:
                token = agent.token if "/mcp/session/" in url else alice.token
                auth = {**headers, "Authorization": f"Bearer {token}"}
                for size, status in ((limit + 1, 413), (limit, 200)):
                    content = _padded(document, size)
                    if chunked:

                        async def chunks(data: bytes = content) -> AsyncIterator[bytes]:
                            for start in range(0, len(data), 1000):
                                yield data[start : start + 1000]

                        response = await http.post(url, content=chunks(), headers=auth)
                    else:
                        response = await http.post(url, content=content, headers=auth)
                    assert response.status_code == status, (url, size, response.text)
                    if status == 413:
                        assert response.json() == {"error": message}
        # Only the accepted REST request wrote a bundle.
        assert await _pending_count(world, alice) == 1


@pytest.mark.anyio
async def test_active_bundles_per_session_are_capped_alike_on_rest_and_mcp(
    database_url: str,
) -> None:
    message = (
        "too many active clarification requests in this session: the limit is 2 "
        "(CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION)"
    )
    async with _served(database_url, Limits(max_active_bundles_per_session=2)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        url = f"{world.base_url}/api/v1/clarification/request"
        async with http_client(alice.token) as http:
            first = await http.post(
                url, json=_bundle_body(agent, question_args(prefix="First"), {})
            )
            assert first.status_code == 200
            # The MCP ask at the limit is accepted (the session's second active bundle) ...
            async with watching(world) as log, anyio.create_task_group() as tasks:
                results: list[Any] = []

                async def ask() -> None:
                    async with mcp_client(
                        world.session_url(agent.session.id), token=agent.token
                    ) as client:
                        results.append(
                            await client.call_tool(ASK, {"questions": question_args(prefix="Mcp")})
                        )

                tasks.start_soon(ask)
                created = await log.wait_for("bundle.created", session_id=agent.session.id)
                assert created.pending_id != first.json()["pending_id"]
                # ... and one past it is refused on both surfaces, writing nothing.
                third = await http.post(
                    url, json=_bundle_body(agent, question_args(prefix="Third"), {})
                )
                assert (third.status_code, third.json()) == (429, {"error": message})
                refused = await _ask_refused(
                    world, agent, {"questions": question_args(prefix="Other")}
                )
                assert tool_error(refused) == (
                    message,
                    {"code": "LIMIT_EXCEEDED", "limit": "CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION"},
                )
                assert await _pending_count(world, alice) == 2
                # Re-asking an identical live bundle is a reuse, not a new bundle: allowed.
                again = await http.post(
                    url, json=_bundle_body(agent, question_args(prefix="First"), {})
                )
                assert again.json() == first.json()
                await world.services.resolver.resolve(
                    Identity.internal(),
                    created.pending_id,
                    Outcome.reject("done"),
                    surface=Surface.REST,
                )
            assert results
            assert not results[0].is_error
            # Answering one makes room again.
            assert (
                await http.post(url, json=_bundle_body(agent, question_args(prefix="Fourth"), {}))
            ).status_code == 200


@pytest.mark.anyio
async def test_active_bundles_per_identity_are_capped_across_sessions(database_url: str) -> None:
    message = (
        "too many active clarification requests for this identity: the limit is 2 "
        "(CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY)"
    )
    async with _served(database_url, Limits(max_active_bundles_per_identity=2)) as world:
        alice, bob = world.person("alice"), world.person("bob")
        sessions = [await world.agent(alice) for _ in range(3)]
        bobs = await world.agent(bob)
        url = f"{world.base_url}/api/v1/clarification/request"
        async with http_client(alice.token) as http:
            for agent in sessions[:2]:
                created = await http.post(url, json=_bundle_body(agent, question_args(), {}))
                assert created.status_code == 200
            refused = await http.post(url, json=_bundle_body(sessions[2], question_args(), {}))
            assert (refused.status_code, refused.json()) == (429, {"error": message})
        # An agent acts as its workspace's owner: the same count refuses its ask.
        refused_ask = await _ask_refused(world, sessions[2], {"questions": question_args()})
        assert tool_error(refused_ask) == (
            message,
            {"code": "LIMIT_EXCEEDED", "limit": "CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY"},
        )
        assert await _pending_count(world, alice) == 2
        # Another identity is not affected.
        async with http_client(bob.token) as http:
            assert (
                await http.post(url, json=_bundle_body(bobs, question_args(), {}))
            ).status_code == 200


@pytest.mark.anyio
async def test_the_identity_limit_counts_what_the_identity_asked_not_what_it_may_see(
    database_url: str,
) -> None:
    """Issue #14: bundles another identity asked in a workspace everyone sees are listed for
    Bob but do not count against him; his own asks do."""
    async with _served(database_url, Limits(max_active_bundles_per_identity=2)) as world:
        bob = world.person("bob")
        user = world.authentication.create_user("carol", is_admin=True)
        issued = world.authentication.issue_token(user.id, name="carol-token")
        carol = Person(identity=Identity.user(user.id, is_admin=True), token=issued.token)
        shared = await world.services.host.create_workspace(carol.identity, "shared", "")
        for prefix in ("First", "Second"):
            await world.bundle(carol, await world.agent(carol, shared), prefix=prefix)
        assert await _pending_count(world, bob) == 2
        url = f"{world.base_url}/api/v1/clarification/request"
        async with http_client(bob.token) as http:
            for _ in range(2):
                agent = await world.agent(bob)
                created = await http.post(url, json=_bundle_body(agent, question_args(), {}))
                assert created.status_code == 200
            agent = await world.agent(bob)
            refused = await http.post(url, json=_bundle_body(agent, question_args(), {}))
            assert refused.status_code == 429
        assert await _pending_count(world, bob) == 4


@pytest.mark.anyio
async def test_every_page_is_at_most_the_configured_page_size_on_rest_and_mcp(
    database_url: str,
) -> None:
    async with _served(database_url, Limits(max_page_size=3)) as world:
        alice = world.person("alice")
        agent = await world.agent(alice)
        for index in range(4):
            await world.bundle(alice, agent, prefix=f"Q{index}")
        async with http_client(alice.token) as http:
            page = (await http.get(f"{world.base_url}/api/v1/clarification/pending?limit=4")).json()
            assert page["count"] == 3
            assert page["next_cursor"]
            exact = (
                await http.get(f"{world.base_url}/api/v1/clarification/pending?limit=3")
            ).json()
            assert exact["count"] == 3
        async with mcp_client(world.external_url, token=alice.token) as client:
            listed = structured(await client.call_tool(LIST_PENDING, {"limit": 4}))
            assert listed["count"] == 3
            assert listed["next_cursor"]
            rest = structured(
                await client.call_tool(LIST_PENDING, {"cursor": listed["next_cursor"]})
            )
            assert rest["count"] == 1


async def _walk(http: Any, url: str, key: str, limit: int | None = None) -> list[list[Any]]:
    """Every page of a host list (``key`` names its array), following ``next_cursor``."""
    pages: list[list[Any]] = []
    cursor = ""
    while True:
        params = {"cursor": cursor} if cursor else {}
        if limit is not None:
            params["limit"] = str(limit)
        response = await http.get(url, params=params)
        assert response.status_code == 200, response.text
        body = response.json()
        pages.append([item["id"] for item in body[key]])
        if "total" in body:
            assert body["total"] == len(body[key])
        cursor = body["next_cursor"]
        if not cursor:
            return pages
        assert len(pages) < 20


@pytest.mark.anyio
async def test_every_host_list_pages_by_cursor_within_the_page_sizes_on_rest_capped_on_mcp(
    database_url: str,
) -> None:
    """Issue #14 "page size of every list": workspaces, tasks, a transcript and its resumes
    page by cursor at CLARION_DEFAULT_PAGE_SIZE (2 here) or the ``limit`` asked, accepted at
    CLARION_MAX_PAGE_SIZE (3) and refused one past it (400 naming ``limit``); a corrupt cursor
    is a 400 naming ``cursor``. The MCP ``list_tasks`` takes no cursor (its input is pinned),
    so it returns at most CLARION_MAX_PAGE_SIZE tasks, the oldest."""
    async with _served(database_url, Limits(max_page_size=3, default_page_size=2)) as world:
        alice, bob = world.person("alice"), world.person("bob")
        agents = [await world.agent(alice) for _ in range(4)]
        await world.agent(bob)  # a foreign workspace and task, never listed to alice
        session = agents[0].session.id
        await world.bundle(alice, agents[0], count=3)
        base = world.base_url
        lists = {
            "workspaces": f"{base}/api/v1/workspaces",
            "tasks": f"{base}/api/v1/tasks",
            "messages": f"{base}/api/v1/sessions/{session}/messages",
            "resumes": f"{base}/api/v1/sessions/{session}/resumes",
        }
        async with http_client(alice.token) as http:
            workspaces = await _walk(http, lists["workspaces"], "workspaces")
            assert workspaces == [
                [agents[0].workspace.id, agents[1].workspace.id],  # type: ignore[union-attr]
                [agents[2].workspace.id, agents[3].workspace.id],  # type: ignore[union-attr]
            ]
            tasks = await _walk(http, lists["tasks"], "tasks", limit=3)
            assert tasks == [[a.task.id for a in agents[:3]], [agents[3].task.id]]
            messages = await _walk(http, lists["messages"], "messages", limit=1)
            assert [len(page) for page in messages] == [1, 1, 1]
            assert len({m for page in messages for m in page}) == 3
            assert await _walk(http, lists["resumes"], "resumes") == [[]]
            for key, url in lists.items():
                for bad, field in (("4", "limit"), ("0", "limit"), ("two", "limit")):
                    refused = await http.get(url, params={"limit": bad})
                    assert refused.status_code == 400, (key, bad)
                    assert refused.json()["field"] == field, refused.text
                over = (await http.get(url, params={"limit": "4"})).json()["error"]
                assert "CLARION_MAX_PAGE_SIZE" in over
                corrupt = await http.get(url, params={"cursor": "not-a-cursor!"})
                assert corrupt.status_code == 400
                assert corrupt.json()["field"] == "cursor", corrupt.text
        async with mcp_client(world.external_url, token=alice.token) as client:
            listed = structured(await client.call_tool(LIST_TASKS, {}))
        assert [task["id"] for task in listed["tasks"]] == [a.task.id for a in agents[:3]]
        assert listed["total"] == 3


async def _walk_bundles(fetch: Callable[[str], Any]) -> list[tuple[list[str], int]]:
    """Every page of a bundle list — (its pending ids, its bytes) — following
    ``next_cursor``; ``fetch(cursor)`` returns (body, bytes)."""
    pages: list[tuple[list[str], int]] = []
    cursor = ""
    while True:
        body, size = await fetch(cursor)
        assert body["count"] == len(body["bundles"])
        pages.append(([bundle["pending_id"] for bundle in body["bundles"]], size))
        cursor = body["next_cursor"]
        if not cursor:
            return pages
        assert len(pages) < 40


@pytest.mark.anyio
async def test_list_pages_are_bounded_in_bytes_and_the_cursor_walk_loses_nothing(
    database_url: str,
) -> None:
    """#29 F8: with ``CLARION_MAX_LIST_BYTES`` at 16 KiB, ``limit=200`` over 12 bundles of
    ~5 KB pages by bytes on REST (pending and resolved) and MCP: every page is within the
    budget (plus its envelope) or a single bundle, and the pages hold every bundle once."""
    budget = 16 * 1024
    envelope = 200
    limits = Limits(max_list_bytes=budget, max_context=6000)
    async with _served(database_url, limits) as world:
        alice = world.person("alice")
        created: list[str] = []
        for _ in range(2):
            agent = await world.agent(alice)
            for index in range(6):
                created.append(
                    await world.services.asking.create(
                        alice.identity,
                        agent.session.id,
                        drafts(1, prefix=f"Q{len(created)}-{index}"),
                        "é" * 2500,  # 5,000 bytes of UTF-8
                    )
                )
        base = f"{world.base_url}/api/v1/clarification"
        async with http_client(alice.token) as http:

            async def rest(path: str, cursor: str) -> tuple[Any, int]:
                params = {"limit": "200", **({"cursor": cursor} if cursor else {})}
                response = await http.get(f"{base}/{path}", params=params)
                assert response.status_code == 200, response.text
                return response.json(), len(response.content)

            pending = await _walk_bundles(lambda cursor: rest("pending", cursor))
            async with mcp_client(world.external_url, token=alice.token) as client:

                async def mcp(cursor: str) -> tuple[Any, int]:
                    arguments: dict[str, Any] = {"limit": 200}
                    if cursor:
                        arguments["cursor"] = cursor
                    body = structured(await client.call_tool(LIST_PENDING, arguments))
                    return body, len(json.dumps(body, ensure_ascii=False).encode())

                listed = await _walk_bundles(mcp)
            for outcome in created:
                await world.services.resolver.resolve(
                    Identity.internal(), outcome, Outcome.reject("r" * 2000), surface=Surface.REST
                )
            resolved = await _walk_bundles(lambda cursor: rest("resolved", cursor))
    for pages, order in ((pending, created), (listed, created), (resolved, created[::-1])):
        assert [pending_id for ids, _ in pages for pending_id in ids] == order
        assert len(pages) >= 4
        for ids, size in pages:
            assert ids
            assert len(ids) == 1 or size <= budget + envelope, (len(ids), size)
