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
from collections.abc import Collection, Mapping
from typing import Any, Final, TypeVar, cast

import structlog

from clarion.domain.errors import ValidationError
from clarion.domain.model import Answer
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import ClarificationRow
from clarion.ports.claims import ClaimRepository, ClaimResult, LiveDelivery, ResumeRecord
from clarion.ports.resume import ResumeDispatcher, ResumeRequest

log = structlog.get_logger(__name__)

_Written = TypeVar("_Written")

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


class _CrashingClaims:
    """Delegates everything to ``inner``; dies after the named write committed."""

    def __init__(self, inner: ClaimRepository, point: str) -> None:
        self._inner = inner
        self._point = point

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def _after(self, point: str, written: _Written | None) -> _Written | None:
        """``written``, unless the step did write (not None) and this process is to die
        right after ``point``."""
        if written is not None and self._point == point:
            _die(point)
        return written

    def complete_active_bundle(
        self,
        pending_id: str,
        terminal: str,
        responses: Mapping[str, Answer] | None,
        *,
        resolved_by: ResolvedBy | None = None,
    ) -> ClaimResult:
        result = self._inner.complete_active_bundle(
            pending_id, terminal, responses, resolved_by=resolved_by
        )
        if result.claimed and self._point == "claim":
            _die(self._point)
        return result

    def record_resume(
        self,
        pending_id: str,
        terminal: str,
        claimed_ids: Collection[str],
        resume: ResumeRecord,
    ) -> tuple[ClarificationRow, ...] | None:
        return self._after(
            "resume-recorded", self._inner.record_resume(pending_id, terminal, claimed_ids, resume)
        )

    def finalize_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        return self._after(
            "finalize", self._inner.finalize_delivery(pending_id, terminal, claimed_ids)
        )

    def finalize_live_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> LiveDelivery | None:
        return self._after(
            "finalize", self._inner.finalize_live_delivery(pending_id, terminal, claimed_ids)
        )

    def restore_active_bundle(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        return self._after(
            "restore", self._inner.restore_active_bundle(pending_id, terminal, claimed_ids)
        )


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
