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


def test_serve_answers_a_stalled_body_408_and_limits_connections_per_address(
    tmp_path: Path,
) -> None:
    """#29 S1 through the real command and its flags: a head with 1 of 100 body bytes is
    answered 408 and closed at ``--body-timeout``; one address holds at most
    ``--max-connections-per-client`` connections, and its probe of /healthz is answered."""
    import socket

    port = free_port()
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
            "--body-timeout",
            "0.5",
            "--max-connections-per-client",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def connect(source: str) -> socket.socket:
        connection = socket.create_connection(
            ("127.0.0.1", port), timeout=20, source_address=(source, 0)
        )
        connection.settimeout(20)
        return connection

    def read_all(connection: socket.socket) -> bytes:
        received = b""
        while chunk := connection.recv(4096):
            received += chunk
        return received

    def get(path: str, source: str) -> bytes:
        with connect(source) as connection:
            connection.sendall(
                f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n".encode()
            )
            return read_all(connection)

    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx2.TransportError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise
                time.sleep(0.1)  # polling a process we started; there is no event to wait on
        with connect("127.0.0.1") as stalled:
            stalled.sendall(
                b"POST /api/v1/tasks HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"
            )
            answer = read_all(stalled)  # to the end: the server closes the connection
        assert answer.startswith(b"HTTP/1.1 408")
        assert b"CLARION_BODY_TIMEOUT_S" in answer
        held = [connect("127.0.0.2") for _ in range(2)]
        assert get("/healthz", "127.0.0.1").startswith(b"HTTP/1.1 200")  # both were accepted
        refused = get("/api/v1/tasks", "127.0.0.2")
        assert refused.startswith(b"HTTP/1.1 429")
        assert b"CLARION_MAX_CONNECTIONS_PER_CLIENT" in refused
        assert get("/healthz", "127.0.0.2").startswith(b"HTTP/1.1 200")
        assert get("/api/v1/tasks", "127.0.0.1").startswith(b"HTTP/1.1 200")
    finally:
        for connection in held:
            connection.close()
        server.kill()
        server.wait(10)
