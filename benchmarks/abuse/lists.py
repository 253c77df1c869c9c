"""Issue #29 F8: how large one list response gets, and what eight at once cost the server.

Starts ``clarion serve`` (the executable given by ``--clarion``; SQLite in a temporary folder,
authentication disabled, a free loopback port), fills it with 200 bundles of the largest size
the default text limits allow (4 questions of 6 options, every text at its limit, in a
4-byte character), then prints:

- the largest response of ``GET /api/v1/clarification/pending?limit=200`` and how many pages
  walking the whole list by ``next_cursor`` takes (every bundle exactly once is checked);
- the server's RSS before and after 8 concurrent such requests, and how long they took.

Run it against the code before and after::

    python -m benchmarks.abuse.lists --clarion /work/wt/base/.venv/bin/clarion
    python -m benchmarks.abuse.lists --clarion .venv/bin/clarion
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import anyio
import httpx2

BUNDLES = 200
PER_SESSION = 10
CONCURRENT = 8
WIDE = "\U0001d11e"  # one code point, four bytes of UTF-8
START_TIMEOUT_S = 60.0
REQUEST_TIMEOUT_S = 120.0


def _free_port() -> int:  # loopback only
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS")


def database_url(folder: Path) -> str:
    return f"sqlite:///{folder / 'bench.db'}"


@contextlib.contextmanager
def served(
    clarion: str, folder: Path, settings: dict[str, str] | None = None
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``clarion serve`` on :func:`database_url` and a free loopback port with the default
    settings plus ``settings`` (``CLARION_*`` variables); its base URL and process."""
    port = _free_port()
    env = {name: value for name, value in os.environ.items() if not name.startswith("CLARION_")}
    env.update({"CLARION_LOG_FORMAT": "json", **(settings or {})})
    command = [
        clarion,
        "serve",
        "--database-url",
        database_url(folder),
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"clarion serve exited: see {folder / 'server.log'}")
            try:
                if httpx2.get(f"{base}/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("clarion serve did not start in time")
            time.sleep(0.2)
        yield base, process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def large_questions(seed: int) -> list[dict[str, Any]]:
    """Four questions of six options, every text at its default limit (in 4-byte
    characters); ids and the first title characters differ per bundle."""
    questions = []
    for q in range(4):
        options = [
            {
                "option_id": f"o{q}{o}",
                "label": f"{seed} {o} " + WIDE * 190,
                "description": WIDE * 1000,
            }
            for o in range(6)
        ]
        questions.append(
            {
                "id": f"q{q}",
                "title": f"{seed}-{q} " + WIDE * 190,
                "prompt": WIDE * 2000,
                "options": options,
            }
        )
    return questions


def _post(client: httpx2.Client, path: str, body: Any) -> Any:
    response = client.post(
        path,
        content=json.dumps(body, ensure_ascii=False).encode(),
        headers={"Content-Type": "application/json"},
    )
    if response.status_code not in (200, 201):
        raise RuntimeError(f"{path}: {response.status_code} {response.text[:200]}")
    return response.json()


def _fill(base: str) -> list[str]:
    created: list[str] = []
    with httpx2.Client(base_url=base, timeout=REQUEST_TIMEOUT_S) as client:
        for _ in range(BUNDLES // PER_SESSION):
            task = _post(client, "/api/v1/tasks", {"title": "bench"})
            session = _post(client, f"/api/v1/tasks/{task['id']}/sessions", {})
            for _ in range(PER_SESSION):
                body = {
                    "session_id": session["id"],
                    "questions": large_questions(len(created)),
                    "context": WIDE * 10000,
                }
                created.append(_post(client, "/api/v1/clarification/request", body)["pending_id"])
    return created


def _walk(base: str) -> tuple[int, int, list[str]]:
    """(largest response in bytes, pages, pending ids in order) of the whole pending list."""
    largest, pages = 0, 0
    seen: list[str] = []
    cursor = ""
    with httpx2.Client(base_url=base, timeout=REQUEST_TIMEOUT_S) as client:
        while True:
            params = {"limit": "200", **({"cursor": cursor} if cursor else {})}
            response = client.get("/api/v1/clarification/pending", params=params)
            response.raise_for_status()
            largest = max(largest, len(response.content))
            pages += 1
            body = response.json()
            seen.extend(bundle["pending_id"] for bundle in body["bundles"])
            cursor = body["next_cursor"]
            if not cursor:
                return largest, pages, seen


async def _concurrent(base: str) -> list[int]:
    sizes: list[int] = []
    async with httpx2.AsyncClient(base_url=base, timeout=REQUEST_TIMEOUT_S) as client:

        async def one() -> None:
            response = await client.get("/api/v1/clarification/pending", params={"limit": "200"})
            response.raise_for_status()
            sizes.append(len(response.content))

        async with anyio.create_task_group() as tasks:
            for _ in range(CONCURRENT):
                tasks.start_soon(one)
    return sizes


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else "")
    parser.add_argument("--clarion", required=True, help="the clarion executable to serve")
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory(prefix="clarion-abuse-lists-") as folder,
        served(args.clarion, Path(folder)) as (base, process),
    ):
        started = time.monotonic()
        created = _fill(base)
        print(f"bundles: {len(created)} created in {time.monotonic() - started:.1f} s")
        largest, pages, seen = _walk(base)
        assert seen == created, "the cursor walk lost or repeated bundles"
        mib = largest / 2**20
        print(f"largest list response (limit=200): {largest:,} bytes ({mib:.2f} MiB)")
        print(f"pages to walk all {len(created)} bundles: {pages} (every bundle exactly once)")
        before = _rss_mb(process.pid)
        started = time.monotonic()
        sizes = anyio.run(_concurrent, base)
        took = time.monotonic() - started
        after = _rss_mb(process.pid)
        print(
            f"{CONCURRENT} concurrent limit=200 requests: {took:.1f} s, "
            f"{sum(sizes) / 2**20:.1f} MiB in all"
        )
        print(f"server RSS: {before:.0f} MB before, {after:.0f} MB after")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
