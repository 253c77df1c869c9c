"""Deterministic crash points for the crash tests: ``CLARION_TEST_CRASH_AFTER=<point>``.

When (and only when) that variable names a point, the composition root wraps the claim
repository and the resume dispatcher so that the process kills itself with SIGKILL right after
the named step has committed (or, for ``resume-accepted``, right after the dispatcher accepted)
— the first time it happens. Unset, which is the default, nothing is wrapped and nothing here
runs. It exists so a test can stop a real ``clarion serve`` at an exact point of the answer
path and check what recovery makes of the state it left (``docs/reliability.md``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Mapping
from typing import Any, Final, cast

import structlog

from clarion.domain.errors import ValidationError
from clarion.domain.rows import ClarificationRow
from clarion.ports.claims import ClaimRepository, ClaimResult
from clarion.ports.resume import ResumeDispatcher, ResumeRequest

log = structlog.get_logger(__name__)

CRASH_POINTS: Final = (
    "claim",  # the winning claim committed
    "resume-recorded",  # the outbox's one transaction (turn, message, finalize) committed
    "resume-accepted",  # a dispatcher accepted the resume; the finalize has not run
    "finalize",  # the delivery marker was cleared (a live delivery's with the session state)
    "restore",  # a refused delivery was rolled back
)


def parse_crash_point(value: str, name: str) -> str:
    """Raises ValidationError unless ``value`` is one of :data:`CRASH_POINTS`."""
    if value not in CRASH_POINTS:
        raise ValidationError(
            f"{name} must be one of {', '.join(CRASH_POINTS)}, got {value!r}", field=name
        )
    return value


def _die(point: str) -> None:
    log.warning("crashpoint.kill", point=point)
    os.kill(os.getpid(), signal.SIGKILL)


def _wrote(written: object) -> bool:
    """A write that returns what it wrote returns None when it wrote nothing."""
    return written is not None


def _claimed(result: ClaimResult) -> bool:
    return result.claimed


# The claim repository's writes a point follows: the method, the point, and whether its
# result says the step did write (a process dies only after a write that happened).
_WRITES: Final[Mapping[str, tuple[str, Callable[[Any], bool]]]] = {
    "complete_active_bundle": ("claim", _claimed),
    "record_resume": ("resume-recorded", _wrote),
    "finalize_delivery": ("finalize", _wrote),
    "finalize_live_delivery": ("finalize", _wrote),
    "restore_active_bundle": ("restore", _wrote),
}


class _CrashingClaims:
    """Delegates everything to ``inner``; dies after the named write committed."""

    def __init__(self, inner: ClaimRepository, point: str) -> None:
        self._inner = inner
        self._point = point

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._inner, name)
        write = _WRITES.get(name)
        if write is None or write[0] != self._point:
            return method
        point, wrote = write

        def then_die(*args: Any, **kwargs: Any) -> Any:
            result = method(*args, **kwargs)
            if wrote(result):
                _die(point)
            return result

        return then_die


class _CrashingDispatcher:
    def __init__(self, inner: ResumeDispatcher, point: str) -> None:
        self._inner = inner
        self._point = point

    async def dispatch(self, request: ResumeRequest) -> tuple[ClarificationRow, ...] | None:
        rows = await self._inner.dispatch(request)
        if self._point == "resume-accepted":
            _die(self._point)
        return rows


def crashing_claims(point: str, claims: ClaimRepository) -> ClaimRepository:
    """``claims`` itself when ``point`` is empty, else wrapped to die at ``point``."""
    if not point:
        return claims
    log.warning("crashpoint.armed", point=point)
    return cast(ClaimRepository, _CrashingClaims(claims, point))


def crashing_dispatcher(point: str, dispatcher: ResumeDispatcher) -> ResumeDispatcher:
    """``dispatcher`` itself when ``point`` is empty, else wrapped to die at ``point``."""
    return _CrashingDispatcher(dispatcher, point) if point else dispatcher
