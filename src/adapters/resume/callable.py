"""A resume dispatcher wrapping a plain function, for services that embed Clarion.

The function receives the :class:`clarion.ports.ResumeRequest`. Returning (any value, or
awaiting to completion) accepts the resume; raising refuses it. A synchronous function runs on
a worker thread (through the ``offload`` it is given: the composition's one Runner) so it never
blocks the event loop.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from typing import TypeAlias

import structlog

from clarion.app.usecases.runner import Runner
from clarion.domain.errors import failure_fields
from clarion.ports.resume import ResumeRefused, ResumeRequest
from clarion.ports.threads import Offload

log = structlog.get_logger(__name__)

ResumeFunction: TypeAlias = Callable[[ResumeRequest], Awaitable[object] | object]


class CallableResumeDispatcher:
    """:class:`clarion.ports.ResumeDispatcher` over an async or sync callable."""

    def __init__(self, function: ResumeFunction, *, offload: Offload | None = None) -> None:
        """``offload`` runs a synchronous ``function`` (a Runner of its own when None)."""
        self._function = function
        self._offload = offload if offload is not None else Runner()

    async def dispatch(self, request: ResumeRequest) -> None:
        """Call the function.

        Raises:
            ResumeRefused: the function raised (its exception is chained).
        """
        try:
            if _is_async(self._function):
                result = self._function(request)
            else:
                result = await self._offload(self._function, request)
            if inspect.isawaitable(result):
                await result
        except ResumeRefused:
            raise
        except Exception as exc:  # the host's callback decides: any error refuses
            log.warning(
                "resume.callable_refused", pending_id=request.pending_id, **failure_fields(exc)
            )
            raise ResumeRefused(f"resume callback failed: {type(exc).__name__}") from exc


def _is_async(function: object) -> bool:
    target = function.func if isinstance(function, functools.partial) else function
    return inspect.iscoroutinefunction(target) or inspect.iscoroutinefunction(type(target).__call__)
