"""A small MCP Apps host for the browser tests (issue #31): the host side of the ext-apps bridge
(SEP-1865, protocol 2026-01-26), written as test code.

The host page renders the ``ui://`` card's HTML in an iframe sandboxed with ``allow-scripts``
only (an opaque origin), under the spec's restrictive default Content-Security-Policy, and
speaks JSON-RPC over ``postMessage`` with it: it answers ``ui/initialize`` (host context with a
light theme), waits for ``ui/notifications/initialized`` before sending anything, then sends
``ui/notifications/tool-input`` and, when it has one, ``ui/notifications/tool-result``; it
resizes the frame on ``ui/notifications/size-changed`` and proxies the card's ``tools/call``
to the real Clarion MCP endpoint — refusing, as the spec requires of a host, any tool whose
``_meta.ui.visibility`` does not include ``"app"``. The proxy is Python (a Playwright-exposed
function) using the SDK client with the MCP Apps extension declared, so every call the card
makes reaches Clarion as an MCP request from a host that negotiated the extension.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import httpx2
from mcp import Client
from mcp.client.extension import advertise
from mcp.client.streamable_http import streamable_http_client
from mcp.server.apps import APP_MIME_TYPE, EXTENSION_ID
from mcp.types import CallToolResult, TextResourceContents
from playwright.sync_api import Page

from tests.e2e.actors import CALL_TIMEOUT_S, in_thread
from tests.e2e.server import ServedClarion

APPS = advertise(EXTENSION_ID, {"mimeTypes": [APP_MIME_TYPE]})
HOST_PATH = "/__test__/mcp-app-host"
# The spec's default when a resource declares no domains; 'self' means nothing in an opaque
# origin, so only inline script and style remain (and data: images).
CARD_CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data:; media-src data:; connect-src 'none'; frame-src 'none'; "
    "object-src 'none'; base-uri 'none'"
)

HOST_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Test MCP Apps host</title>
<style>
  body { margin: 0; background: #eceef1; font: 15px/1.5 system-ui, sans-serif; color: #1b1f24; }
  .chat { max-width: 640px; margin: 0 auto; padding: 20px 16px; }
  .turn { margin: 0 0 10px; padding: 10px 14px; background: #fff; border-radius: 12px;
          border: 1px solid #d8dde3; }
  .tool { margin: 0 0 8px; font-size: 13px; color: #59636e; }
  iframe { display: block; width: 100%; height: 120px; border: 0; background: transparent; }
</style></head>
<body><div class="chat">
  <p class="turn">Agent: I need one decision from you before I continue.</p>
  <p class="tool">Tool call · ask_user_question</p>
  <div id="slot"></div>
</div>
<script>
"use strict";
window.bridgeLog = [];
window.startCard = (html, csp, toolInput, toolResult) => {
  const frame = document.createElement("iframe");
  frame.id = "card";
  frame.title = "Clarion question card";
  frame.setAttribute("sandbox", "allow-scripts");
  const meta = `<meta http-equiv="Content-Security-Policy" content="${csp}">`;
  frame.srcdoc = html.replace("<head>", `<head>${meta}`);
  const send = (message) => frame.contentWindow.postMessage({ jsonrpc: "2.0", ...message }, "*");
  let initialized = false;
  window.sendToCard = (method, params) => {
    if (!initialized) throw new Error("the view has not sent initialized yet");
    send({ method, params });
  };
  window.addEventListener("message", async (event) => {
    if (event.source !== frame.contentWindow) return;
    const message = event.data;
    window.bridgeLog.push(message);
    if (!message || message.jsonrpc !== "2.0") return;
    if (message.method === "ui/initialize") {
      send({ id: message.id, result: {
        protocolVersion: "2026-01-26",
        hostInfo: { name: "clarion-test-host", version: "1" },
        hostCapabilities: { serverTools: {}, serverResources: {} },
        hostContext: { theme: "light", displayMode: "inline", platform: "web",
                       containerDimensions: { maxHeight: 1600 } },
      } });
    } else if (message.method === "ui/notifications/initialized") {
      initialized = true;
      send({ method: "ui/notifications/tool-input", params: { arguments: toolInput } });
      if (toolResult) send({ method: "ui/notifications/tool-result", params: toolResult });
    } else if (message.method === "ui/notifications/size-changed") {
      frame.style.height = `${message.params.height}px`;
    } else if (message.method === "tools/call") {
      const reply = JSON.parse(await window.clarionToolsCall(JSON.stringify(message.params)));
      send(reply.error ? { id: message.id, error: reply.error }
                       : { id: message.id, result: reply });
    } else if (message.id !== undefined && message.method) {
      send({ id: message.id, error: { code: -32601, message: "Method not found" } });
    }
  });
  document.getElementById("slot").append(frame);
};
</script></body></html>
"""


def _headers(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


@contextlib.asynccontextmanager
async def apps_client(url: str, token: str) -> AsyncIterator[Client]:
    """The SDK client as an MCP Apps host: the extension declared with the card's MIME type."""
    timeout = httpx2.Timeout(CALL_TIMEOUT_S, read=300)
    async with (
        httpx2.AsyncClient(headers=_headers(token), timeout=timeout) as http,
        Client(streamable_http_client(url, http_client=http), extensions=[APPS]) as client,
    ):
        yield client


def result_json(result: CallToolResult) -> dict[str, Any]:
    """A tool result as the host hands it on (wire JSON)."""
    return result.model_dump(by_alias=True, exclude_none=True, mode="json")


def read_card(url: str, token: str) -> tuple[str, dict[str, Any]]:
    """The card's HTML and the ask tool's listing (``resources/read``, ``tools/list``)."""

    async def read() -> tuple[str, dict[str, Any]]:
        async with apps_client(url, token) as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
            ask = next(tool for tool in tools.values() if tool.name.startswith("ask_user_question"))
            meta = ask.meta or {}
            [content] = (await client.read_resource(meta["ui"]["resourceUri"])).contents
        assert isinstance(content, TextResourceContents)
        assert content.mime_type == APP_MIME_TYPE
        return content.text, meta

    return in_thread(read).result(CALL_TIMEOUT_S)


def ask_as_host(url: str, token: str, arguments: Mapping[str, Any]) -> Any:
    """The agent's ask through a host that renders MCP Apps; a future of the whole result."""

    async def ask() -> CallToolResult:
        async with apps_client(url, token) as client:
            return await client.call_tool(
                next(
                    tool.name
                    for tool in (await client.list_tools()).tools
                    if tool.name.startswith("ask_user_question")
                ),
                dict(arguments),
            )

    return in_thread(ask)


def open_host(
    page: Page,
    served: ServedClarion,
    *,
    url: str,
    token: str,
    html: str,
    tool_input: Mapping[str, Any],
    tool_result: Mapping[str, Any] | None = None,
) -> None:
    """Load the host page (served at Clarion's origin by the test) and start the card in it;
    the card's ``tools/call`` go to ``url`` with ``token``."""

    def proxy(params_json: str) -> str:
        params = json.loads(params_json)

        async def call() -> dict[str, Any]:
            async with apps_client(url, token) as client:
                listed = {tool.name: tool for tool in (await client.list_tools()).tools}
                tool = listed.get(params.get("name"))
                visibility = ((tool.meta or {}).get("ui") or {}).get("visibility") if tool else None
                if tool is None or "app" not in (visibility or ["model", "app"]):
                    return {"error": {"code": -32602, "message": "tool not callable by the app"}}
                result = await client.call_tool(tool.name, params.get("arguments") or {})
            return result_json(result)

        return json.dumps(in_thread(call).result(CALL_TIMEOUT_S))

    page.expose_function("clarionToolsCall", proxy)
    page.route(
        served.url(HOST_PATH),
        lambda route: route.fulfill(status=200, content_type="text/html", body=HOST_PAGE),
    )
    page.goto(served.url(HOST_PATH))
    page.evaluate(
        "([html, csp, input, result]) => window.startCard(html, csp, input, result)",
        [html, CARD_CSP, dict(tool_input), dict(tool_result) if tool_result else None],
    )
