"""The one client-disconnect helper of every HTTP surface: run some work unless the client goes
away first, and then cancel it (:func:`until_disconnected`).

How a surface notices the client leaving depends on who owns the request's ``receive``:

- :func:`disconnect_message` — REST, whose handler owns ``receive`` once the body is read: the
  ASGI ``http.disconnect`` message;
- :func:`disconnect_polled` — MCP, whose SDK transport owns ``receive``: the transport is
  handed ``http.disconnect`` when the client leaves, and :class:`DisconnectSignal` (around
  the transport) tells the work at once; Starlette's ``Request.is_disconnected`` is still
  asked now and then, in case the transport stopped reading ``receive`` (issue #35: a
  thousand parked calls each asking every second kept the event loop busy for nothing).

(The event stream's response, ``sse-starlette``'s, watches ``receive`` itself.)
"""

from __future__ import annotations

import enum
from collections.abc import Awaitable, Callable
from typing import Final, Literal, TypeVar

import anyio
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

T = TypeVar("T")
Gone = Callable[[], Awaitable[None]]
"""Returns once the client has gone."""


class Disconnected(enum.Enum):
    """The result of work the client did not wait for."""

    DISCONNECTED = "disconnected"


DISCONNECTED: Final = Disconnected.DISCONNECTED
SIGNAL_KEY: Final = "clarion.disconnect_signal"
# How often a watched request still asks ``is_disconnected`` itself while the signal is
# there: the signal is what notices a departure; this only covers a transport that stopped
# reading ``receive`` while the work goes on. Read when a watch starts.
SIGNALLED_RECHECK_S = 15.0


def disconnect_message(receive: Receive) -> Gone:
    """The client has gone when ``receive`` delivers ``http.disconnect``. ``receive`` must
    have nothing left to deliver but the disconnect: the request body was read (or there is
    none)."""

    async def gone() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass

    return gone


class DisconnectSignal:
    """Pure ASGI wrapper for an application that reads ``receive`` itself (the MCP SDK's
    transport): puts an :class:`anyio.Event` in the request's scope (``SIGNAL_KEY``) and
    sets it once ``receive`` hands that application ``http.disconnect``, so work the request
    started learns at once that its client left, without asking."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        signal = scope[SIGNAL_KEY] = anyio.Event()

        async def observed() -> Message:
            message = await receive()
            if message["type"] == "http.disconnect":
                signal.set()
            return message

        await self._app(scope, observed, send)


def disconnect_polled(request: Request, interval: float) -> Gone:
    """The client has gone when ``request.is_disconnected()`` says so, or — for a request
    under :class:`DisconnectSignal` — as soon as its transport was handed ``http.disconnect``.
    ``is_disconnected`` is asked every ``interval`` seconds without the signal, every
    :data:`SIGNALLED_RECHECK_S` seconds with it (for a transport that reads ``receive``
    itself)."""
    signal = request.scope.get(SIGNAL_KEY)

    async def gone() -> None:
        if not isinstance(signal, anyio.Event):
            while not await request.is_disconnected():
                await anyio.sleep(interval)
            return
        recheck = SIGNALLED_RECHECK_S
        while not signal.is_set() and not await request.is_disconnected():
            with anyio.move_on_after(recheck):
                await signal.wait()

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
