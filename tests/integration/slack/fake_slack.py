"""A local fake of the Slack Web API (issue #18), served by uvicorn on a free loopback port
(:func:`tests.sockets.serving`): ``chat.postMessage``, ``chat.update``, ``views.open``,
``chat.postEphemeral`` and the ``response_url`` posts of interactions. It records every call,
keeps each posted message's current blocks (so a test sees what a channel shows now), returns
ids and ``ts`` as Slack does, and answers with an error Slack names when a test tells it to."""

from __future__ import annotations

import contextlib
import json
import urllib.parse
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from tests.sockets import serving

TOKEN = "xoxb-test-token"


@attrs.frozen
class Call:
    method: str
    body: dict[str, Any]


@attrs.define
class Message:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    updates: int = 0


@attrs.define
class FakeSlack:
    calls: list[Call] = attrs.field(factory=list)
    messages: dict[tuple[str, str], Message] = attrs.field(factory=dict)
    # method → errors to answer with, in order (then ok): (HTTP status, Slack error)
    failures: dict[str, list[tuple[int, str]]] = attrs.field(factory=dict)
    url: str = ""
    unauthorized: int = 0
    _counter: int = 0

    def api_url(self) -> str:
        return f"{self.url}/api/"

    def response_url(self, name: str) -> str:
        return f"{self.url}/respond/{name}"

    def of(self, method: str) -> list[dict[str, Any]]:
        return [call.body for call in self.calls if call.method == method]

    def responses(self, name: str) -> list[dict[str, Any]]:
        return self.of(f"respond/{name}")

    def posted(self) -> list[Message]:
        return list(self.messages.values())

    def app(self) -> Starlette:
        async def api(request: Request) -> Response:
            method = request.path_params["method"]
            if request.headers.get("authorization") != f"Bearer {TOKEN}":
                self.unauthorized += 1
                return JSONResponse({"ok": False, "error": "invalid_auth"})
            raw = await request.body()
            if request.headers.get("content-type", "").startswith("application/json"):
                body = json.loads(raw or b"{}")
            else:
                body = dict(urllib.parse.parse_qsl(raw.decode()))
            self.calls.append(Call(method, body))
            scripted = self.failures.get(method)
            if scripted:
                status, error = scripted.pop(0)
                return JSONResponse({"ok": False, "error": error}, status_code=status)
            return JSONResponse(self._answer(method, body))

        async def respond(request: Request) -> Response:
            body = json.loads(await request.body() or b"{}")
            self.calls.append(Call(f"respond/{request.path_params['name']}", body))
            return PlainTextResponse("ok")

        return Starlette(
            routes=[
                Route("/api/{method}", api, methods=["POST"]),
                Route("/respond/{name}", respond, methods=["POST"]),
            ]
        )

    def _answer(self, method: str, body: dict[str, Any]) -> dict[str, Any]:
        self._counter += 1
        if method == "chat.postMessage":
            target = str(body["channel"])
            channel = (
                "C" + target[1:].upper().replace("-", "") if target.startswith("#") else target
            )
            if channel.startswith("U"):
                channel = "D" + channel
            ts = f"{1_700_000_000 + self._counter}.{self._counter:06d}"
            blocks = body.get("blocks") or []
            if isinstance(blocks, str):
                blocks = json.loads(blocks)
            self.messages[(channel, ts)] = Message(channel, ts, str(body.get("text", "")), blocks)
            return {"ok": True, "channel": channel, "ts": ts, "message": {"ts": ts}}
        if method == "chat.update":
            key = (str(body["channel"]), str(body["ts"]))
            message = self.messages.get(key)
            if message is None:
                return {"ok": False, "error": "message_not_found"}
            blocks = body.get("blocks") or []
            message.blocks = json.loads(blocks) if isinstance(blocks, str) else blocks
            message.text = str(body.get("text", ""))
            message.updates += 1
            return {"ok": True, "channel": key[0], "ts": key[1]}
        if method == "views.open":
            return {"ok": True, "view": {"id": f"V{self._counter}"}}
        if method == "chat.postEphemeral":
            return {"ok": True, "message_ts": f"{1_700_000_000 + self._counter}.000001"}
        return {"ok": False, "error": "unknown_method"}

    async def wait_for(self, check: Callable[[], bool], what: str, timeout: float = 15.0) -> None:
        """Poll until ``check()`` holds (the server's worker posts in the background)."""
        with anyio.fail_after(timeout):
            while not check():
                await anyio.sleep(0.02)
        del what


@contextlib.asynccontextmanager
async def fake_slack() -> AsyncIterator[FakeSlack]:
    fake = FakeSlack()
    async with serving(fake.app(), lifespan="off") as url:
        fake.url = url
        yield fake
