"""Bundle lifecycle around a session's turns and states (upstream facts §4.1–§4.6).

- Completing the current turn releases the session's live waiters ("agent moved on") and marks
  its active bundles detached; they stay answerable and resume the agent when answered (§4.2).
- Starting a newer turn supersedes older bundles with no write (§4.4); waiters still blocked on
  them are released, since nothing can answer them any more.
- A terminal session state releases waiters and expires the active bundles (§4.3).
- At start-up, rows left with ``response_delivery_pending`` are reconciled (§4.6).
"""

from __future__ import annotations

from datetime import datetime

import attrs
import structlog

from clarion.app.usecases.access import load_authorized_session
from clarion.app.usecases.publishing import (
    BUNDLE_DETACHED,
    BUNDLE_EXPIRED,
    TURN_STARTED,
    publish,
    publish_bundles,
    publish_superseded,
    session_event,
)
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import InvalidArgument, NotFound, Resource
from clarion.domain.host import Session, Turn
from clarion.domain.model import Identity, SessionState, is_terminal_state
from clarion.domain.rows import Bundle
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository, ReconcileReport
from clarion.ports.events import Event, EventPublisher
from clarion.ports.host import HostRepository
from clarion.ports.waiters import Waiters

log = structlog.get_logger(__name__)

LIFECYCLE_FAILED = "failed to update session lifecycle"


@attrs.define(kw_only=True)
class Lifecycle:
    """Turn and session transitions and their effect on bundles and waiters."""

    _claims: ClaimRepository = attrs.field(alias="claims")
    _host: HostRepository = attrs.field(alias="host")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _waiters: Waiters = attrs.field(alias="waiters")
    _events: EventPublisher = attrs.field(alias="events")
    _run: Runner = attrs.field(alias="runner")

    async def _session(self, identity: Identity, session_id: str) -> Session:
        return await self._run.guarded(
            LIFECYCLE_FAILED,
            load_authorized_session,
            self._host,
            self._authorizer,
            identity,
            session_id,
        )

    async def complete_turn(self, identity: Identity, session_id: str) -> int:
        """The agent's turn ended: release its waiters, detach its active bundles.

        Returns the number of bundles detached (0 on a repeat).

        Raises:
            NotFound: the session does not exist or ``identity`` may not see it.
            ClaimError: the store failed.
        """
        session = await self._session(identity, session_id)
        await self._run.guarded(LIFECYCLE_FAILED, self._host.complete_current_turn, session.id)
        released = self._waiters.cancel_session(session.id)
        rows = await self._run.guarded(
            LIFECYCLE_FAILED, self._claims.detach_active_bundles, session.id
        )
        detached = publish_bundles(self._events, BUNDLE_DETACHED, rows, session.task_id)
        log.info(
            "session.turn_completed",
            session_id=session.id,
            released=len(released),
            detached=detached,
        )
        return detached

    async def start_turn(self, identity: Identity, session_id: str) -> Turn:
        """Start a newer turn; the session's older pending bundles become superseded history.

        Raises:
            NotFound: the session does not exist or ``identity`` may not see it.
            ClaimError: the store failed.
        """
        session = await self._session(identity, session_id)
        # Issue #30: which bundles the new turn closes, to say so (the store records their
        # notification events with the turn itself).
        superseded = await self._run.guarded(
            LIFECYCLE_FAILED, self._claims.active_pending_ids, session.id
        )
        turn = await self._run.guarded(LIFECYCLE_FAILED, self._host.start_turn, session.id)
        self._waiters.cancel_session(session.id)
        publish_superseded(
            self._events,
            superseded,
            task_id=session.task_id,
            session_id=session.id,
            turn_id=turn.id,
        )
        publish(
            self._events,
            Event(
                kind=TURN_STARTED,
                task_id=session.task_id,
                session_id=session.id,
                data={"turn_id": turn.id},
            ),
        )
        return turn

    async def set_session_state(self, identity: Identity, session_id: str, state: str) -> Session:
        """Set the session's state; a terminal state releases waiters and expires bundles.

        Raises:
            InvalidArgument: ``state`` is not a session state (names ``state``).
            NotFound: the session does not exist or ``identity`` may not see it.
            ClaimError: the store failed.
        """
        if state not in SessionState.ALL:
            raise InvalidArgument(
                f"state must be one of {', '.join(SessionState.ALL)}", field="state"
            )
        session = await self._session(identity, session_id)
        updated = await self._run.guarded(
            LIFECYCLE_FAILED, self._host.set_session_state, session.id, state
        )
        if updated is None:
            raise NotFound(resource=Resource.SESSION)
        publish(self._events, session_event(updated))
        if is_terminal_state(updated.state):
            await self._expire(updated)
        return updated

    async def _expire(self, session: Session) -> None:
        """Facts §4.3: release waiters, then expire every active bundle, each on its own."""
        self._waiters.cancel_session(session.id)
        pending_ids = await self._run.guarded(
            LIFECYCLE_FAILED, self._claims.active_pending_ids, session.id
        )
        for pending_id in pending_ids:
            rows = await self._run.guarded(
                LIFECYCLE_FAILED, self._claims.expire_active_bundle, session.id, pending_id
            )
            publish_bundles(self._events, BUNDLE_EXPIRED, rows, session.task_id)

    async def expire_bundle(self, bundle: Bundle) -> int:
        """A deadline's ``expire`` (issue #17): the ordinary expire transition on one bundle,
        then its live waiters end as they do when a session ends (the agent gets today's
        expiry result). Returns the number of rows expired: 0 when the bundle was settled
        first (a human answer won the race), and then no waiter is touched.

        Raises:
            ClaimError: the store failed.
        """
        rows = await self._run.guarded(
            LIFECYCLE_FAILED,
            self._claims.expire_active_bundle,
            bundle.session_id,
            bundle.pending_id,
        )
        if rows:
            self._waiters.cancel(bundle.pending_id)
            publish_bundles(self._events, BUNDLE_EXPIRED, rows, bundle.task_id)
        return len(rows)

    async def reconcile_on_startup(self, older_than: datetime | None = None) -> ReconcileReport:
        """Restore (or, when no longer restorable, finalize) bundles whose delivery was in
        flight when a process stopped. Run before serving; with several replicas pass
        ``older_than`` (and run it periodically) so deliveries another replica is finishing
        are left alone.

        Raises:
            ClaimError: the store failed (start-up should then fail).
        """
        report = await self._run.guarded(
            LIFECYCLE_FAILED, self._claims.reconcile_undelivered, older_than
        )
        # At info when it changed something: on PostgreSQL it runs every few seconds.
        emit = log.info if report.restored or report.finalized else log.debug
        emit(
            "clarification.reconciled",
            restored=len(report.restored),
            finalized=len(report.finalized),
        )
        return report
