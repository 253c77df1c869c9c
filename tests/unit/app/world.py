"""A Clarion application over the in-memory adapters, plus hand-written fakes for the tests of
the use cases (no mocks: a fake records what it was asked and does what it is told)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

import anyio
import attrs

from clarion.adapters.events import InProcessEventBus
from clarion.adapters.memory import (
    InMemoryClaimRepository,
    InMemoryGroupDirectory,
    InMemoryHostRepository,
    InMemoryStandingApprovals,
    InMemoryStore,
    InMemoryTokenStore,
)
from clarion.adapters.memory.waiters import InMemoryWaiters
from clarion.app.usecases.authorization import HostTaskAuthorizer
from clarion.app.usecases.services import Services, build_services
from clarion.domain.approvals import NO_CANDIDATES, ApprovalTerms, Candidates
from clarion.domain.host import Session, Task, Workspace
from clarion.domain.model import Answer, Identity, Outcome, Question
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import Asker, Bundle, ClarificationRow
from clarion.ports.claims import ClaimRepository, ClaimResult, LiveDelivery
from clarion.ports.events import Event, EventPublisher
from clarion.ports.receipts import ReceiptSigner
from clarion.ports.resume import ResumeRefused, ResumeRequest
from clarion.ports.testing import ManualClock

UNSCOPED = Identity.synthetic_admin()
ALICE = Identity.user("alice")
BOB = Identity.user("bob")


class CountingIds:
    """Readable, unique ids: ``id-1``, ``id-2``, ..."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)

    def new_id(self) -> str:
        return f"id-{next(self._numbers)}"


class FakeDispatcher:
    """A resume dispatcher that accepts, refuses, or hangs until released, as told."""

    def __init__(self) -> None:
        self.mode = "accept"  # "accept" | "refuse" | "hang"
        self.requests: list[ResumeRequest] = []
        self.started = anyio.Event()
        self.release = anyio.Event()

    async def dispatch(self, request: ResumeRequest) -> None:
        self.requests.append(request)
        self.started.set()
        if self.mode == "refuse":
            raise ResumeRefused("agent runtime is down")
        if self.mode == "hang":
            await self.release.wait()


class RecordingEvents:
    """Publishes to a real bus and remembers every event; can be told to fail."""

    def __init__(self) -> None:
        self.bus = InProcessEventBus()
        self.published: list[Event] = []
        self.fail = False

    def publish(self, event: Event) -> None:
        if self.fail:
            raise ConnectionError("event broker down")
        self.published.append(event)
        self.bus.publish(event)

    def kinds(self, pending_id: str | None = None) -> list[str]:
        return [e.kind for e in self.published if pending_id is None or e.pending_id == pending_id]


class FlakyClaims:
    """The in-memory claim repository with switchable failures for the delivery paths."""

    def __init__(self, inner: InMemoryClaimRepository) -> None:
        self.inner = inner
        self.fail_claim = False
        self.refuse_finalize = False
        self.fail_restore = False
        self.fail_detach = False
        self.finalize_calls = 0
        self.restore_calls = 0
        self.after_create: Callable[[Bundle], None] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def create_bundle(
        self,
        *,
        pending_id: str,
        session_id: str,
        task_id: str,
        questions: Sequence[Question],
        context: str,
        asker: Asker | None = None,
        approval: ApprovalTerms | None = None,
        candidates: Candidates = NO_CANDIDATES,
    ) -> Bundle:
        bundle = self.inner.create_bundle(
            pending_id=pending_id,
            session_id=session_id,
            task_id=task_id,
            questions=questions,
            context=context,
            asker=asker,
            approval=approval,
            candidates=candidates,
        )
        if self.after_create is not None:
            self.after_create(bundle)
        return bundle

    def complete_active_bundle(
        self,
        pending_id: str,
        terminal: str,
        responses: Mapping[str, Answer] | None,
        *,
        resolved_by: ResolvedBy | None = None,
    ) -> ClaimResult:
        if self.fail_claim:
            raise RuntimeError("psycopg.OperationalError: password=hunter2 host=db.internal")
        return self.inner.complete_active_bundle(
            pending_id, terminal, responses, resolved_by=resolved_by
        )

    def finalize_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        self.finalize_calls += 1
        if self.refuse_finalize:
            return None
        return self.inner.finalize_delivery(pending_id, terminal, claimed_ids)

    def finalize_live_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> LiveDelivery | None:
        self.finalize_calls += 1
        if self.refuse_finalize:
            return None
        return self.inner.finalize_live_delivery(pending_id, terminal, claimed_ids)

    def detach_active_bundles(self, session_id: str) -> tuple[ClarificationRow, ...]:
        if self.fail_detach:
            raise RuntimeError("database is locked")
        return self.inner.detach_active_bundles(session_id)

    def restore_active_bundle(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        self.restore_calls += 1
        if self.fail_restore:
            raise RuntimeError("disk full")
        return self.inner.restore_active_bundle(pending_id, terminal, claimed_ids)


def drafts(count: int = 1, prefix: str = "Ship") -> tuple[QuestionDraft, ...]:
    """``count`` questions, each with options Yes/No/Later (ids assigned q<i>_opt<j>)."""
    return tuple(
        QuestionDraft(
            prompt=f"{prefix} {number}?",
            options=(
                OptionDraft("Yes", "do it"),
                OptionDraft("No", "do not"),
                OptionDraft("Later", "next week"),
            ),
        )
        for number in range(1, count + 1)
    )


def answer_all(count: int = 1, *options: str, text: str = "") -> Outcome:
    """Answer questions q1..q<count> choosing ``options`` (suffixes like "opt1") each."""
    return Outcome.answer(
        *(
            Answer(
                question_id=f"q{n}",
                selected_options=tuple(f"q{n}_{option}" for option in options),
                custom_text=text,
            )
            for n in range(1, count + 1)
        )
    )


@attrs.define
class AppWorld:
    """One store, its repositories, the live waiters and the services built over them."""

    store: InMemoryStore
    clock: ManualClock
    ids: CountingIds
    host: InMemoryHostRepository
    memory_claims: InMemoryClaimRepository
    claims: FlakyClaims
    waiters: InMemoryWaiters
    events: RecordingEvents
    dispatcher: FakeDispatcher
    services: Services
    groups: InMemoryGroupDirectory
    standing: InMemoryStandingApprovals
    users: InMemoryTokenStore

    def workspace(self, owner_id: str = "alice") -> Workspace:
        return self.host.create_workspace("ws", owner_id)

    def task(self, owner_id: str = "alice") -> Task:
        return self.host.create_task("task", self.workspace(owner_id).id)

    def session(self, owner_id: str = "alice", *, is_primary: bool = True) -> Session:
        session, _ = self.host.create_session(self.task(owner_id).id, is_primary=is_primary)
        return session

    def services_over(self, claims: ClaimRepository, **options: Any) -> Services:
        """Another set of services over this world's host, waiters, dispatcher, events, clock
        and ids, with ``claims`` and ``options`` (``build_services``' keywords; a watch
        interval of 0.01 s unless given)."""
        options.setdefault("watch_interval", 0.01)
        return build_services(
            claims=claims,
            host=self.host,
            authorizer=HostTaskAuthorizer(self.host),
            waiters=self.waiters,
            dispatcher=self.dispatcher,
            events=self.events,
            clock=self.clock,
            ids=self.ids,
            **options,
        )

    def restarted(self, *, resume_timeout: float = 30.0) -> AppWorld:
        """A fresh process over the same store: new waiters, events, dispatcher, services."""
        return make_world(self.store, self.clock, self.ids, resume_timeout=resume_timeout)

    def statuses(self, pending_id: str) -> list[str | None]:
        bundle = self.memory_claims.load_bundle(pending_id)
        assert bundle is not None
        return [row.status for row in bundle.rows]

    def rows(self, pending_id: str) -> tuple[ClarificationRow, ...]:
        bundle = self.memory_claims.load_bundle(pending_id)
        assert bundle is not None
        return bundle.rows


def make_world(
    store: InMemoryStore | None = None,
    clock: ManualClock | None = None,
    ids: CountingIds | None = None,
    *,
    ask_timeout: float = 7200.0,
    resume_timeout: float = 30.0,
    delivery_timeout: float = 30.0,
    receipt_signer: ReceiptSigner | None = None,
) -> AppWorld:
    store = store if store is not None else InMemoryStore()
    clock = clock if clock is not None else ManualClock()
    ids = ids if ids is not None else CountingIds()
    host = InMemoryHostRepository(store, clock, ids)
    memory_claims = InMemoryClaimRepository(store, clock, ids)
    claims = FlakyClaims(memory_claims)
    waiters = InMemoryWaiters()
    events = RecordingEvents()
    dispatcher = FakeDispatcher()
    typed_claims: ClaimRepository = claims
    publisher: EventPublisher = events
    groups = InMemoryGroupDirectory(store, clock, ids)
    standing = InMemoryStandingApprovals(store)
    users = InMemoryTokenStore(store, clock, ids)
    services = build_services(
        claims=typed_claims,
        host=host,
        authorizer=HostTaskAuthorizer(host),
        waiters=waiters,
        dispatcher=dispatcher,
        events=publisher,
        clock=clock,
        ids=ids,
        ask_timeout=ask_timeout,
        resume_timeout=resume_timeout,
        delivery_timeout=delivery_timeout,
        watch_interval=0.01,
        receipt_signer=receipt_signer,
        groups=groups,
        standing=standing,
        roster=users,
    )
    return AppWorld(
        store=store,
        clock=clock,
        ids=ids,
        host=host,
        memory_claims=memory_claims,
        claims=claims,
        waiters=waiters,
        events=events,
        dispatcher=dispatcher,
        services=services,
        groups=groups,
        standing=standing,
        users=users,
    )


WorldFactory = Callable[..., AppWorld]
