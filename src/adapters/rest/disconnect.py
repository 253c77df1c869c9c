"""The one client-disconnect watcher of the REST surface: run some work unless the client goes
away first (``http.disconnect`` on ``receive``), and then cancel it."""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeVar

import anyio
from starlette.types import Receive

T = TypeVar("T")


class Disconnected(enum.Enum):
    """The result of work the client did not wait for."""

    DISCONNECTED = "disconnected"


DISCONNECTED: Final = Disconnected.DISCONNECTED


async def until_disconnected(
    receive: Receive, work: Callable[[], Awaitable[T]]
) -> T | Literal[Disconnected.DISCONNECTED]:
    """``work()``'s result, or :data:`DISCONNECTED` when the client went away first (``work``
    is then cancelled). An exception of ``work`` is raised as itself, never wrapped in an
    exception group.

    ``receive`` must have nothing left to deliver but the disconnect: call this after the
    request body was read (or for a request without one).
    """
    result: T | Literal[Disconnected.DISCONNECTED] = DISCONNECTED
    failure: Exception | None = None
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            group.cancel_scope.cancel()

        group.start_soon(watch)
        try:
            result = await work()
        except Exception as exc:  # noqa: BLE001 — re-raised below, outside the task group
            failure = exc
        group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return result
