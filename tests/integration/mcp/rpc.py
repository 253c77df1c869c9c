"""Raw 2026-07-28 JSON-RPC over HTTP, for what the SDK client does not send: the tasks
extension's ``tasks/*`` methods and a ``tools/call`` declaring it (issue #28)."""

from __future__ import annotations

import itertools
import json
from typing import Any, Final

import httpx2

PROTOCOL: Final = "2026-07-28"
TASKS: Final = "io.modelcontextprotocol/tasks"
IDEMPOTENCY: Final = "dev.clarion/idempotency-key"
_ids = itertools.count(1)


def capabilities(*, tasks: bool = True, forms: bool = False) -> dict[str, Any]:
    declared: dict[str, Any] = {}
    if tasks:
        declared["extensions"] = {TASKS: {}}
    if forms:
        declared["elicitation"] = {"form": {}}
    return declared


async def rpc(
    http: httpx2.AsyncClient,
    url: str,
    method: str,
    params: dict[str, Any],
    *,
    name: str,
    client_capabilities: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One JSON-RPC request; returns its ``result`` or its ``error`` object (whichever came)."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": PROTOCOL,
        "io.modelcontextprotocol/clientCapabilities": client_capabilities or {},
        "io.modelcontextprotocol/clientInfo": {"name": "rpc-test", "version": "1"},
        **(meta or {}),
    }
    body = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": method,
        "params": {**params, "_meta": envelope},
    }
    headers = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": method,
        "Mcp-Name": name,
    }
    response = await http.post(url, json=body, headers=headers)
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        messages = [
            json.loads(line.removeprefix("data:").strip())
            for line in response.text.splitlines()
            if line.startswith("data:") and line.removeprefix("data:").strip()
        ]
        message = next(m for m in messages if m.get("id") == body["id"])
    else:
        message = response.json()
    if "error" in message:
        error: dict[str, Any] = message["error"]
        return {"error": error}
    result: dict[str, Any] = message["result"]
    return result


async def call_ask(
    http: httpx2.AsyncClient,
    url: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    tasks: bool = True,
    forms: bool = False,
    key: str = "",
) -> dict[str, Any]:
    meta = {IDEMPOTENCY: key} if key else None
    return await rpc(
        http,
        url,
        "tools/call",
        {"name": tool, "arguments": arguments},
        name=tool,
        client_capabilities=capabilities(tasks=tasks, forms=forms),
        meta=meta,
    )


async def task_method(
    http: httpx2.AsyncClient,
    url: str,
    method: str,
    task_id: str,
    *,
    forms: bool = False,
    **extra: Any,
) -> dict[str, Any]:
    return await rpc(
        http,
        url,
        method,
        {"taskId": task_id, **extra},
        name=task_id,
        client_capabilities=capabilities(forms=forms),
    )
