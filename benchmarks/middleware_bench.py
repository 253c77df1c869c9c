"""Server CPU per request through the HTTP layers, without sockets (issue #35).

A parked agent on the MCP tasks extension polls ``tasks/get`` once a second; with hundreds of
them, what a replica spends per poll outside the store — the ASGI middleware stack, the MCP
gates and the SDK's streamable HTTP handling — is most of its background CPU. This bench
measures that cost in one process: the application ``build_clarion`` composes (in-memory
storage, so the store is cheap; authentication as ``--auth`` says; JSON request log lines
rendered as ``clarion serve`` renders them, written to ``/dev/null``), wrapped in the
connection gate's :class:`~clarion.app.root.serving.RequestEvents` as ``clarion serve`` wraps
it, called with raw ASGI messages. One agent parks an ask on ``/mcp/agent`` with the tasks
extension; then, round after round, each request kind is sent ``--requests`` times:

- ``tasks/get``: that task's poll (2026-07-28 protocol, what ``benchmarks.replicas_bench``'s
  ``agent/tasks`` agents send);
- ``tools/list``: the same endpoint with no store read at all (the layers and the SDK alone);
- ``rest``: ``GET /api/v1/auth/me``, every REST layer and a handler that reads nothing;
- ``layers``: the ``tasks/get`` request through the application's middleware alone (the same
  stack, with a stand-in for the router that answers at once as the ``/mcp/agent`` route):
  what the layers in front of every route cost, without routing, the MCP gates or the SDK.

It prints, per kind, the process CPU time per request in µs (``time.process_time``, worker
threads included): the median over ``--rounds`` rounds, and the lowest. Kinds are interleaved
round by round so that a noisy neighbour weighs on each alike. Figures only; nothing is
asserted here. To compare two versions of the code, run it alternately with each on
``PYTHONPATH`` (a folder holding a ``clarion`` link to the other version's ``src``)::

    .venv/bin/python -m benchmarks.middleware_bench [--requests 500] [--rounds 9] [--auth]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, Final, cast

import anyio
import attrs
import structlog
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from clarion.app.root import serving
from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.logging_setup import configure_logging
from clarion.app.root.settings import Settings

AGENT_PATH: Final = "/mcp/agent"
ASK: Final = "ask_user_question_kandev"
PROTOCOL: Final = "2026-07-28"
TASKS: Final = "io.modelcontextprotocol/tasks"
KINDS: Final = ("tasks/get", "tools/list", "rest", "layers")


@attrs.frozen
class Figures:
    """CPU per request of one kind, in µs: the median and the lowest round."""

    kind: str
    median_us: float
    low_us: float
    rounds: int


@attrs.define
class _Gate:
    """Stands for the connection gate :class:`serving.RequestEvents` tells when each request
    starts and ends (``clarion serve``'s asyncio protocol); counts both."""

    started: int = 0
    ended: int = 0

    def request_started(self) -> None:
        self.started += 1

    def request_ended(self, *, body_read: bool = True) -> None:
        self.ended += 1


@attrs.frozen
class Answer:
    status: int
    headers: dict[bytes, bytes]
    body: bytes

    def json(self) -> Any:
        """The JSON body, or the JSON-RPC message of an event-stream body."""
        if self.headers.get(b"content-type", b"").startswith(b"text/event-stream"):
            for line in self.body.decode().splitlines():
                data = line.removeprefix("data:").strip()
                if line.startswith("data:") and data:
                    return json.loads(data)
        return json.loads(self.body)


async def call(
    app: ASGIApp, method: str, path: str, headers: Sequence[tuple[str, str]], body: bytes = b""
) -> Answer:
    """One HTTP request as uvicorn hands it to the application: the body in one message, then
    ``http.disconnect`` once the response is complete."""
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            *((name.lower().encode(), value.encode()) for name, value in headers),
            *([(b"content-length", str(len(body)).encode())] if body else []),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }
    sent_body = False
    complete = anyio.Event()
    status = 0
    response_headers: dict[bytes, bytes] = {}
    chunks: list[bytes] = []

    async def receive() -> Message:
        nonlocal sent_body
        if not sent_body:
            sent_body = True
            return {"type": "http.request", "body": body, "more_body": False}
        await complete.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
            response_headers.update(message.get("headers", []))
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                complete.set()

    await app(scope, receive, send)
    complete.set()
    return Answer(status, response_headers, b"".join(chunks))


def _rpc_body(method: str, params: dict[str, Any], number: int, *, tasks: bool) -> bytes:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}} if tasks else {},
        "io.modelcontextprotocol/clientInfo": {"name": "middleware-bench", "version": "1"},
    }
    message = {
        "jsonrpc": "2.0",
        "id": number,
        "method": method,
        "params": {**params, "_meta": envelope},
    }
    return json.dumps(message).encode()


def _rpc_headers(
    method: str, name: str, credential: list[tuple[str, str]]
) -> list[tuple[str, str]]:
    return [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("mcp-protocol-version", PROTOCOL),
        ("mcp-method", method),
        *([("mcp-name", name)] if name else []),
        *credential,
    ]


def layers_alone(app: Starlette) -> ASGIApp:
    """``app``'s middleware stack over a stand-in for its router: it answers ``{}`` at once,
    as the ``/mcp/agent`` route (left in the scope, as Starlette's router leaves it)."""
    route = next(r for r in app.routes if getattr(r, "path", "") == AGENT_PATH)

    async def answered(scope: Scope, receive: Receive, send: Send) -> None:
        scope["route"] = route
        await receive()
        start = {"content-type": "application/json", "content-length": "2"}
        headers = [(name.encode(), value.encode()) for name, value in start.items()]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b"{}"})

    router = app.router
    app.router = cast(Any, answered)  # only while the stack is built
    try:
        stack = app.build_middleware_stack()
    finally:
        app.router = router
    return serving.RequestEvents(stack)


@attrs.define
class Bench:
    """The application and the requests of each kind (``layers``: sent to ``layers``)."""

    app: ASGIApp
    layers: ASGIApp | None = None
    requests: dict[str, tuple[str, str, list[tuple[str, str]], bytes]] = attrs.field(factory=dict)

    async def park(self, credential: list[tuple[str, str]]) -> str:
        """Park one agent's ask as a task; its id."""
        question = {
            "id": "q1",
            "title": "Q1",
            "prompt": "Which way?",
            "options": [
                {"label": "Left", "description": "L"},
                {"label": "Right", "description": "R"},
            ],
        }
        body = _rpc_body(
            "tools/call", {"name": ASK, "arguments": {"questions": [question]}}, 1, tasks=True
        )
        answer = await call(
            self.app, "POST", AGENT_PATH, _rpc_headers("tools/call", ASK, credential), body
        )
        result = answer.json().get("result", {})
        if answer.status != 200 or "taskId" not in result:
            raise RuntimeError(f"the ask was not parked as a task: {answer}")
        return str(result["taskId"])

    def prepare(self, task_id: str, credential: list[tuple[str, str]]) -> None:
        self.requests["tasks/get"] = (
            "POST",
            AGENT_PATH,
            _rpc_headers("tasks/get", task_id, credential),
            _rpc_body("tasks/get", {"taskId": task_id}, 2, tasks=True),
        )
        self.requests["tools/list"] = (
            "POST",
            AGENT_PATH,
            _rpc_headers("tools/list", "", credential),
            _rpc_body("tools/list", {}, 3, tasks=False),
        )
        self.requests["rest"] = ("GET", "/api/v1/auth/me", credential, b"")
        self.requests["layers"] = self.requests["tasks/get"]

    def target(self, kind: str) -> ASGIApp:
        return self.layers if kind == "layers" and self.layers is not None else self.app

    async def check(self) -> None:
        """Every kind answers as it should before anything is timed."""
        for kind, (method, path, headers, body) in self.requests.items():
            answer = await call(self.target(kind), method, path, headers, body)
            reply = answer.json()
            if answer.status != 200 or "error" in reply:
                raise RuntimeError(f"{kind} failed: {answer}")
            if kind == "tasks/get" and reply["result"].get("status") != "working":
                raise RuntimeError(f"the task is not working: {reply}")

    async def cpu_per_request(self, kind: str, count: int) -> float:
        """Process CPU per request of ``kind`` over ``count`` requests, in µs."""
        method, path, headers, body = self.requests[kind]
        app = self.target(kind)
        started = time.process_time()
        for _ in range(count):
            await call(app, method, path, headers, body)
        return (time.process_time() - started) / count * 1e6


@contextlib.asynccontextmanager
async def running(clarion: Clarion) -> AsyncIterator[ASGIApp]:
    """The application with its lifespan entered, behind :class:`serving.RequestEvents` with
    a connection gate (what ``clarion serve`` runs)."""
    app: Starlette = clarion.asgi_app
    gate = _Gate()
    # What clarion serve's connection gate sets while it passes a request's bytes on.
    token = serving._CURRENT_GATE.set(cast(Any, gate))
    try:
        async with app.router.lifespan_context(app):
            yield serving.RequestEvents(app)
    finally:
        serving._CURRENT_GATE.reset(token)
    if gate.started != gate.ended:
        raise RuntimeError(f"{gate.started} requests started, {gate.ended} ended")


async def measure(*, requests: int, rounds: int, auth: bool) -> list[Figures]:
    clarion = build_clarion(Settings(database_url="memory://", auth_enabled=auth))
    credential: list[tuple[str, str]] = []
    async with running(clarion) as app:
        if auth:
            user = clarion.authentication.create_user("bench", is_admin=True)
            issued = clarion.authentication.issue_token(user.id)
            credential = [("authorization", f"Bearer {issued.token}")]
        bench = Bench(app, layers_alone(clarion.asgi_app))
        task_id = await bench.park(credential)
        bench.prepare(task_id, credential)
        await bench.check()
        for kind in KINDS:  # warm every path once before timing
            await bench.cpu_per_request(kind, max(1, requests // 10))
        samples: dict[str, list[float]] = {kind: [] for kind in KINDS}
        for _ in range(rounds):
            for kind in KINDS:
                samples[kind].append(await bench.cpu_per_request(kind, requests))
    return [
        Figures(kind, statistics.median(values), min(values), len(values))
        for kind, values in samples.items()
    ]


@contextlib.contextmanager
def logged_to_nowhere() -> Iterator[None]:
    """Log lines rendered as ``clarion serve --log-format json`` renders them, written to
    ``/dev/null``; the logging configuration before is back afterwards — but not for the
    module-level structlog loggers first used meanwhile, which keep the configuration they
    were cached with (``cache_logger_on_first_use``): run the bench as a process of its own."""
    config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with open(os.devnull, "w") as quiet:
        stderr, sys.stderr = sys.stderr, quiet
        try:
            configure_logging("json")  # its handler writes to sys.stderr as it is now
        finally:
            sys.stderr = stderr
        try:
            yield
        finally:
            structlog.configure(**config)
            root.handlers[:] = handlers
            root.setLevel(level)


def main(argv: Sequence[str] | None = None) -> list[Figures]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=500, help="requests per kind per round")
    parser.add_argument("--rounds", type=int, default=9, help="rounds (the median is printed)")
    parser.add_argument("--auth", action="store_true", help="authentication enabled (a PAT)")
    args = parser.parse_args(argv)
    if args.requests < 1 or args.rounds < 1:
        parser.error("--requests and --rounds must be at least 1")
    with logged_to_nowhere():
        figures = anyio.run(
            lambda: measure(requests=args.requests, rounds=args.rounds, auth=args.auth)
        )
    mode = "auth enabled" if args.auth else "auth disabled"
    print(f"CPU per request, µs ({mode}; {args.rounds} rounds of {args.requests}):")
    for figure in figures:
        print(f"  {figure.kind:10} median {figure.median_us:8.1f}   lowest {figure.low_us:8.1f}")
    return figures


if __name__ == "__main__":
    main()
