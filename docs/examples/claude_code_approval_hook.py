"""A Claude Code ``PreToolUse`` hook: ask Clarion before a risky shell command (issue #33).

Claude Code runs this script before each ``Bash`` tool call, with the call as JSON on standard
input. A command that matches :data:`RISKY` becomes an approval request on Clarion's agent
endpoint (``request_approval_kandev`` on ``/mcp/agent``: nothing to create first); the script
waits for the decision and tells Claude Code ``allow`` or ``deny`` (the approver's comment
goes to the model as the reason). Anything else passes through untouched. If Clarion cannot be
reached, the script answers ``ask``: Claude Code's own prompt decides, nothing is run unasked.

Configure it in ``.claude/settings.json`` (``timeout`` is in seconds: how long a person has)::

    {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command",
      "command": "python3 /path/to/claude_code_approval_hook.py", "timeout": 900}]}]}}

with ``CLARION_URL`` (default ``http://127.0.0.1:8765``) and, when authentication is
enabled, ``CLARION_TOKEN`` (a personal access token) in the environment. Imported, it does
nothing: ``main()`` runs only as a script.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping
from typing import Any, Final

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

TOOL: Final = "request_approval_kandev"
RISKY: Final = re.compile(
    r"\brm\s+-[a-z]*r[a-z]*f|\bgit\s+push\b.*--force|\bkubectl\s+delete\b"
    r"|\bterraform\s+(?:apply|destroy)\b|\bdrop\s+(?:table|database)\b",
    re.IGNORECASE,
)
WAIT_S: Final = 900.0


def risky_action(hook_input: Mapping[str, Any]) -> dict[str, Any] | None:
    """The action to ask about, or None when the call may run without asking."""
    if hook_input.get("tool_name") != "Bash":
        return None
    tool_input = hook_input.get("tool_input") or {}
    command = tool_input.get("command") if isinstance(tool_input, Mapping) else None
    if not isinstance(command, str) or not RISKY.search(command):
        return None
    return {"name": "shell", "arguments": {"command": command, "cwd": hook_input.get("cwd", "")}}


def decision_output(view: Mapping[str, Any] | None, error: str = "") -> dict[str, Any]:
    """Claude Code's ``PreToolUse`` answer for an approval's view (None: no decision)."""
    if view is None or view.get("status") not in ("approved", "denied"):
        decision, reason = "ask", f"Clarion gave no decision ({error or 'no answer'})."
    else:
        decided_by = view.get("decided_by") or {}
        who = decided_by.get("display_name") or "an approver"
        decision = "allow" if view["status"] == "approved" else "deny"
        reason = f"{view['status'].capitalize()} in Clarion by {who}"
        if view.get("comment"):
            reason += f": {view['comment']}"
    return {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "permissionDecisionReason": reason,
        }
    }


async def request_approval(
    base_url: str,
    action: Mapping[str, Any],
    reason: str,
    *,
    token: str = "",
    transport: httpx2.AsyncBaseTransport | None = None,
) -> dict[str, Any]:
    """Ask on ``base_url``'s agent endpoint and wait; the approval's view. A wait that ends
    undecided is waited on again (same action, its ``pending_id``) until :data:`WAIT_S`.

    Raises:
        RuntimeError: Clarion refused the request (the tool error's text).
    """
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    arguments: dict[str, Any] = {"action": dict(action), "reason": reason}
    async with (
        httpx2.AsyncClient(
            headers=headers, transport=transport, timeout=httpx2.Timeout(30, read=WAIT_S)
        ) as http,
        Client(streamable_http_client(f"{base_url}/mcp/agent", http_client=http)) as client,
    ):
        with anyio.fail_after(WAIT_S):
            while True:
                result = await client.call_tool(TOOL, arguments)
                meta = (result.meta or {}).get("clarion/error") or {}
                if not result.is_error and isinstance(result.structured_content, dict):
                    return result.structured_content
                if meta.get("code") != "WAIT_ENDED" or not meta.get("pending_id"):
                    text = " ".join(getattr(part, "text", "") for part in result.content)
                    raise RuntimeError(text or "Clarion refused the request")
                arguments["pending_id"] = meta["pending_id"]


def main() -> None:
    """Read the hook's input, ask when the command is risky, print Claude Code's answer."""
    hook_input = json.load(sys.stdin)
    action = risky_action(hook_input)
    if action is None:
        return  # no output: Claude Code's normal permission flow
    reason = hook_input.get("tool_input", {}).get("description") or "Claude Code wants to run this."
    base_url = os.environ.get("CLARION_URL", "http://127.0.0.1:8765").rstrip("/")
    token = os.environ.get("CLARION_TOKEN", "")
    try:
        view = anyio.run(lambda: request_approval(base_url, action, reason, token=token))
    except (OSError, RuntimeError, TimeoutError, httpx2.HTTPError) as exc:
        json.dump(decision_output(None, str(exc) or type(exc).__name__), sys.stdout)
        return
    json.dump(decision_output(view), sys.stdout)


if __name__ == "__main__":
    main()
