"""How ``clarion serve`` runs the ASGI application under uvicorn: connection limits and timeouts.

uvicorn closes a keep-alive connection that stays idle after a response, but arms no timer
before the first request: a client that connects and sends nothing — or a request head one
byte at a time — holds its socket (a file descriptor) forever, and about a thousand of them
made a server with the common 1,024 open-file limit unreachable. :class:`_GuardedH11` adds
the missing timer, and the concurrency limit keeps the connection count below the open-file
limit:

- ``header_timeout_s``: from the moment a connection waits for a request (when it opens, and
  after each response) until that request's whole head has arrived; past it the connection is
  closed. Applies to idle new connections and to slow ("slowloris") heads alike.
- ``keep_alive_timeout_s``: how long a connection may stay idle between requests.
- ``limit_concurrency``: open connections (and running requests) beyond it are answered 503.
  Long requests — waits, asks, event streams — count, so size it for the agents you expect.

TLS is not terminated here (run Clarion behind a proxy for https), so there is no TLS
handshake to time out.
"""

from __future__ import annotations

import asyncio
import resource
from typing import Any, Final

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from clarion.app.root.settings import Settings

# File descriptors kept free for everything but client connections: the database, logs,
# live delivery, and the listening socket.
RESERVED_FILES: Final = 100


class _GuardedH11(H11Protocol):
    """uvicorn's h11 protocol plus a request-head timeout (see the module docstring)."""

    header_timeout_s: float = 10.0
    keep_alive_timeout_s: float = 5.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # uvicorn types this as whole seconds; its timer accepts any number.
        self.timeout_keep_alive = self.keep_alive_timeout_s  # type: ignore[assignment]
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        cycle = self.cycle
        super().data_received(data)
        if self.cycle is not cycle:  # a whole request head arrived: a request is running
            self._cancel_header_timer()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        self._cancel_header_timer()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timed_out)

    def _cancel_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.cycle is not None and not self.cycle.response_complete:
            return  # a request is being served; its own deadlines apply
        if not self.transport.is_closing():
            self.transport.close()


def guarded_protocol(*, header_timeout_s: float, keep_alive_timeout_s: float) -> type[H11Protocol]:
    """uvicorn's h11 protocol class with these timeouts."""
    return type(
        "ClarionH11Protocol",
        (_GuardedH11,),
        {"header_timeout_s": header_timeout_s, "keep_alive_timeout_s": keep_alive_timeout_s},
    )


def ensure_open_files(limit_concurrency: int) -> str:
    """Raise the process's soft open-file limit (up to its hard limit) so that
    ``limit_concurrency`` connections fit; returns a warning when they still do not, else ""."""
    needed = limit_concurrency + RESERVED_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        if target > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    if soft != resource.RLIM_INFINITY and soft < needed:
        return (
            f"the open-file limit ({soft}) is below CLARION_LIMIT_CONCURRENCY + "
            f"{RESERVED_FILES} ({needed}): lower the limit or raise `ulimit -n`"
        )
    return ""


def uvicorn_config(app: Any, settings: Settings, **extra: Any) -> uvicorn.Config:
    """The uvicorn configuration ``clarion serve`` runs ``app`` with (``extra`` adds to or
    replaces uvicorn options)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "http": guarded_protocol(
            header_timeout_s=settings.header_timeout_s,
            keep_alive_timeout_s=settings.keep_alive_timeout_s,
        ),
        "limit_concurrency": settings.limit_concurrency,
        "log_config": None,
        "access_log": False,
        "lifespan": "on",
    }
    return uvicorn.Config(app, **{**options, **extra})
