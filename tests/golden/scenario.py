"""A deterministic Clarion served on a socket, and a recorder of what goes over its wire.

Time and identity are fixed: :class:`StepClock` is frozen within a step and moves one second
per recorded exchange; :class:`StepIds` issues UUID-shaped ids numbered by step and by order
within the step. Every exchange the golden test records is one step, so a timestamp or an id
in a body depends only on which exchange made it (and, for ids, on the order a single request
draws them) — not on how many clock reads or ids the requests before it needed.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx2
import pytest
from mcp.types import CallToolResult, Tool

from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.model import Resolution
from tests.sockets import serving

START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
GOLDEN_DIR = Path(__file__).resolve().parent / "wire"
UPDATE_VARIABLE = "CLARION_UPDATE_GOLDEN"


class StepClock:
    """:class:`clarion.ports.Clock` frozen at ``START + step seconds``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.step = 0

    def now(self) -> datetime:
        with self._lock:
            return START + timedelta(seconds=self.step)

    def advance(self) -> int:
        with self._lock:
            self.step += 1
            return self.step


@attrs.define
class StepIds:
    """:class:`clarion.ports.IdGenerator`: ``00000000-0000-4000-8<step>-<n>`` (UUID-shaped,
    in case anything checks the shape), ``n`` counting from 1 within each step."""

    clock: StepClock
    _lock: threading.Lock = attrs.field(factory=threading.Lock)
    _counts: dict[int, int] = attrs.field(factory=dict)

    def new_id(self) -> str:
        with self._lock:
            step = self.clock.step
            count = self._counts.get(step, 0) + 1
            self._counts[step] = count
        return f"00000000-0000-4000-8{step:03d}-{count:012d}"


def canonical(value: object) -> str:
    """The golden text of ``value``: JSON with sorted keys, two-space indent, one final
    newline; non-ASCII kept as is."""
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def scrub(body: Any) -> Any:
    """Replace the values that are random by design, and only those.

    ``agent_token`` (session creation) and ``csrf_token`` (login, ``/auth/me``) are fresh
    ``secrets`` output on every run — no clock or id generator decides them — so the golden
    keeps their presence and shape (the prefix, empty or not), not their bytes.
    """
    if isinstance(body, dict):
        scrubbed: dict[str, Any] = {}
        for key, value in body.items():
            if key == "agent_token" and isinstance(value, str) and value:
                prefix = value.split("_", 2)
                scrubbed[key] = f"{prefix[0]}_{prefix[1]}_<random>" if len(prefix) == 3 else value
            elif key == "csrf_token" and isinstance(value, str) and value:
                scrubbed[key] = "<random>"
            else:
                scrubbed[key] = scrub(value)
        return scrubbed
    if isinstance(body, list):
        return [scrub(item) for item in body]
    return body


@attrs.define
class Transcript:
    """The recorded exchanges of one golden file, in order; case names are unique."""

    name: str
    entries: list[dict[str, Any]] = attrs.field(factory=list)

    def add(self, case: str, entry: dict[str, Any]) -> None:
        assert case not in {e["case"] for e in self.entries}, f"duplicate case {case!r}"
        self.entries.append({"case": case, **entry})


def http_entry(request: str, response: httpx2.Response) -> dict[str, Any]:
    """Status, media type and JSON body of a REST response (the body parsed, then scrubbed)."""
    return {
        "request": request,
        "status": response.status_code,
        "content_type": response.headers.get("content-type", ""),
        "body": scrub(response.json()) if response.content else None,
    }


def tool_entry(tool: str, arguments: dict[str, Any], result: CallToolResult) -> dict[str, Any]:
    """A tool call and its whole result as the protocol carries it (camelCase, ``_meta``),
    including the text twin of the structured content byte for byte."""
    return {
        "tool": tool,
        "arguments": arguments,
        "result": result.model_dump(mode="json", by_alias=True, exclude_none=True),
    }


def tools_listing(tools: list[Tool]) -> list[dict[str, Any]]:
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


class SignallingWaiters(InMemoryWaiters):
    """The shipped in-memory waiters, announcing when a caller really waits on an entry (a
    ``POST /request`` bundle is registered at creation, so ``GET /{id}`` cannot tell)."""

    def __init__(self) -> None:
        super().__init__()
        self._entered: dict[str, anyio.Event] = {}

    def __bool__(self) -> bool:
        # build_clarion picks ``waiters or InMemoryWaiters()``, and InMemoryWaiters has a
        # ``__len__``: with no entry yet an injected instance would be falsy and replaced.
        return True

    def entered(self, pending_id: str) -> anyio.Event:
        return self._entered.setdefault(pending_id, anyio.Event())

    async def wait(self, pending_id: str, timeout: float) -> Resolution:
        self.entered(pending_id).set()
        return await super().wait(pending_id, timeout)


@attrs.define
class Served:
    clarion: Clarion
    clock: StepClock
    waiters: SignallingWaiters
    base_url: str

    def url(self, path: str) -> str:
        return f"{self.base_url}{path}"


# Issue #34: a fixed signing key, so the receipts (Ed25519 is deterministic) are the same
# bytes on every run.
GOLDEN_RECEIPT_KEYS = (("golden-1", bytes(range(1, 33))),)


@contextlib.asynccontextmanager
async def serve(database_url: str, *, auth_enabled: bool) -> AsyncIterator[Served]:
    """``build_clarion`` with the step clock and ids, under uvicorn on a free 127.0.0.1 port
    (a loopback Host, which every surface accepts). Progress pings are not recorded and read
    neither the clock nor the ids, so when one happens to be sent changes nothing here."""
    clock = StepClock()
    settings = Settings(
        database_url=database_url,
        auth_enabled=auth_enabled,
        progress_interval_s=15.0,
        ask_timeout_s=600.0,
        live_delivery="memory",
        receipt_keys=GOLDEN_RECEIPT_KEYS,
    )
    waiters = SignallingWaiters()
    clarion = build_clarion(settings, clock=clock, ids=StepIds(clock), waiters=waiters)
    # Start-up's storage step, as ``clarion serve`` runs it before serving: the scenario seeds
    # users and tokens as soon as the socket accepts, before the lifespan may have run.
    clarion.upgrade()
    try:
        async with serving(clarion.asgi_app) as url:
            try:
                yield Served(clarion, clock, waiters, url)
            finally:
                clarion.begin_shutdown()
    finally:
        clarion.close()


def check_golden(produced: dict[str, object], directory: Path) -> None:
    """Compare each produced document with its golden file byte for byte; with
    ``CLARION_UPDATE_GOLDEN=1`` rewrite the files instead and fail, naming them."""
    updating = os.environ.get(UPDATE_VARIABLE) == "1"
    rewritten: list[str] = []
    for name, value in produced.items():
        path: Path = directory / f"{name}.json"
        text = canonical(value)
        if updating:
            if not path.exists() or path.read_text(encoding="utf-8") != text:
                directory.mkdir(parents=True, exist_ok=True)
                path.write_text(text, encoding="utf-8")
                rewritten.append(path.name)
            continue
        assert path.exists(), f"{path} is missing; run with {UPDATE_VARIABLE}=1 to create it"
        golden = path.read_text(encoding="utf-8")
        if golden != text and isinstance(value, list):
            # Name the first differing case before the full-text diff.
            old = {entry["case"]: entry for entry in _entries(golden)}
            for entry in value:
                assert isinstance(entry, dict)
                assert canonical(old.get(entry["case"])) == canonical(entry), entry["case"]
        assert golden == text, f"{path.name} differs from the wire"
    if updating:
        pytest.fail(f"{UPDATE_VARIABLE}=1: rewrote {rewritten or 'nothing'}; rerun without it")


def _entries(text: str) -> list[dict[str, Any]]:
    loaded = json.loads(text)
    assert isinstance(loaded, list)
    return loaded
