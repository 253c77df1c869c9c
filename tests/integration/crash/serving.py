"""Real ``clarion serve`` processes for the crash tests: started with chosen environment
variables, ready when uvicorn says it is listening, killed with SIGKILL, and a small webhook
receiver that records every resume POST."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import attrs
import httpx2

from tests.integration.multiprocess.cluster import (
    ROOT,
    STARTUP_TIMEOUT_S,
    Replica,
    _die_with_parent,
    _pump,
)
from tests.sockets import free_port


def start_serve(
    database_url: str, name: str, folder: Path, env: Mapping[str, str] | None = None
) -> Replica:
    """Start ``clarion serve`` on ``database_url`` with ``env`` added to ours (not waited for)."""
    port = free_port()
    environment = {
        **os.environ,
        "CLARION_LOG_FORMAT": "json",
        "CLARION_AUTH": "disabled",
        **(env or {}),
    }
    command = [sys.executable, "-m", "clarion", "serve", "--database-url", database_url]
    process = subprocess.Popen(
        [*command, "--port", str(port)],
        cwd=ROOT,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
        preexec_fn=_die_with_parent,
    )
    assert process.stdout is not None
    replica = Replica(name=name, port=port, process=process, log_path=folder / f"{name}.log")
    replica.pump = threading.Thread(target=_pump, args=(replica, process.stdout), daemon=True)
    replica.pump.start()
    return replica


def wait_ready(replica: Replica) -> Replica:
    if not replica.ready.wait(STARTUP_TIMEOUT_S) or replica.process.poll() is not None:
        raise RuntimeError(f"{replica.name} did not start:\n{replica.log()}")
    return replica


# What ``clarion serve`` says when its port was taken between free_port() and its own bind
# (another test's process, or a client's ephemeral port, in that gap).
_PORT_TAKEN = "is already in use by another process"
_PORT_ATTEMPTS = 3


def start_ready(
    database_url: str, name: str, folder: Path, env: Mapping[str, str] | None = None
) -> Replica:
    """:func:`start_serve` and :func:`wait_ready`, on a fresh port again when the one chosen
    was taken before the server bound it (any other failure is raised at once)."""
    for attempt in range(1, _PORT_ATTEMPTS + 1):
        replica = start_serve(database_url, name, folder, env)
        try:
            return wait_ready(replica)
        except RuntimeError:
            replica.kill()
            if attempt == _PORT_ATTEMPTS or _PORT_TAKEN not in replica.log():
                raise
    raise AssertionError("unreachable")


@contextmanager
def serving(
    database_url: str, name: str, folder: Path, env: Mapping[str, str] | None = None
) -> Iterator[Replica]:
    replica = start_ready(database_url, name, folder, env)
    try:
        yield replica
    finally:
        replica.kill()


@attrs.define
class Post:
    headers: dict[str, str]
    body: dict[str, Any]
    status: int  # what the receiver answered


@attrs.define
class Receiver:
    """A webhook endpoint answering ``status`` (200 unless told otherwise)."""

    posts: list[Post] = attrs.field(factory=list)
    status: int = 200
    url: str = ""


@contextmanager
def webhook_receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            with lock:
                status = receiver.status
                receiver.posts.append(Post(dict(self.headers.items()), json.loads(body), status))
            self.send_response(status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.url = f"http://127.0.0.1:{server.server_address[1]}/resume"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10)


QUESTION = {
    "id": "go",
    "title": "Go",
    "prompt": "Go ahead?",
    "options": [
        {"label": "Yes", "description": "go"},
        {"label": "No", "description": "stop"},
    ],
}


def new_bundle(http: httpx2.Client, base: str) -> tuple[str, str]:
    """A task, a session and a bundle nobody waits for: (session id, pending id)."""
    task = http.post(f"{base}/api/v1/tasks", json={"title": "t"}).json()
    session = http.post(f"{base}/api/v1/tasks/{task['id']}/sessions", json={}).json()
    created = http.post(
        f"{base}/api/v1/clarification/request",
        json={"session_id": session["id"], "context": "", "questions": [QUESTION]},
    )
    assert created.status_code == 200, created.text
    return session["id"], created.json()["pending_id"]


def answer_body(option: int) -> dict[str, Any]:
    return {"answers": [{"question_id": "go", "selected_options": [f"q1_opt{option}"]}]}


def resumes(http: httpx2.Client, base: str, session_id: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = http.get(f"{base}/api/v1/sessions/{session_id}/resumes").json()[
        "resumes"
    ]
    return found


def pending_ids(http: httpx2.Client, base: str) -> set[str]:
    listed = http.get(f"{base}/api/v1/clarification/pending", params={"limit": 100}).json()
    return {bundle["pending_id"] for bundle in listed["bundles"]}
