"""Offloading blocking work to worker threads (issue #32).

Every blocking call an async caller makes — a repository call, a credential check, the user's
resume function, a Slack or Apprise request — runs on a worker thread through one
:class:`Offload`: in Clarion that is the one :class:`clarion.app.usecases.runner.Runner`, whose
shared :class:`anyio.CapacityLimiter` bounds the threads (and database connections) the store
calls use; outbound requests go through its :meth:`Offload.outbound`, on a pool of their own. An
adapter that blocks is handed the Runner as an ``Offload`` rather than calling
``anyio.to_thread`` itself; ``tests/architecture/test_offloading.py`` lists the few places that
do, each with its reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, Protocol, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class Offload(Protocol):
    """Runs a synchronous callable on a worker thread of the shared, bounded pool."""

    async def __call__(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``function(*args, **kwargs)`` on a worker thread. A cancelled caller waits for it to
        finish (a write that started completes), then sees the cancellation."""
        ...

    async def outbound(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """An outbound request (Slack's Web API, Apprise) on a worker thread outside the store
        pool, so a slow remote never holds the threads store calls need; a cancelled caller
        does not wait for it (the request's own timeout ends the thread, and it writes
        nothing of ours)."""
        ...
