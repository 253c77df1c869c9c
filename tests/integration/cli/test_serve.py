"""``clarion serve`` as a real process: it serves, and stops promptly and cleanly."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.sockets import free_port


def test_serve_stops_cleanly_at_once_even_with_an_event_stream_open(tmp_path: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clarion",
            "serve",
            "--database-url",
            f"sqlite:///{tmp_path / 'serve.db'}",
            "--port",
            str(port),
            "--log-format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"{base}/healthz", timeout=1).json()["status"] == "ok":
                    break
            except httpx2.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)  # polling a process we started; there is no event to wait on
        with httpx2.stream("GET", f"{base}/api/v1/events", timeout=10) as stream:
            assert stream.status_code == 200
            stopped_at = time.monotonic()
            server.send_signal(signal.SIGTERM)
            # uvicorn re-raises the signal after its graceful shutdown, as a default handler would.
            assert server.wait(timeout=4) in (0, -signal.SIGTERM)
        took = time.monotonic() - stopped_at
    finally:
        if server.poll() is None:
            server.kill()
        output = server.communicate(timeout=10)[0].decode()
    assert took < 4  # the graceful period (5 s) is not spent waiting for the open stream
    assert "Traceback" not in output
    assert '"level": "error"' not in output


@pytest.mark.anyio
async def test_serve_ends_blocked_asks_at_shutdown_and_their_bundles_stay_answerable(
    tmp_path: Path,
) -> None:
    """Facts §4.9 at shutdown: the agent gets its call back at once; the bundle detaches."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    database = tmp_path / "serve.db"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "clarion",
            "serve",
            "--database-url",
            f"sqlite:///{database}",
            "--port",
            str(port),
            "--log-format",
            "json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    outcome: dict[str, object] = {}
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http:
            with anyio.fail_after(30):
                while True:
                    try:
                        await http.get(f"{base}/healthz")
                        break
                    except httpx2.TransportError:
                        await anyio.sleep(0.1)  # the process is starting; nothing to wait on
            task = (await http.post(f"{base}/api/v1/tasks", json={"title": "t"})).json()
            session = (
                await http.post(f"{base}/api/v1/tasks/{task['id']}/sessions", json={})
            ).json()

            async def agent() -> None:
                url = f"{base}/mcp/session/{session['id']}"
                async with Client(streamable_http_client(url, http_client=http)) as client:
                    result = await client.call_tool(
                        "ask_user_question_kandev",
                        {
                            "questions": [
                                {
                                    "prompt": "Go?",
                                    "options": [
                                        {"label": "Yes", "description": "y"},
                                        {"label": "No", "description": "n"},
                                    ],
                                }
                            ]
                        },
                    )
                    outcome["is_error"] = result.is_error

            async with anyio.create_task_group() as tasks:
                tasks.start_soon(agent)
                with anyio.fail_after(30):
                    while not (await http.get(f"{base}/api/v1/clarification/pending")).json()[
                        "count"
                    ]:
                        await anyio.sleep(0.05)  # until the agent's bundle is listed
                stopped_at = time.monotonic()
                server.send_signal(signal.SIGTERM)
            took = time.monotonic() - stopped_at
        assert await anyio.to_thread.run_sync(server.wait, 10) in (0, -signal.SIGTERM)
    finally:
        if server.poll() is None:
            server.kill()
        server.communicate(timeout=10)
    assert outcome["is_error"] is True  # the call came back (as an ended wait), not dropped
    assert took < 4
    with sqlite3.connect(database) as db:
        (metadata,) = db.execute("SELECT metadata FROM task_session_messages").fetchone()
    stored = json.loads(metadata)
    assert stored["status"] == "pending"  # still answerable: an answer resumes the agent
    assert stored["agent_disconnected"] is True
