"""A deadline for request bodies (``CLARION_BODY_TIMEOUT_S``, issue #29 S1).

A request that announces a body (``Content-Length`` above 0, or ``Transfer-Encoding``) must
deliver all of it within ``timeout_s`` of reaching the application. When the application waits
for body bytes past that moment, the client gets 408 ``{"error": "request body timed out: …"}``
with ``Connection: close`` (so the server closes the connection), and the application is told
the client left (``http.disconnect``): whatever it does next is discarded. A client that
trickles one byte now and then cannot hold a connection — and the server's connection slots —
for longer than the deadline.

Only the body is timed: a request without one (an event stream, a wait) and the time a request
takes to be served once its body is in are not affected. When the application had already
started its response, the 408 cannot be sent; the application is told the client left, and
the server closes the connection when it returns.
"""

from __future__ import annotations

from typing import Final

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.adapters.http_guard import announces_body, request_headers, send_error

REQUEST_TIMEOUT: Final = 408
DEFAULT_BODY_TIMEOUT_S: Final = 10.0


def timed_out_message(timeout_s: float) -> str:
    """The 408 text for a deadline of ``timeout_s`` seconds."""
    return (
        f"request body timed out: the whole body must arrive within {timeout_s:g} seconds "
        "(CLARION_BODY_TIMEOUT_S)"
    )


class BodyDeadline:
    """Pure ASGI middleware: the body deadline (see the module docstring)."""

    def __init__(self, app: ASGIApp, *, timeout_s: float) -> None:
        if not timeout_s > 0:
            raise ValueError("timeout_s must be a positive number of seconds")
        self.app = app
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not announces_body(request_headers(scope)):
            await self.app(scope, receive, send)
            return
        deadline = anyio.current_time() + self.timeout_s
        body_in = False
        started = False
        timed_out = False

        async def receive_in_time() -> Message:
            nonlocal body_in, timed_out
            if timed_out:
                return {"type": "http.disconnect"}
            if body_in:
                return await receive()
            message: Message | None = None
            with anyio.move_on_after(deadline - anyio.current_time()):
                message = await receive()
            if message is None:
                timed_out = True
                if not started:
                    await self._refuse(send)
                return {"type": "http.disconnect"}
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_in = True
            return message

        async def send_unless_timed_out(message: Message) -> None:
            nonlocal started
            if timed_out:
                return  # the 408 was the answer
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive_in_time, send_unless_timed_out)
        except Exception:
            if not timed_out:
                raise
            # The application failed on a body that never came; the client has its 408.

    async def _refuse(self, send: Send) -> None:
        message = timed_out_message(self.timeout_s)
        await send_error(send, REQUEST_TIMEOUT, message, (b"connection", b"close"))
