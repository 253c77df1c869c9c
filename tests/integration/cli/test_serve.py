"""``clarion serve`` as a real process: it serves, and stops promptly and cleanly."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_serve_stops_cleanly_at_once_even_with_an_event_stream_open(tmp_path: Path) -> None:
    port = _free_port()
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
