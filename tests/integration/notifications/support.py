"""A Clarion service wired for notification tests: injected storage (memory, SQLite or
PostgreSQL), a manual clock, and a fake channel that records what it is given and answers as
told (no mocks)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import pytest

from clarion.adapters.sql import create_engine, upgrade_database
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Clarion, Storage, build_clarion
from clarion.app.root.settings import Settings
from clarion.app.usecases.notifications import NotificationWorker
from clarion.domain.host import Workspace
from clarion.domain.model import Answer, Identity, Outcome, Resolution
from clarion.domain.notifications import OutboxEntry, Route, RouteSpec, parse_channel
from clarion.domain.resolved_by import Surface
from clarion.domain.rows import Bundle
from clarion.ports.notifications import (
    DeliveryOutcome,
    Notification,
    NotificationStore,
    Notifier,
    Sent,
)
from clarion.ports.testing import ManualClock, sample_questions
from tests.integration.sql.support import empty_database, migrated_postgres_engine

PUBLIC_URL = "https://clarion.example"


class FakeChannel:
    """Records every notification; answers with ``script`` in order, then SENT."""

    def __init__(self) -> None:
        self.sent: list[Notification] = []
        self.script: list[Sent] = []

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        self.sent.append(notification)
        status = self.script.pop(0) if self.script else Sent.SENT
        return DeliveryOutcome(status, "" if status is Sent.SENT else "told to fail")

    def events(self) -> list[tuple[str, str]]:
        return [(n.event, n.route.channel.target) for n in self.sent]


class Counting:
    """A port the worker reads through, counting the calls of ``names`` (issue #32): their
    names in ``calls``, their first arguments in ``keys``."""

    def __init__(self, inner: object, *names: str) -> None:
        self._inner, self._names = inner, names
        self.calls: list[str] = []
        self.keys: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in self._names:
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls.append(name)
            self.keys.append(args[0] if args else None)
            return found(*args, **kwargs)

        return counted


def count_bundle_loads(world: NotifyWorld) -> Counting:
    """Count the worker's bundle loads from now on."""
    worker: Any = world.worker
    bundles = Counting(worker._claims, "load_bundle", "load_visible_bundle", "reread_bundle")
    worker._claims = bundles
    return bundles


@attrs.define
class NotifyWorld:
    clarion: Clarion
    clock: ManualClock
    channel: FakeChannel

    @property
    def worker(self) -> NotificationWorker:
        assert self.clarion.notifications is not None
        return self.clarion.notifications

    @property
    def store(self) -> NotificationStore:
        assert self.clarion.storage.notifications is not None
        return self.clarion.storage.notifications

    def workspace(self, owner_id: str = "") -> Workspace:
        return self.clarion.storage.host.create_workspace("ws", owner_id)

    def ask(self, workspace_id: str = "", pending_id: str = "p-1", questions: int = 1) -> Bundle:
        task = self.clarion.storage.host.create_task("task", workspace_id)
        session, _ = self.clarion.storage.host.create_session(task.id)
        return self.clarion.storage.claims.create_bundle(
            pending_id=pending_id,
            session_id=session.id,
            task_id=task.id,
            questions=sample_questions(questions),
            context="Deploying the release",
        )

    def route(self, workspace_id: str, channel: str, **policy: object) -> Route:
        spec = RouteSpec(workspace_id=workspace_id, channel=parse_channel(channel), **policy)  # type: ignore[arg-type]
        return self.store.add_route(spec, created_by="test")

    async def drain(self) -> None:
        """Run the worker until nothing is due now."""
        for _ in range(50):
            if not await self.worker.run_once():
                return
        raise AssertionError("the worker never ran out of due work")

    def advance(self, seconds: float) -> None:
        self.clock.set(self.clock.peek() + timedelta(seconds=seconds))

    async def answer(self, pending_id: str, option: str = "q1_opt2") -> Resolution:
        outcome = Outcome.answer(Answer(question_id="q1", selected_options=(option,)))
        return await self.clarion.resolver.resolve(
            Identity.internal(), pending_id, outcome, surface=Surface.REST
        )

    def entries(self, pending_id: str = "p-1") -> list[OutboxEntry]:
        return list(self.store.entries(pending_id))


def notify_world(
    storage: Storage,
    clock: ManualClock,
    notifiers: dict[str, Notifier] | None = None,
    **overrides: object,
) -> NotifyWorld:
    """A service on ``storage`` whose channels are ``notifiers`` (default: one fake channel
    for webhook and e-mail), with the settings ``overrides`` on top of the defaults."""
    channel = FakeChannel()
    settings = Settings(
        database_url="memory://",
        public_url=PUBLIC_URL,
        live_delivery="memory",
        **overrides,  # type: ignore[arg-type]
    )
    clarion = build_clarion(
        settings,
        storage=storage,
        clock=clock,
        notifiers=notifiers if notifiers is not None else {"webhook": channel, "email": channel},
    )
    return NotifyWorld(clarion=clarion, clock=clock, channel=channel)


@contextmanager
def storage_for(kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Storage]:
    """Fresh storage of ``kind`` ("memory", "sqlite" or "postgres") on a manual clock."""
    clock = request.getfixturevalue("notify_clock")
    if kind == "memory":
        yield Storage.in_memory(clock, UuidIds())
        return
    if kind == "sqlite":
        engine = create_engine(f"sqlite:///{tmp_path / 'clarion.db'}")
        upgrade_database(engine)
        try:
            yield Storage.sql(engine, clock, UuidIds())
        finally:
            engine.dispose()
        return
    server = request.getfixturevalue("postgres_server_url")
    with migrated_postgres_engine(server) as engine:
        empty_database(engine)
        yield Storage.sql(engine, clock, UuidIds())


class Receiver:
    """A loopback HTTP receiver: records each POST (headers, body) and answers with the next
    status of ``statuses`` (then 200)."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.statuses: list[int] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length)
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/hook"

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
