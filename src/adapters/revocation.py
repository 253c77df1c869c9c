"""Revocation reaches requests already running (issue #29 S8).

A credential is checked when a request arrives. A request that runs on — an agent's blocking
ask, a REST ``/wait``, a legacy MCP session's stream — would otherwise outlive a revoked token,
a deactivated user or a logged-out browser session. :class:`RevocationWatch` re-checks the
credential of every running request every ``interval`` seconds and ends the request once it
stopped working: with ``401 {"error": "credential revoked"}`` when nothing was sent yet, else
by finishing the response where it stands (the client sees its stream end). An agent's ask
ended this way detaches its question like any call whose client went away (facts §4.9).

Checks are shared: however many requests run on one credential, it is looked up at most once
per interval (``key`` is the credential's digest, never the secret). A check that fails — the
store is down — ends nothing; the next interval asks again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

import anyio
import attrs
import structlog
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

CHECK_INTERVAL_S: Final = 2.0
REVOKED: Final = "credential revoked"
_PRUNE_AT: Final = 10_000

Check = Callable[[], Awaitable[bool]]
"""True while the credential still works; False once it was revoked, expired or its user
deactivated."""

log = structlog.get_logger(__name__)


@attrs.define
class _Result:
    at: float
    valid: bool = True
    running: anyio.Event | None = None


class RevocationWatch:
    """See the module docstring. One per process surface (REST, MCP), shared by its
    requests."""

    def __init__(self, *, interval: float = CHECK_INTERVAL_S) -> None:
        if interval <= 0:
            raise ValueError("interval must be positive")
        self.interval = interval
        self._results: dict[str, _Result] = {}

    async def still_valid(self, key: str, check: Check) -> bool:
        """``check()``, shared by every request on ``key`` for one interval (the REST event
        stream shares its re-checks the same way)."""
        now = anyio.current_time()
        result = self._results.get(key)
        if result is not None and result.running is not None:
            await result.running.wait()
            return result.valid
        if result is not None and now - result.at < self.interval:
            return result.valid
        if len(self._results) >= _PRUNE_AT:
            self._results = {
                kept_key: kept
                for kept_key, kept in self._results.items()
                if kept.running is not None or now - kept.at < self.interval
            }
        result = self._results[key] = _Result(at=now, running=anyio.Event())
        running = result.running
        assert running is not None
        try:
            result.valid = await check()
        except Exception:
            log.warning("credential_check_failed", exc_info=True)
            result.valid = True
        finally:
            result.at = anyio.current_time()
            result.running = None
            running.set()
        return result.valid

    async def serve(
        self, key: str, check: Check, app: ASGIApp, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Run ``app`` for this request until it ends or ``check`` says the credential no
        longer works."""
        started = False
        finished = False

        async def tracked(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        revoked = False
        async with anyio.create_task_group() as tasks:

            async def watch() -> None:
                nonlocal revoked
                while True:
                    await anyio.sleep(self.interval)
                    if not await self.still_valid(key, check):
                        revoked = True
                        tasks.cancel_scope.cancel()
                        return

            tasks.start_soon(watch)
            await app(scope, receive, tracked)
            tasks.cancel_scope.cancel()
        if not revoked or finished:
            return
        log.info("request_ended_on_revocation", path=scope.get("path", ""))
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            try:
                if not started:
                    await JSONResponse({"error": REVOKED}, status_code=401)(scope, receive, send)
                else:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            except Exception:
                log.debug("revocation_close_failed", exc_info=True)
