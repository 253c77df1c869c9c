"""The notification walk from a claim to a sent e-mail, counted (issue #32).

Runs the real notification worker on a fresh SQLite file, with the real e-mail channel sending
to an in-process SMTP sink (aiosmtpd), for one bundle in a workspace owned by a user whose
``email:`` route hears the event (``--event answerable``, the default: the bundle was just
asked; ``--event resolved``: it was asked, then answered through the resolver, and only the
answer's e-mail is counted). It drives the worker one round (``run_once``) at a time until the
sink has the message and prints, from the first claim of the outbox to the e-mail:

- poll rounds: the worker's rounds that claimed something;
- store transactions: every transaction begun on the engine (SQLAlchemy ``begin`` events);
- task reads: statements reading the ``tasks`` table (``FROM`` or ``JOIN`` it);
- bundle loads: calls of the claim repository's ``load_bundle`` / ``load_visible_bundle``.

    .venv/bin/python -m benchmarks.notification_walk [--event resolved]

The figures are deterministic (a manual clock, one bundle, one route), so one run suffices.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import re
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from email.message import Message
from email.parser import BytesParser
from pathlib import Path
from typing import Any

import attrs
import sqlalchemy as sa
import structlog
from aiosmtpd.controller import Controller

from clarion.adapters.notify import EmailNotifier, SmtpSettings
from clarion.adapters.sql import create_engine, upgrade_database
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Storage, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.model import Answer, Identity, Outcome
from clarion.domain.notifications import ANSWERABLE, RESOLVED, RouteSpec, parse_channel
from clarion.domain.resolved_by import Surface
from clarion.ports.testing import ManualClock, sample_questions

_TASK_READ = re.compile(r"\b(?:FROM|JOIN)\s+tasks\b", re.IGNORECASE)
_MAX_ROUNDS = 10


class Sink:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: object, session: object, envelope: Any) -> str:
        self.messages.append(BytesParser().parsebytes(envelope.content))
        return "250 OK"


@attrs.define
class Counts:
    """What one walk cost."""

    rounds: int = 0
    transactions: int = 0
    task_reads: int = 0
    bundle_loads: int = 0


class _CountingClaims:
    """The claim repository, counting bundle loads (every other call passes through)."""

    def __init__(self, inner: Any, counts: Counts) -> None:
        self._inner = inner
        self._counts = counts

    def __getattr__(self, name: str) -> Any:
        found = getattr(self._inner, name)
        if name not in ("load_bundle", "load_visible_bundle"):
            return found

        def counted(*args: Any, **kwargs: Any) -> Any:
            self._counts.bundle_loads += 1
            return found(*args, **kwargs)

        return counted


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def walk(database: Path, port: int, sink: Sink, event: str = ANSWERABLE) -> Counts:
    """One walk on a fresh database at ``database``: create a bundle (and answer it, for
    ``resolved``), count the worker's work until the sink holds the ``event`` e-mail."""
    clock = ManualClock()
    engine = create_engine(f"sqlite:///{database}")
    upgrade_database(engine)
    storage = Storage.sql(engine, clock, UuidIds())
    email_channel = EmailNotifier(
        SmtpSettings(host="127.0.0.1", port=port, security="none", sender="clarion@example.com")
    )
    clarion = build_clarion(
        Settings(database_url="memory://", public_url="https://clarion.example"),
        storage=storage,
        clock=clock,
        notifiers={"email": email_channel},
    )
    worker, store = clarion.notifications, storage.notifications
    assert worker is not None
    assert store is not None
    user = storage.tokens.create_user("alice")
    workspace = storage.host.create_workspace("ws", user.id)
    store.add_route(
        RouteSpec(
            workspace_id=workspace.id,
            channel=parse_channel("email:alice@example.com"),
            user_id=user.id,
            events=(event,),
        ),
        created_by="bench",
    )
    task = storage.host.create_task("task", workspace.id)
    session, _ = storage.host.create_session(task.id)
    storage.claims.create_bundle(
        pending_id="p-1",
        session_id=session.id,
        task_id=task.id,
        questions=sample_questions(1),
        context="Deploying the release",
    )
    if event == RESOLVED:
        outcome = Outcome.answer(Answer(question_id="q1", selected_options=("q1_opt1",)))
        await clarion.resolver.resolve(Identity.internal(), "p-1", outcome, surface=Surface.REST)

    counts = Counts()
    # Count the worker's bundle loads (the only reader of the repository in the walk).
    worker._claims = _CountingClaims(worker._claims, counts)

    def on_begin(_: object) -> None:
        counts.transactions += 1

    def on_execute(_c: object, _cur: object, statement: str, *_rest: object) -> None:
        if _TASK_READ.search(statement):
            counts.task_reads += 1

    listeners: list[tuple[str, Callable[..., None]]] = [
        ("begin", on_begin),
        ("before_cursor_execute", on_execute),
    ]
    for name, listener in listeners:
        sa.event.listen(engine, name, listener)
    try:
        while not sink.messages:
            if counts.rounds >= _MAX_ROUNDS:
                raise AssertionError(f"no e-mail after {_MAX_ROUNDS} rounds")
            if await worker.run_once():
                counts.rounds += 1
    finally:
        for name, listener in listeners:
            sa.event.remove(engine, name, listener)
        engine.dispose()
    return counts


@contextmanager
def smtp_sink() -> Iterator[tuple[Sink, int]]:
    """A :class:`Sink` listening on a free loopback port (aiosmtpd), and that port."""
    sink, port = Sink(), _free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield sink, port
    finally:
        controller.stop()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--event", choices=(ANSWERABLE, RESOLVED), default=ANSWERABLE)
    event = parser.parse_args(argv).event
    logging.disable(logging.CRITICAL)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.CRITICAL))
    with smtp_sink() as (sink, port), tempfile.TemporaryDirectory() as scratch:
        counts = asyncio.run(walk(Path(scratch) / "clarion.db", port, sink, event))
    print(f"the {event} e-mail, from the first claim of the outbox to the sink")
    print(f"poll rounds (claims that found work): {counts.rounds}")
    print(f"store transactions:                   {counts.transactions}")
    print(f"task reads:                           {counts.task_reads}")
    print(f"bundle loads:                         {counts.bundle_loads}")
    print(f"e-mails sent:                         {len(sink.messages)}")


if __name__ == "__main__":
    main()
