"""Calling the synchronous ports from async use cases.

Domain and ports are synchronous; the use cases are async. Every repository call goes through
one :class:`Runner`, which runs it on a worker thread under one shared
:class:`anyio.CapacityLimiter`, so the number of threads (and database connections) in use is
bounded however many agents wait or answer at once. Waiting itself never holds a thread.

The Runner is also the :class:`clarion.ports.threads.Offload` every adapter that blocks is
handed (issue #32): one place offloads, under one limiter.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import anyio
import attrs
import structlog

from clarion.domain.errors import ClaimError, ClarionError, failure_fields

log = structlog.get_logger(__name__)

P = ParamSpec("P")
T = TypeVar("T")

DEFAULT_THREADS = 16


@attrs.frozen
class StoreFailure:
    """What a failed store call is reported as: a safe ``message`` for the caller, and the
    bundle or session it concerned for the log."""

    message: str
    pending_id: str = ""
    session_id: str = ""


class Runner:
    """Runs synchronous callables on a bounded pool of worker threads (an
    :class:`clarion.ports.threads.Offload`)."""

    def __init__(self, limiter: anyio.CapacityLimiter | None = None) -> None:
        self.limiter = limiter if limiter is not None else anyio.CapacityLimiter(DEFAULT_THREADS)

    async def __call__(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args, **kwargs)`` on a worker thread. The call is not abandoned when the
        caller is cancelled: a write that started finishes, then the cancellation is seen."""
        return await anyio.to_thread.run_sync(
            functools.partial(function, *args, **kwargs), limiter=self.limiter
        )

    async def outbound(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """An outbound request (Slack's Web API, Apprise) on a worker thread of anyio's default
        pool, not under :attr:`limiter`: a slow remote must not hold the threads the store
        calls need (the notification worker's ``concurrency`` bounds how many run). A
        cancelled caller does not wait for it — the worker's per-delivery deadline ends the
        wait at once, the request's own timeout ends the thread."""
        return await anyio.to_thread.run_sync(
            functools.partial(function, *args, **kwargs), abandon_on_cancel=True
        )

    async def guarded(
        self,
        failure: str | StoreFailure,
        function: Callable[P, T],
        *args: P.args,
        **kwargs: P.kwargs,
    ) -> T:
        """Like calling the runner, but a store failure becomes :class:`ClaimError` with the
        safe message of ``failure`` (the driver's text is logged with the pending id, never
        returned: R4a, fixes §9.3). A store's own :class:`ClaimError` is a store failure too
        (its message may name rows); Clarion's other errors (``NotFound``, ...) pass through."""
        if isinstance(failure, str):
            failure = StoreFailure(failure)
        try:
            return await self(function, *args, **kwargs)
        except ClaimError as exc:
            self._log_failure(failure, exc)
            raise ClaimError(failure.message) from exc
        except ClarionError:
            raise
        except Exception as exc:  # the store boundary: whatever a driver raises is a 500 (R4a)
            self._log_failure(failure, exc)
            raise ClaimError(failure.message) from exc

    @staticmethod
    def _log_failure(failure: StoreFailure, exc: BaseException) -> None:
        log.error(
            "store.failed",
            operation=failure.message,
            pending_id=failure.pending_id,
            session_id=failure.session_id,
            **failure_fields(exc),
        )
