"""The one client-disconnect helper of every HTTP surface: run some work unless the client goes
away first, and then cancel it (:func:`until_disconnected`).

How a surface notices the client leaving depends on who owns the request's ``receive``:

- :func:`disconnect_message` — REST, whose handler owns ``receive`` once the body is read: the
  ASGI ``http.disconnect`` message;
- :func:`disconnect_polled` — MCP, whose SDK transport owns ``receive``: Starlette's
  ``Request.is_disconnected`` asked every ``interval`` seconds.

(The event stream's response, ``sse-starlette``'s, watches ``receive`` itself.)
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeVar

import anyio
from starlette.requests import Request
from starlette.types import Receive

T = TypeVar("T")
Gone = Callable[[], Awaitable[None]]
"""Returns once the client has gone."""


class Disconnected(enum.Enum):
    """The result of work the client did not wait for."""

    DISCONNECTED = "disconnected"


DISCONNECTED: Final = Disconnected.DISCONNECTED


def disconnect_message(receive: Receive) -> Gone:
    """The client has gone when ``receive`` delivers ``http.disconnect``. ``receive`` must
    have nothing left to deliver but the disconnect: the request body was read (or there is
    none)."""

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    return gone


def disconnect_polled(request: Request, interval: float) -> Gone:
    """The client has gone when ``request.is_disconnected()`` says so, asked every
    ``interval`` seconds (for a transport that reads ``receive`` itself)."""

    async def gone() -> None:
        while not await request.is_disconnected():
            await anyio.sleep(interval)

    return gone


async def until_disconnected(
    gone: Gone, work: Callable[[], Awaitable[T]]
) -> T | Literal[Disconnected.DISCONNECTED]:
    """``work()``'s result, or :data:`DISCONNECTED` when the client went away first (``work``
    is then cancelled). An exception of ``work`` is raised as itself, never wrapped in an
    exception group."""
    result: T | Literal[Disconnected.DISCONNECTED] = DISCONNECTED
    failure: Exception | None = None
    async with anyio.create_task_group() as group:

        async def watch() -> None:
            await gone()
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
