"""The operations on a bundle an agent is waiting on: ``GET /:id``, ``GET /:id/wait`` and
``POST /:id/cancel`` (upstream facts §2.1), and the record of who asked each live bundle, which
decides whose wait takes the delivery."""

from __future__ import annotations

from datetime import datetime

import anyio
import attrs
import structlog

from clarion.app.usecases.access import Assignment, GroupsOf, authorize_bundle
from clarion.app.usecases.publishing import BUNDLE_CANCELLED, publish_bundles
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.errors import NOT_ACTIVE_MESSAGE, NOT_FOUND_MESSAGE, NotActive, NotFound
from clarion.domain.model import Identity, Question, Resolution
from clarion.domain.replay import replay_winner
from clarion.domain.rows import Bundle, is_askers_wait
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.events import EventPublisher
from clarion.ports.waiters import WaitEnd, WaitEnded, Waiters

log = structlog.get_logger(__name__)

ASK_TIMEOUT_S = 7200.0  # CLARION_ASK_TIMEOUT_S default (facts §2.8)
CANCEL_FAILED = "failed to cancel clarification request"
WATCH_FAILED = "failed to read clarification state"
WATCH_INTERVAL_S = 1.0  # how often a bystander's wait re-reads the durable rows


@attrs.frozen
class LiveRequest:
    """``GET /:id``: a bundle an agent is still waiting on (upstream facts §2.1 Request)."""

    pending_id: str
    session_id: str
    task_id: str
    questions: tuple[Question, ...]
    context: str
    created_at: datetime


@attrs.define
class LiveRequests:
    """Get, wait on and cancel a bundle whose agent is waiting."""

    _claims: ClaimRepository = attrs.field(alias="claims")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _waiters: Waiters = attrs.field(alias="waiters")
    _events: EventPublisher = attrs.field(alias="events")
    _run: Runner = attrs.field(alias="runner")
    ask_timeout: float = ASK_TIMEOUT_S
    _watch_interval: float = attrs.field(default=WATCH_INTERVAL_S, alias="watch_interval")
    # Issue #33: a bundle assigned to candidates is theirs (and its asker's) to see.
    _groups_of: GroupsOf | None = attrs.field(default=None, alias="groups_of")

    async def _authorized(self, identity: Identity, pending_id: str) -> Bundle:
        assignment = Assignment(groups_of=self._groups_of, asker_sees=True)
        return await authorize_bundle(
            self._run, self._claims, self._authorizer, identity, pending_id, assignment
        )

    async def get_request(self, identity: Identity, pending_id: str) -> LiveRequest:
        """``GET /:id``: authorize first (A7), then the live entry.

        Raises:
            NotFound: not visible to ``identity``, or nobody waits on it any more.
            ClaimError: the store failed.
        """
        bundle = await self._authorized(identity, pending_id)
        if not self._waiters.has_entry(pending_id):
            raise NotFound(NOT_FOUND_MESSAGE)
        return LiveRequest(
            pending_id=pending_id,
            session_id=bundle.session_id,
            task_id=bundle.task_id,
            questions=bundle.questions,
            context=bundle.context,
            created_at=bundle.created_at,
        )

    async def wait(
        self, identity: Identity, pending_id: str, timeout: float | None = None
    ) -> Resolution:
        """``GET /:id/wait``: authorize first (A5a), then wait.

        Only the asker's wait is the live waiter: the identity that created the bundle over
        REST (the same user, which is also what the session's agent token acts as). It takes
        the delivery in the same turn. Anyone else who may see the bundle — and any REST caller
        of a bundle an MCP ask created — only *watches*: the wait returns the winner's
        resolution once the bundle is resolved and its delivery confirmed, or ends at its own
        timeout, and it never takes the delivery or keeps the bundle from detaching. With
        authentication disabled there is one identity, and every wait is the asker's.

        Raises:
            NotFound: not visible to ``identity`` (same for foreign and fabricated ids, A5a).
            ClaimError: the store failed.
            WaitEnded: no live entry (A7), cancelled, timed out or delivery failed (the 504).
        """
        bundle = await self._authorized(identity, pending_id)
        seconds = self.ask_timeout if timeout is None else timeout
        if not self._waiters.has_entry(pending_id):
            raise WaitEnded(WaitEnd.NOT_FOUND, pending_id)
        if is_askers_wait(bundle.asker, identity):  # read from the store: any replica knows
            return await self._waiters.wait(pending_id, seconds)
        return await self._watch(pending_id, seconds)

    async def _watch(self, pending_id: str, timeout: float) -> Resolution:
        """A bystander's wait: re-read the durable rows until the bundle is resolved and its
        delivery confirmed (no row still marked), or until ``timeout``."""
        with anyio.move_on_after(timeout):
            while True:
                bundle = await self._run.guarded(
                    StoreFailure(WATCH_FAILED, pending_id=pending_id),
                    self._claims.load_bundle,
                    pending_id,
                )
                rows = bundle.rows if bundle is not None else ()
                winner = replay_winner(pending_id, rows)
                if winner is not None and not any(row.delivery_pending for row in rows):
                    return winner
                await anyio.sleep(self._watch_interval)
        raise WaitEnded(WaitEnd.TIMEOUT, pending_id)

    async def cancel(self, identity: Identity, pending_id: str) -> None:
        """``POST /:id/cancel`` (A9): authorize, then cancel the live entry and mark the
        bundle's pending rows ``cancelled``. Never goes through the claim.

        Raises:
            NotFound: not visible to ``identity``, or no live entry.
            NotActive: the live entry was already resolved or cancelled.
            ClaimError: the store failed.
        """
        bundle = await self._authorized(identity, pending_id)
        if not self._waiters.has_entry(pending_id):
            raise NotFound(NOT_FOUND_MESSAGE)
        if not self._waiters.cancel(pending_id):
            raise NotActive(NOT_ACTIVE_MESSAGE)
        rows = await self._run.guarded(
            StoreFailure(CANCEL_FAILED, pending_id=pending_id),
            self._claims.cancel_active_bundle,
            bundle.session_id,
            pending_id,
        )
        log.info("clarification.cancelled", pending_id=pending_id)
        publish_bundles(self._events, BUNDLE_CANCELLED, rows, bundle.task_id)
