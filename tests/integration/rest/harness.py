"""A REST application over real adapters, and the HTTP steps the REST tests share.

``RestWorld`` builds the application the way a composition root would — in-memory (or SQL)
repositories, the in-process waiters, event bus and outbox resume dispatcher, ``build_services``
and ``create_rest_app`` — with two users (alice and bob) who each own a workspace, so every
test can ask "what does a caller who may not see this get?".
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
import attrs
import httpx2
from sqlalchemy.engine import Engine
from starlette.applications import Starlette
from starlette.testclient import TestClient

from clarion.adapters.events.fanout import InProcessEventBus
from clarion.adapters.http_guard import HostAllowlist
from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryGroupDirectory,
    InMemoryHostRepository,
    InMemoryStandingApprovals,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.adapters.rest import create_rest_app
from clarion.adapters.resume import OutboxResumeDispatcher
from clarion.adapters.sql import SqlClaimRepository, SqlHostRepository, SqlTokenStore
from clarion.adapters.system import SystemClock, UuidIds
from clarion.app.usecases.auth import Authentication
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.services import Services, build_services
from clarion.domain.limits import Limits
from clarion.domain.model import Resolution
from clarion.ports.approvals import GroupDirectory, StandingApprovals
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.host import HostRepository
from clarion.ports.resume import ResumeDispatcher
from clarion.ports.tokens import TokenStore
from clarion.ports.waiters import Waiters

Headers = dict[str, str]
# Clarion serves loopback names only by default (DNS-rebinding guard): test clients use one.
LOCAL_URL = "http://127.0.0.1:8765"


def questions(count: int = 1, *, options: int = 2) -> list[dict[str, Any]]:
    """A question set as a caller sends it: ids ``q<i>``, options ``q<i>_opt<j>``."""
    return [
        {
            "id": f"q{i}",
            "title": f"T{i}",
            "prompt": f"Question {i}?",
            "options": [
                {"label": f"Choice {j}", "description": f"Means {j}"} for j in range(1, options + 1)
            ],
        }
        for i in range(1, count + 1)
    ]


def answers(count: int = 1, *, option: int = 1, text: str = "") -> list[dict[str, Any]]:
    return [
        {"question_id": f"q{i}", "selected_options": [f"q{i}_opt{option}"], "custom_text": text}
        for i in range(1, count + 1)
    ]


@attrs.define
class Ports:
    claims: ClaimRepository
    host: HostRepository
    tokens: TokenStore
    # Issue #33: the approvals' groups and standing approvals (None: none kept).
    groups: GroupDirectory | None = None
    standing: StandingApprovals | None = None


def memory_ports() -> Ports:
    store, clock, ids = InMemoryStore(), SystemClock(), UuidIds()
    return Ports(
        claims=InMemoryClaimRepository(store, clock, ids),
        host=InMemoryHostRepository(store, clock, ids),
        tokens=InMemoryTokenStore(store, clock, ids),
        groups=InMemoryGroupDirectory(store, clock, ids),
        standing=InMemoryStandingApprovals(store),
    )


def sql_ports(engine: Engine) -> Ports:
    clock, ids = SystemClock(), UuidIds()
    return Ports(
        claims=SqlClaimRepository(engine, clock, ids),
        host=SqlHostRepository(engine, clock, ids),
        tokens=SqlTokenStore(engine, clock, ids),
    )


@attrs.define
class RestWorld:
    """One application instance (one "process") over ``ports``."""

    ports: Ports
    auth_enabled: bool
    services: Services
    authentication: Authentication
    bus: InProcessEventBus
    app: Starlette

    @classmethod
    def build(
        cls,
        *,
        auth_enabled: bool,
        ports: Ports | None = None,
        ask_timeout: float = 60.0,
        dispatcher: ResumeDispatcher | None = None,
        waiters: Waiters | None = None,
        heartbeat_s: float = 15.0,
        allowed_hosts: tuple[str, ...] = (),
        limits: Limits | None = None,
        authorizer: TaskAuthorizer | None = None,
    ) -> RestWorld:
        ports = ports if ports is not None else memory_ports()
        clock, ids = SystemClock(), UuidIds()
        bus = InProcessEventBus()
        services = build_services(
            claims=ports.claims,
            host=ports.host,
            authorizer=authorizer if authorizer is not None else HostTaskAuthorizer(ports.host),
            waiters=waiters if waiters is not None else InMemoryWaiters(),
            dispatcher=dispatcher
            if dispatcher is not None
            else OutboxResumeDispatcher(ports.claims),
            events=bus,
            clock=clock,
            ids=ids,
            ask_timeout=ask_timeout,
            limits=limits,
            delivery_timeout=5.0,
            resume_timeout=5.0,
            groups=ports.groups,
            standing=ports.standing,
            roster=ports.tokens,
        )
        authentication = Authentication(ports.tokens, clock, ids)
        app = create_rest_app(
            services,
            auth_enabled=auth_enabled,
            authentication=authentication,
            event_source=bus,
            heartbeat_s=heartbeat_s,
            allowed_hosts=HostAllowlist.of(allowed_hosts),
        )
        return cls(
            ports=ports,
            auth_enabled=auth_enabled,
            services=services,
            authentication=authentication,
            bus=bus,
            app=app,
        )

    def bearer(self, name: str, *, is_admin: bool = False) -> tuple[str, Headers]:
        """A new user and the ``Authorization`` header of a fresh token of theirs."""
        user = self.authentication.create_user(name, is_admin=is_admin)
        issued = self.authentication.issue_token(user.id)
        return user.id, {"Authorization": f"Bearer {issued.token}"}


@attrs.define
class Caller:
    """A user with a workspace of their own, a task in it and a running session."""

    user_id: str
    headers: Headers
    workspace_id: str
    task_id: str
    session_id: str


def setup_caller(client: TestClient, world: RestWorld, name: str) -> Caller:
    """Create ``name`` (auth enabled: a real user with a token; disabled: no header at all)
    and give them an owned workspace, a task and a session — all over HTTP."""
    if world.auth_enabled:
        user_id, headers = world.bearer(name)
    else:
        user_id, headers = "", {}
    workspace = ok(client.post("/api/v1/workspaces", json={"name": name}, headers=headers), 201)
    task = ok(
        client.post(
            "/api/v1/tasks",
            json={"title": f"{name}'s task", "workspace_id": workspace["id"]},
            headers=headers,
        ),
        201,
    )
    session = ok(client.post(f"/api/v1/tasks/{task['id']}/sessions", json={}, headers=headers), 201)
    return Caller(
        user_id=user_id,
        headers=headers,
        workspace_id=workspace["id"],
        task_id=task["id"],
        session_id=session["id"],
    )


def ask(client: TestClient, caller: Caller, count: int = 1, **extra: Any) -> str:
    """Create a bundle in the caller's session over ``POST /request``; its pending id."""
    body = {"session_id": caller.session_id, "questions": questions(count), **extra}
    created = ok(client.post("/api/v1/clarification/request", json=body, headers=caller.headers))
    pending_id = created["pending_id"]
    assert isinstance(pending_id, str)
    return pending_id


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, (response.status_code, response.text)
    return response.json()


def error_of(response: Any) -> str:
    """A failure body's ``error`` (R10); a 400 may add ``field`` (#32), nothing else may."""
    body = response.json()
    assert isinstance(body, Mapping), response.text
    assert set(body) - {"field"} == {"error"}, response.text
    assert "field" not in body or response.status_code == 400, response.text
    error = body["error"]
    assert isinstance(error, str)
    return error


def field_of(response: Any) -> str:
    """The JSON path a 400's ``field`` names (#32), asserting the body is exactly
    ``{"error", "field"}`` — so a test checks which field failed without reading prose."""
    assert response.status_code == 400, (response.status_code, response.text)
    body = response.json()
    assert isinstance(body, Mapping), response.text
    assert set(body) == {"error", "field"}, response.text
    field = body["field"]
    assert isinstance(field, str), response.text
    assert field, response.text
    return field


# --- async: every request of a test on the test's own event loop ---------------------------


@asynccontextmanager
async def async_client(app: Starlette) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client calling ``app`` in-process (no socket) on the current event loop."""
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=LOCAL_URL) as client:
        yield client


async def asetup_caller(client: httpx2.AsyncClient, world: RestWorld, name: str) -> Caller:
    """:func:`setup_caller` over an async client."""
    if world.auth_enabled:
        user_id, headers = world.bearer(name)
    else:
        user_id, headers = "", {}
    workspace = ok(
        await client.post("/api/v1/workspaces", json={"name": name}, headers=headers), 201
    )
    task = ok(
        await client.post(
            "/api/v1/tasks", json={"title": name, "workspace_id": workspace["id"]}, headers=headers
        ),
        201,
    )
    session = ok(
        await client.post(f"/api/v1/tasks/{task['id']}/sessions", json={}, headers=headers), 201
    )
    return Caller(user_id, headers, workspace["id"], task["id"], session["id"])


async def aask(client: httpx2.AsyncClient, caller: Caller, count: int = 1) -> str:
    """:func:`ask` over an async client."""
    body = {"session_id": caller.session_id, "questions": questions(count)}
    created = ok(
        await client.post("/api/v1/clarification/request", json=body, headers=caller.headers)
    )
    pending_id = created["pending_id"]
    assert isinstance(pending_id, str)
    return pending_id


class SignallingWaiters(InMemoryWaiters):
    """The in-memory waiters, announcing when a task starts waiting on an entry (so a test
    can answer a waiter that is really waiting, without sleeping)."""

    def __init__(self) -> None:
        super().__init__()
        self._entered: dict[str, anyio.Event] = {}

    def entered(self, pending_id: str) -> anyio.Event:
        return self._entered.setdefault(pending_id, anyio.Event())

    async def wait(self, pending_id: str, timeout: float) -> Resolution:
        self.entered(pending_id).set()
        return await super().wait(pending_id, timeout)
