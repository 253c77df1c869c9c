"""#32: the composition root's lifespan runs the wings' contexts in order and leaves them in
reverse, runs their tasks while serving, and at shutdown calls the stopping hooks and
cancels the tasks before any context is left."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import pytest
from starlette.routing import Route

from clarion.app.root.wings import Lifespan, Wing, routes_of

pytestmark = pytest.mark.anyio


def _context(name: str, log: list[str]) -> Callable[[], AbstractAsyncContextManager[Any]]:
    @asynccontextmanager
    async def context() -> AsyncIterator[None]:
        log.append(f"enter {name}")
        try:
            yield
        finally:
            log.append(f"leave {name}")

    return context


async def test_contexts_in_order_tasks_while_serving_and_shutdown_in_reverse() -> None:
    log: list[str] = []
    started = anyio.Event()

    async def task() -> None:
        log.append("task runs")
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            log.append("task cancelled")

    wings = [
        Wing(contexts=(_context("storage", log),)),
        Wing(contexts=(_context("mcp", log), _context("recovery", log)), tasks=(task,)),
        Wing(stopping=(lambda: log.append("streams closed"),)),
    ]
    async with Lifespan(wings)(object()):
        await started.wait()
        log.append("serving")
    assert log == [
        "enter storage",
        "enter mcp",
        "enter recovery",
        "task runs",
        "serving",
        "streams closed",
        "task cancelled",
        "leave recovery",
        "leave mcp",
        "leave storage",
    ]


async def test_a_failing_start_leaves_what_was_entered_and_starts_no_task() -> None:
    log: list[str] = []

    @asynccontextmanager
    async def failing() -> AsyncIterator[None]:
        if not log:  # pragma: no cover - "storage" was entered first
            yield
        raise RuntimeError("the database is away")

    async def task() -> None:  # pragma: no cover - must never start
        log.append("task runs")

    wings = [Wing(contexts=(_context("storage", log), failing), tasks=(task,))]
    with pytest.raises(RuntimeError, match="the database is away"):
        async with Lifespan(wings)(object()):
            pass  # pragma: no cover
    assert log == ["enter storage", "leave storage"]


async def test_each_served_application_gets_a_run_of_its_own() -> None:
    log: list[str] = []
    lifespan = Lifespan([Wing(contexts=(_context("storage", log),))])
    for _ in range(2):
        async with lifespan(object()):
            pass
    assert log == ["enter storage", "leave storage"] * 2


def test_routes_keep_the_wings_order() -> None:
    async def endpoint(request: Any) -> None:  # pragma: no cover
        return None

    first, second, third = (Route(f"/{n}", endpoint) for n in ("a", "b", "c"))
    assert routes_of([Wing(routes=(first, second)), Wing(), Wing(routes=(third,))]) == [
        first,
        second,
        third,
    ]
