"""Issue #29 S3: what 40,000 requests with unique HTTP methods do to a server's memory and to
``/metrics`` (each method used to become a label value: a series that lives as long as the
process).

Starts ``clarion serve`` (the executable given, SQLite in a temporary folder, auth disabled,
a free loopback port), measures its RSS and one scrape, sends ``--requests`` requests, each
with a method of its own (``M`` and a hexadecimal number: ``Ma``, ``Mb``, …; the server
refuses them with 405), pipelined over ``--connections`` keep-alive connections, then
measures RSS and the scrape again and stops the server. Everything is bounded: the whole run
ends after ``--deadline`` seconds at the latest.

    python -m benchmarks.abuse.labels --clarion /work/wt/base/.venv/bin/clarion   # before
    python -m benchmarks.abuse.labels --clarion .venv/bin/clarion                 # after
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path

HOST = "127.0.0.1"
PATH = "/api/v1/clarification/pending"
BATCH = 100  # requests written before their responses are read (pipelining)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def _get(url: str, timeout: float) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return int(response.status), bytes(response.read())


def _scrape(base: str, timeout: float) -> tuple[int, float]:
    """The size of ``/metrics`` in bytes and the median time of three scrapes in seconds."""
    times, size = [], 0
    for _ in range(3):
        started = time.perf_counter()
        _, body = _get(f"{base}/metrics", timeout)
        times.append(time.perf_counter() - started)
        size = len(body)
    return size, statistics.median(times)


async def _read_response(reader: asyncio.StreamReader) -> int:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
    await reader.readexactly(length)
    return status


async def _connection(port: int, methods: Sequence[str]) -> int:
    """Send ``methods`` as pipelined requests on one keep-alive connection; the number of
    responses read."""
    reader, writer = await asyncio.open_connection(HOST, port)
    answered = 0
    try:
        for start in range(0, len(methods), BATCH):
            batch = methods[start : start + BATCH]
            writer.write(
                b"".join(
                    f"{m} {PATH} HTTP/1.1\r\nHost: {HOST}:{port}\r\n\r\n".encode() for m in batch
                )
            )
            await writer.drain()
            for _ in batch:
                await _read_response(reader)
                answered += 1
    finally:
        writer.close()
    return answered


async def _flood(port: int, count: int, connections: int, deadline: float) -> int:
    methods = [f"M{n:x}" for n in range(count)]
    shares = [methods[i::connections] for i in range(connections)]
    async with asyncio.timeout(deadline):
        results = await asyncio.gather(*(_connection(port, share) for share in shares))
    return sum(results)


def _start(clarion: str, folder: Path, port: int) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        "CLARION_DATABASE_URL": f"sqlite:///{folder / 'labels.db'}",
        "CLARION_AUTH": "disabled",
        "CLARION_LOG_FORMAT": "json",
        "CLARION_PORT": str(port),
        "CLARION_HOST": HOST,
    }
    log = (folder / "server.log").open("wb")
    return subprocess.Popen(
        [clarion, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT, cwd=folder
    )


def _wait_ready(base: str, process: subprocess.Popen[bytes], timeout: float) -> None:
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        if process.poll() is not None:
            raise RuntimeError(f"clarion serve exited with {process.returncode}")
        try:
            if _get(f"{base}/healthz", 2)[0] == 200:
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError("clarion serve did not become ready")


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.abuse.labels")
    parser.add_argument("--clarion", required=True, help="the clarion executable to serve")
    parser.add_argument("--requests", type=int, default=40_000)
    parser.add_argument("--connections", type=int, default=4)
    parser.add_argument("--deadline", type=float, default=240.0, help="seconds, at most")
    args = parser.parse_args(argv)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="clarion-labels-") as temporary:
        folder = Path(temporary)
        port = _free_port()
        base = f"http://{HOST}:{port}"
        process = _start(os.path.abspath(args.clarion), folder, port)
        try:
            _wait_ready(base, process, 60)
            _scrape(base, 60)  # warm up: the scrape's own series exist from here on
            rss_before = _rss_mb(process.pid)
            size_before, scrape_before = _scrape(base, 60)
            remaining = args.deadline - (time.monotonic() - started)
            flood_started = time.perf_counter()
            sent = asyncio.run(_flood(port, args.requests, args.connections, remaining))
            flood_s = time.perf_counter() - flood_started
            time.sleep(2)  # let the server settle
            rss_after = _rss_mb(process.pid)
            size_after, scrape_after = _scrape(base, max(5.0, args.deadline))
        finally:
            _stop(process)
    print(f"clarion: {args.clarion}")
    print(f"unique-method requests answered: {sent} in {flood_s:.1f} s")
    print(f"server RSS: {rss_before:.1f} MB before, {rss_after:.1f} MB after")
    print(f"/metrics: {size_before:,} bytes before, {size_after:,} bytes after")
    print(f"scrape time: {scrape_before * 1000:.1f} ms before, {scrape_after * 1000:.1f} ms after")
    return 0


if __name__ == "__main__":
    sys.exit(main())
