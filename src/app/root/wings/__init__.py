"""Wings: one small builder per feature of the served application.

Each feature (:mod:`.surfaces`, :mod:`.notifications`, :mod:`.slack`, :mod:`.telemetry`,
:mod:`.maintenance`, and the storage and live-delivery steps) returns a :class:`Wing`: the
routes it adds, the contexts the ASGI lifespan enters (in order) and the background tasks it
runs while serving. :class:`Lifespan` runs the wings' contexts and tasks; the composition root
(:func:`clarion.app.root.compose.build_clarion`) only lists the wings.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from types import TracebackType
from typing import Any

import anyio
import attrs
from anyio.abc import TaskGroup
from starlette.routing import BaseRoute

# A context the lifespan enters at start-up and leaves at shutdown, made when it is entered.
Context = Callable[[], AbstractAsyncContextManager[Any]]
# A background task, run from the end of start-up until shutdown cancels it.
Task = Callable[[], Coroutine[Any, Any, None]]


@attrs.frozen
class Wing:
    """What one feature adds to the served application."""

    routes: tuple[BaseRoute, ...] = ()
    contexts: tuple[Context, ...] = ()
    tasks: tuple[Task, ...] = ()
    # Called first at shutdown, before the tasks are waited for and the contexts left.
    stopping: tuple[Callable[[], None], ...] = ()


def routes_of(wings: Sequence[Wing]) -> list[BaseRoute]:
    return [route for wing in wings for route in wing.routes]


class Lifespan:
    """The ASGI lifespan of a list of wings: at start-up each wing's contexts are entered in
    the wings' order (so the first is left last), then every background task starts; at
    shutdown the ``stopping`` hooks run, the tasks are cancelled and the contexts left in
    reverse."""

    def __init__(self, wings: Sequence[Wing]) -> None:
        self._wings = tuple(wings)
        self._stack: AsyncExitStack | None = None

    def __call__(self, app: object) -> Lifespan:
        """Starlette's ``lifespan=`` hook: one run per served application."""
        return Lifespan(self._wings)

    async def __aenter__(self) -> None:
        async with AsyncExitStack() as stack:
            for wing in self._wings:
                for context in wing.contexts:
                    await stack.enter_async_context(context())
            background = await stack.enter_async_context(anyio.create_task_group())
            stack.push_async_callback(self._stop, background)
            for wing in self._wings:
                for task in wing.tasks:
                    background.start_soon(task)
            self._stack = stack.pop_all()

    async def _stop(self, background: TaskGroup) -> None:
        background.cancel_scope.cancel()
        for wing in self._wings:
            for hook in wing.stopping:
                hook()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        stack, self._stack = self._stack, None
        assert stack is not None, "the lifespan was not entered"
        return await stack.__aexit__(exc_type, exc, traceback)
