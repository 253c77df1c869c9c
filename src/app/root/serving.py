"""How ``clarion serve`` runs the ASGI application under uvicorn: connection limits and timeouts
(issues #14 and #29).

uvicorn is used through its public API only: :class:`uvicorn.Config` — whose ``http`` option
takes an asyncio protocol class — and :class:`uvicorn.Server`. The class given is a gate of our
own (:func:`gate_class`): an ordinary :class:`asyncio.Protocol` that owns each connection and
hands its bytes, by composition, to the protocol uvicorn itself would use for
``http="httptools"`` (resolved by a :class:`uvicorn.Config` of its own; llhttp's C parser
costs about a quarter less server CPU per small request than h11's pure-Python one, #35).
Nothing of uvicorn's protocol internals is imported, subclassed, read or written — only
asyncio's protocol interface is called; the gate learns when a request starts and ends from an
ASGI middleware around the application (a context variable set while the gate passes bytes on
links the two). What it enforces:

- ``header_timeout_s``: from the moment a connection waits for a request (when it opens, and
  after each response) until that request starts; past it the connection is closed. Applies
  to idle new connections, to slow ("slowloris") heads, and to a connection that keeps
  trickling bytes after its response.
- :data:`MAX_HEAD_BYTES`: a request head (request line and headers) larger than this is
  answered 431 and its connection closed. llhttp sets no bound of its own (h11, used before,
  refused a head past the same 16 KiB), so without it a client could fill the server's memory
  with one endless head within the header timeout. The gate counts the bytes a waiting
  connection sends until the blank line that ends a head.
- ``keep_alive_timeout_s``: how long a connection may stay idle between requests (uvicorn's
  own ``timeout_keep_alive``).
- ``limit_concurrency``: open connections served. The connection beyond it is held in a small
  reserve (:data:`HEALTH_RESERVE` connections; when full, the oldest held one is closed) until
  its request line arrives: ``GET /healthz`` (or ``HEAD``) is served — the health probe always
  gets an answer — and anything else is answered 503. Long requests — waits, asks, event
  streams — hold their connection, so size the limit for the agents you expect. The limit is
  lowered to what the open-file limit allows (:func:`served_limit`), so the connections it
  holds fit; only a burst of new ones, before the refused are closed, can run out.
- ``max_connections_per_client``: connections served to one remote address (an IPv4 address,
  or an IPv6 /64 network); beyond it, the same reserve, with 429 instead of 503. Behind a
  reverse proxy every client is the proxy's address.
- ``body_timeout_s`` is not the gate's: the application's own middleware
  (:class:`clarion.adapters.body_deadline.BodyDeadline`, installed by the composition root)
  answers a body that does not arrive in time 408 and has the connection closed.

:class:`ClarionServer` adds two things to :class:`uvicorn.Server`: it ends Clarion's event
streams as soon as shutdown starts (``on_exit``), and it installs :class:`AcceptErrorLog` on
its event loop, so that running out of file descriptors logs one line per interval instead of
one per failed ``accept()`` (thousands a second, #29 S12).

WebSocket upgrades are off (``ws="none"``): Clarion serves none, and an upgraded connection
would leave the gate. TLS is not terminated here (run Clarion behind a proxy for https), so
there is no TLS handshake to time out.
"""

from __future__ import annotations

import asyncio
import contextvars
import errno
import gc
import ipaddress
import json
import logging
import resource
import socket
import time
from collections.abc import Callable, Collection
from enum import Enum
from types import FrameType
from typing import Any, ClassVar, Final, cast

import attrs
import structlog
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.app.root.settings import Settings

log = structlog.get_logger(__name__)
_UVICORN_LOG = logging.getLogger("uvicorn.error")

# File descriptors kept free for everything but client connections: the database, logs,
# live delivery, and the listening socket.
RESERVED_FILES: Final = 100
# Connections kept beyond the limit for health probes and for refusals (see the module).
HEALTH_RESERVE: Final = 20
HEALTH_PATHS: Final = frozenset({b"/healthz"})
_MAX_REQUEST_LINE: Final = 8192
# The largest request head served (request line and headers, up to the blank line): h11's
# bound, which Clarion kept when it moved to httptools (issue #35).
MAX_HEAD_BYTES: Final = 16 * 1024
_HEAD_END: Final = b"\r\n\r\n"
_ACCEPT_ERRNOS: Final = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
ACCEPT_LOG_INTERVAL_S: Final = 10.0


class Admission(Enum):
    SERVED = "served"
    BUSY = "busy"  # the server's connection limit is reached
    CLIENT_LIMIT = "client limit"  # this remote address's limit is reached


@attrs.define(eq=False)
class ConnectionBook:
    """Who holds a connection: served connections per remote address, and the reserve of
    connections beyond a limit (those waiting for their request line, oldest first, and
    health probes being answered)."""

    limit: int
    per_client: int
    reserve: int = HEALTH_RESERVE
    served: int = 0
    by_client: dict[str, int] = attrs.field(factory=dict)
    held: dict[object, None] = attrs.field(factory=dict)  # insertion order = age
    probes: int = 0

    def admit(self, client: str | None) -> Admission:
        """Count a new connection from ``client`` (None: no address, such as a Unix socket)
        as served, or say which limit keeps it out (then it is not counted)."""
        if self.served >= self.limit:
            return Admission.BUSY
        if client is not None:
            count = self.by_client.get(client, 0)
            if count >= self.per_client:
                return Admission.CLIENT_LIMIT
            self.by_client[client] = count + 1
        self.served += 1
        return Admission.SERVED

    def release(self, client: str | None) -> None:
        """A served connection closed."""
        self.served -= 1
        if client is not None:
            left = self.by_client[client] - 1
            if left:
                self.by_client[client] = left
            else:
                del self.by_client[client]

    def hold(self, key: object) -> object | None:
        """Hold ``key`` in the reserve; returns the oldest held key it displaces, if any
        (the caller closes that connection)."""
        evicted = None
        if len(self.held) + self.probes >= self.reserve and self.held:
            evicted = next(iter(self.held))
            del self.held[evicted]
        self.held[key] = None
        return evicted

    def unhold(self, key: object) -> None:
        self.held.pop(key, None)

    def start_probe(self, key: object) -> bool:
        """Move a held connection to the probes being answered, if the reserve has room."""
        self.held.pop(key, None)
        if self.probes >= self.reserve:
            return False
        self.probes += 1
        return True

    def end_probe(self) -> None:
        self.probes -= 1


def client_of(peername: object) -> str | None:
    """The remote address a connection counts against: an IPv4 address (an IPv4-mapped IPv6
    one as IPv4), or an IPv6 address's /64 network (one host commonly has the whole /64);
    None when there is none (a Unix socket)."""
    if not isinstance(peername, tuple) or not peername or not isinstance(peername[0], str):
        return None
    try:
        address = ipaddress.ip_address(peername[0].partition("%")[0])
    except ValueError:
        return peername[0] or None
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.IPv6Network((address, 64), strict=False))
    return str(address)


def is_health_probe(request_line: bytes, paths: Collection[bytes] = HEALTH_PATHS) -> bool:
    """True for ``GET`` or ``HEAD`` of one of ``paths`` (any query string)."""
    parts = request_line.strip().split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/"):
        return False
    method, target, _ = parts
    return method in (b"GET", b"HEAD") and target.split(b"?", 1)[0] in paths


def refusal(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 response that closes its connection."""
    body = json.dumps({"error": message}).encode()
    head = (
        f"HTTP/1.1 {status} {reason}\r\n"
        "content-type: application/json\r\n"
        f"content-length: {len(body)}\r\n"
        "cache-control: no-store\r\n"
        "retry-after: 1\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


_HEAD_TOO_LARGE: Final = refusal(
    431,
    "Request Header Fields Too Large",
    f"the request head is too large: the limit is {MAX_HEAD_BYTES} bytes",
)


@attrs.frozen
class GatePolicy:
    """What every connection of one server shares."""

    book: ConnectionBook
    header_timeout_s: float
    busy_response: bytes
    client_limit_response: bytes


class HeadCount:
    """The bytes of one request head seen so far, up to the blank line that ends it, against
    ``limit``. Once the head is whole it counts nothing more: what follows is its body, or a
    pipelined request that the HTTP protocol reads only after this one (a connection's next
    head is counted from the end of its last response)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._seen = 0
        self._tail = b""  # the last bytes seen, for an end split between two reads
        self.whole = False

    def fits(self, data: bytes) -> bool:
        """Count ``data``; False once the head has grown past the limit."""
        if self.whole:
            return True
        carried = len(self._tail)
        joined = self._tail + data if carried else data
        end = joined.find(_HEAD_END)
        if end >= 0:
            self.whole = True
            self._seen += end + len(_HEAD_END) - carried
        else:
            self._seen += len(data)
            self._tail = joined[-(len(_HEAD_END) - 1) :]
        return self._seen <= self._limit


# The gate passing bytes on right now: the ASGI task uvicorn creates meanwhile copies it.
_CURRENT_GATE: contextvars.ContextVar[_Gate | None] = contextvars.ContextVar(
    "clarion_connection_gate", default=None
)


class _Gate(asyncio.Protocol):
    """One connection: admission, the request-head timer, and the hand-over to the HTTP
    protocol (see the module docstring)."""

    policy: ClassVar[GatePolicy]
    inner_class: ClassVar[Callable[..., asyncio.Protocol]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._inner = self.inner_class(*args, **kwargs)
        self._started = False  # the inner protocol has the connection
        self._transport: asyncio.Transport | None = None
        self._client: str | None = None
        self._admission = Admission.SERVED
        self._held = False
        self._probe = False
        self._buffer = b""
        self._running = 0  # requests started and not ended
        self._timer: asyncio.TimerHandle | None = None
        self._head = HeadCount(MAX_HEAD_BYTES)

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.Transport, transport)
        self._client = client_of(transport.get_extra_info("peername"))
        book = self.policy.book
        self._admission = book.admit(self._client)
        if self._admission is Admission.SERVED:
            self._start()
        else:
            self._held = True
            evicted = book.hold(self)
            if isinstance(evicted, _Gate):
                evicted._held = False
                evicted._close()
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._started:
            if self._running == 0 and not self._head.fits(data):
                self._refuse_head()
                return
            self._pass_on(data)
            return
        self._buffer += data
        line, newline, _ = self._buffer.lstrip(b"\r\n").partition(b"\n")
        if not newline and len(self._buffer) < _MAX_REQUEST_LINE:
            return  # the request line is not complete yet
        book = self.policy.book
        self._held = False
        if newline and is_health_probe(line) and book.start_probe(self):
            self._probe = True
            self._start()
            buffered, self._buffer = self._buffer, b""
            self._pass_on(buffered)
            return
        book.unhold(self)
        self._refuse()

    def eof_received(self) -> bool | None:
        if self._started:
            return self._inner.eof_received()
        return None

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        book = self.policy.book
        if self._admission is Admission.SERVED:
            book.release(self._client)
        if self._held:
            book.unhold(self)
        if self._probe:
            book.end_probe()
        if self._started:
            self._inner.connection_lost(exc)

    def pause_writing(self) -> None:
        if self._started:
            self._inner.pause_writing()

    def resume_writing(self) -> None:
        if self._started:
            self._inner.resume_writing()

    # Told by the ASGI middleware (RequestEvents)

    def request_started(self) -> None:
        self._running += 1
        self._disarm()

    def request_ended(self, *, body_read: bool = True) -> None:
        self._running -= 1
        if self._probe or not body_read:
            # A health probe beyond the limit gets one answer. A response sent before its
            # request's body was read leaves the rest of that body on the way: the
            # connection cannot carry a next request cleanly (h11 closed it too).
            self._close()
        elif self._running == 0:
            self._head = HeadCount(MAX_HEAD_BYTES)
            self._arm()

    # Internals

    def _start(self) -> None:
        assert self._transport is not None
        self._started = True
        self._inner.connection_made(self._transport)

    def _pass_on(self, data: bytes) -> None:
        token = _CURRENT_GATE.set(self)
        try:
            self._inner.data_received(data)
        finally:
            _CURRENT_GATE.reset(token)

    def _refuse(self) -> None:
        assert self._transport is not None
        if self._transport.is_closing():
            return
        response = (
            self.policy.client_limit_response
            if self._admission is Admission.CLIENT_LIMIT
            else self.policy.busy_response
        )
        self._transport.write(response)
        self._transport.close()

    def _refuse_head(self) -> None:
        assert self._transport is not None
        if not self._transport.is_closing():
            self._transport.write(_HEAD_TOO_LARGE)
            self._transport.close()

    def _arm(self) -> None:
        self._disarm()
        if self._transport is None or self._transport.is_closing():
            return
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(self.policy.header_timeout_s, self._timed_out)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _timed_out(self) -> None:
        self._timer = None
        if self._running == 0:
            self._close()

    def _close(self) -> None:
        if self._transport is not None and not self._transport.is_closing():
            self._transport.close()


class RequestEvents:
    """Pure ASGI middleware telling a connection's gate when each of its requests starts and
    ends (its response's last byte was handed over, or the application returned)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        gate = _CURRENT_GATE.get()
        if gate is None or scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gate.request_started()
        ended = False
        body_pending = _has_body(scope)

        def end(responded: bool) -> None:
            nonlocal ended
            if not ended:
                ended = True
                gate.request_ended(body_read=not (responded and body_pending))

        async def received() -> Message:
            nonlocal body_pending
            message = await receive()
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_pending = False  # the whole body is in, or the client left
            return message

        async def tracked(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                end(responded=True)

        try:
            await self.app(scope, received if body_pending else receive, tracked)
        finally:
            end(responded=False)  # (no response: uvicorn answers 500 and decides)


def _has_body(scope: Scope) -> bool:
    """Whether the request announces a body (a non-zero ``Content-Length``, or chunks)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            return value.strip() not in (b"0", b"")
        if name == b"transfer-encoding":
            return True
    return False


def _http_protocol_class() -> Callable[..., asyncio.Protocol]:
    """The protocol class uvicorn's public ``http="httptools"`` option stands for, as
    uvicorn's own :class:`uvicorn.Config` resolves it."""

    async def unused(scope: Scope, receive: Receive, send: Send) -> None:
        raise RuntimeError("never called")

    config = uvicorn.Config(unused, http="httptools", ws="none", lifespan="off", log_config=None)
    config.load()
    return config.http_protocol_class


def gate_class(policy: GatePolicy) -> type[asyncio.Protocol]:
    """The asyncio protocol class to give uvicorn's ``http`` option: a gate with ``policy``
    in front of uvicorn's httptools protocol."""
    return type("ClarionGate", (_Gate,), {"policy": policy, "inner_class": _http_protocol_class()})


class AcceptErrorLog:
    """An event-loop exception handler logging ``accept()`` failures for want of resources
    (file descriptors, memory) at most once per ``interval_s``, with the number left out
    since the last line; every other error goes to the handler it replaces (#29 S12)."""

    def __init__(
        self,
        *,
        interval_s: float = ACCEPT_LOG_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
        fallback: Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object] | None = None,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._fallback = fallback
        self._last: float | None = None
        self.suppressed = 0

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if not is_accept_error(context):
            if self._fallback is not None:
                self._fallback(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        now = self._clock()
        if self._last is not None and now - self._last < self.interval_s:
            self.suppressed += 1
            return
        exception = context.get("exception")
        log.error(
            "connections.accept_failed",
            error=str(exception),
            suppressed=self.suppressed,
            suppressed_over_s=None if self._last is None else round(now - self._last, 1),
            hint="out of file descriptors or memory: raise `ulimit -n` or lower "
            "CLARION_LIMIT_CONCURRENCY",
        )
        self._last = now
        self.suppressed = 0

    def install(self, loop: asyncio.AbstractEventLoop) -> None:
        """Become ``loop``'s exception handler, passing other errors to the one it had."""
        self._fallback = self._fallback or loop.get_exception_handler()
        loop.set_exception_handler(self)


def is_accept_error(context: dict[str, Any]) -> bool:
    """True for asyncio's report of an ``accept()`` that failed for want of resources."""
    exception = context.get("exception")
    return (
        isinstance(exception, OSError)
        and exception.errno in _ACCEPT_ERRNOS
        and "accept" in str(context.get("message", ""))
    )


class ClarionServer(uvicorn.Server):
    """uvicorn's server with :class:`AcceptErrorLog` on its loop, calling ``on_exit`` as soon
    as shutdown starts (Clarion ends its event streams then; otherwise every open stream would
    hold the graceful shutdown for its whole grace period)."""

    def __init__(
        self, config: uvicorn.Config, *, on_exit: Callable[[], None] = lambda: None
    ) -> None:
        super().__init__(config)
        self._on_exit = on_exit

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        AcceptErrorLog().install(asyncio.get_running_loop())
        await super().serve(sockets)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        if sockets and self.started:
            # uvicorn names the address only for sockets it bound itself; ``clarion serve``
            # binds its own first (clarion.app.root.listening), and the line stays the same.
            host = self.config.host or "0.0.0.0"
            address = "%s://[%s]:%d" if ":" in host else "%s://%s:%d"
            _UVICORN_LOG.info(
                f"Uvicorn running on {address} (Press CTRL+C to quit)",
                "http",
                host,
                sockets[0].getsockname()[1],
            )

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        self._on_exit()
        super().handle_exit(sig, frame)


def _open_file_limit() -> int | None:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def served_limit(limit_concurrency: int, open_files: int | None = None) -> int:
    """The connections served at once: ``limit_concurrency``, lowered (to at least 1) so that
    they, the reserve and :data:`RESERVED_FILES` fit the open-file limit (``open_files``;
    default: the process's soft limit)."""
    files = _open_file_limit() if open_files is None else open_files
    if files is None:
        return limit_concurrency
    return max(1, min(limit_concurrency, files - RESERVED_FILES - HEALTH_RESERVE))


# The cyclic garbage collector's first threshold in the ``clarion serve`` process (Python's
# default is 700): a young collection every 7,000 net container allocations instead of 700,
# hence a tenth of the full collections too. A server holding a thousand parked agents has
# some 200,000 live objects, and each full collection walked all of them: with 700, 13–15 %
# of a replica's CPU under replicas_bench went to the collector (full collections of about
# 250 ms each, stalling the event loop); with 7,000, 3.6 %, collecting as much garbage
# (issue #35). Memory holds at most a few thousand more young objects between collections.
GC_YOUNG_THRESHOLD: Final = 7000


def tune_collector() -> None:
    """Set the collector's first threshold to :data:`GC_YOUNG_THRESHOLD` for this process
    (``clarion serve`` only: a host embedding Clarion keeps its own settings)."""
    _, middle, old = gc.get_threshold()
    gc.set_threshold(GC_YOUNG_THRESHOLD, middle, old)


def ensure_open_files(limit_concurrency: int) -> str:
    """Raise the process's soft open-file limit (up to its hard limit) so that
    ``limit_concurrency`` connections and the reserve fit; returns a warning when they still
    do not, else ""."""
    needed = limit_concurrency + HEALTH_RESERVE + RESERVED_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        target = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        if target > soft:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
    if soft != resource.RLIM_INFINITY and soft < needed:
        return (
            f"the open-file limit ({soft}) is below CLARION_LIMIT_CONCURRENCY + "
            f"{HEALTH_RESERVE + RESERVED_FILES} ({needed}): serving at most "
            f"{served_limit(limit_concurrency, soft)} connections at once; lower the limit or "
            "raise `ulimit -n`"
        )
    return ""


def gate_policy(settings: Settings) -> GatePolicy:
    """The connection gate's policy for ``settings`` (the limit as :func:`served_limit`)."""
    limit = served_limit(settings.limit_concurrency)
    per_client = settings.max_connections_per_client
    return GatePolicy(
        book=ConnectionBook(limit=limit, per_client=per_client),
        header_timeout_s=settings.header_timeout_s,
        busy_response=refusal(
            503,
            "Service Unavailable",
            f"server busy: the limit of {limit} open connections is reached "
            "(CLARION_LIMIT_CONCURRENCY)",
        ),
        client_limit_response=refusal(
            429,
            "Too Many Requests",
            f"too many connections from your address: the limit is {per_client} "
            "(CLARION_MAX_CONNECTIONS_PER_CLIENT)",
        ),
    )


def uvicorn_config(app: Any, settings: Settings, **extra: Any) -> uvicorn.Config:
    """The uvicorn configuration ``clarion serve`` runs ``app`` with (``extra`` adds to or
    replaces uvicorn options)."""
    options: dict[str, Any] = {
        "host": settings.host,
        "port": settings.port,
        "http": gate_class(gate_policy(settings)),
        "ws": "none",
        # asyncio's own loop, even where uvloop is installed (uvicorn's "auto" would take it):
        # AcceptErrorLog relies on asyncio's handling of a failed accept(); under uvloop 0.23
        # running out of file descriptors ended the server instead (#29 S12).
        "loop": "asyncio",
        "timeout_keep_alive": settings.keep_alive_timeout_s,
        "log_config": None,
        "access_log": False,
        "lifespan": "on",
    }
    return uvicorn.Config(RequestEvents(app), **{**options, **extra})
