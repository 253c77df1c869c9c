"""The claim repository: durable clarification rows, the one claim, and the list query."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

import attrs

from clarion.domain.approvals import (
    NO_CANDIDATES,
    ApprovalTerms,
    Candidates,
    Decision,
    StandingApproval,
    Vote,
)
from clarion.domain.history import ResolvedPage, ResolvedQuery, SessionFacts, closed_reason
from clarion.domain.host import Session
from clarion.domain.listing import ListPage, ListQuery, PendingSummary, Visibility
from clarion.domain.model import RESUME, Answer, Question
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import Asker, Bundle, ClarificationRow, MessageRecord
from clarion.domain.transitions import new_message

ActiveLimit = Literal["session", "identity"]  # which active-bundle limit a create would exceed


@attrs.frozen
class ClaimResult:
    """What the claim returns. ``claimed`` is True for exactly one caller per active bundle.

    On a win ``rows`` are the rows this claim transitioned (with their new metadata) and
    ``responded_at`` is the timestamp the claim wrote to them (their ``updated_at``). On a loss
    ``rows`` is empty and ``responded_at`` is None.
    """

    claimed: bool
    rows: tuple[ClarificationRow, ...] = ()
    responded_at: datetime | None = None

    @property
    def claimed_ids(self) -> tuple[str, ...]:
        return tuple(row.id for row in self.rows)


@attrs.frozen
class VoteResult:
    """What :meth:`ClaimRepository.cast_vote` did (issue #33).

    ``vote`` is the voter's vote as stored — their FIRST vote when ``repeated`` — or None when
    nothing was recorded (the request is not an active approval). ``approvals`` counts the
    distinct approving voters after this call, of ``required``. ``claim`` is set when THIS vote
    decided the request and won the claim; ``decision`` is the request's decision when it is
    decided (by this vote or before), else None.
    """

    vote: Vote | None
    repeated: bool
    approvals: int
    required: int
    claim: ClaimResult | None
    decision: Decision | None

    @property
    def counted(self) -> bool:
        """Whether this call recorded a new vote."""
        return self.vote is not None and not self.repeated


@attrs.frozen
class LiveDelivery:
    """What :meth:`ClaimRepository.finalize_live_delivery` wrote: the finalized rows, and the
    asking session after its ``WAITING_FOR_INPUT → RUNNING`` move — None when the session was
    in another state (or is gone), which is then left as it was."""

    rows: tuple[ClarificationRow, ...]
    session: Session | None


@attrs.frozen
class ReconcileReport:
    """Recovery of rows left with ``response_delivery_pending`` (facts §4.6, issue #13)."""

    restored: tuple[str, ...] = ()  # pending ids rolled back to pending (no resume record)
    finalized: tuple[str, ...] = ()  # pending ids whose resume record exists: marker cleared


@attrs.frozen
class ResumeRecord:
    """The durable resume the outbox writes with :meth:`ClaimRepository.record_resume`: one
    user message of type :data:`clarion.domain.model.RESUME` on a new turn of the session."""

    session_id: str
    task_id: str | None  # None: the session's task
    prompt: str
    metadata: Mapping[str, Any]  # must carry the bundle's ``pending_id``

    def message(
        self, session_task_id: str, turn_id: str, message_id: str, now: datetime
    ) -> MessageRecord:
        """The resume message as every implementation stores it: type ``resume``, author
        ``user``, on ``turn_id``, with the session's task unless ``task_id`` names one."""
        return new_message(
            message_id=message_id,
            session_id=self.session_id,
            task_id=session_task_id if self.task_id is None else self.task_id,
            turn_id=turn_id,
            now=now,
            content=self.prompt,
            author_type="user",
            type=RESUME,
            metadata=self.metadata,
        )


@attrs.frozen
class Reread:
    """R2's one re-read (issue #30): the bundle as :meth:`ClaimRepository.load_bundle` reads
    it, and its session's facts as they stood in the same read (None without the bundle)."""

    bundle: Bundle | None
    facts: SessionFacts | None = None

    @property
    def closed(self) -> tuple[str, datetime] | None:
        """Why and when the bundle closed without an answer
        (:func:`clarion.domain.history.closed_reason`); None when it did not."""
        if self.bundle is None or self.facts is None:
            return None
        return closed_reason(self.bundle.rows, self.facts)


class ProcessLease(Protocol):
    """A serving process's liveness lease (issue #28): recovery rolls back at once the
    deliveries of a process that is gone, and keeps its grace period for live ones.

    A claim repository given a lease records, with every claim it wins and in the claim's
    own write (P1), the ``process_id`` the lease holds at that moment; the marker's removal
    (finalize, resume, restore, recovery) drops it.
    """

    @property
    def process_id(self) -> str | None:
        """This process's id while it holds its lease; None before it is taken or after it was
        released (claims then record no process)."""
        ...

    def gone(self, process_ids: Collection[str]) -> frozenset[str]:
        """The ids among ``process_ids`` whose lease nobody holds: their processes ended (or
        lost their hold on the store). Never includes a process that holds its lease."""
        ...


class ClaimRepository(Protocol):
    """Durable clarification rows and every transition on them.

    Contract (checked by ``clarion.ports.testing.claims``):

    - *Active* is D4: a bundle is active iff one of its clarification rows has a pending-ish
      status (absent, "" or "pending"), lies on its session's current turn (newest by
      ``started_at``, ``created_at``, ``id``), and the session is not COMPLETED, FAILED or
      CANCELLED. Detached rows stay active.
    - A bundle is *well formed* iff every message carrying its ``pending_id`` is a
      clarification row on one session and one turn. Malformed bundles never claim and are
      never listed.
    - ``complete_active_bundle`` is the only claim. Among any number of concurrent callers on
      one active bundle exactly one gets ``claimed=True``; it transitions the pending rows (only
      those) to ``terminal`` in one transaction, writing ``response`` (answered only, keyed by
      the row's question id), ``response_delivery_pending=true``, ``updated_at`` and — in the
      same write — who resolved (``resolved_by``, issue #20; read back as
      ``row.resolved_by`` stamped with ``updated_at``). Every other caller gets
      ``claimed=False`` and nothing is written, so the recorded resolver is always the
      winner's. A restore drops the record with the response.
    - Lookups by ``pending_id`` consider clarification rows only.
    - Timestamps are UTC with microsecond precision, identical for every reader.

    Methods raise :class:`clarion.domain.errors.ClaimError` (or let a driver error through)
    when the store fails; they never raise for a lost claim.
    """

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
        """Write one pending row per question on the session's current turn (starting a turn
        when the session has none), each carrying ``asker`` (read back as ``row.asker`` and
        ``Bundle.asker``). Raises :class:`NotFound` when the session does not exist.

        Issue #33: ``approval`` (an approval request's terms, validated by the caller) and
        assigned ``candidates`` are written beside the rows in the SAME transaction, and read
        back as ``Bundle.approval`` / ``Bundle.candidates``; a plain question without
        candidates writes no extras at all."""
        ...

    def load_bundle(self, pending_id: str) -> Bundle | None:
        """The bundle's clarification rows (any session, turn or status) in D2 order, with its
        session's task id; None when no clarification row carries ``pending_id``."""
        ...

    def reread_bundle(self, pending_id: str) -> Reread:
        """A loser's one re-read (R2, R2a; issue #30): ``load_bundle`` and, in the same read,
        the facts of the bundle's session (terminal state and since when, the start of the
        turn after the bundle's) from which :attr:`Reread.closed` tells why a bundle nobody
        answered is no longer active."""
        ...

    def load_visible_bundle(self, pending_id: str, visibility: Visibility) -> Bundle | None:
        """``load_bundle`` for a caller who sees ``visibility`` (issue #14): the same bundle
        when ``visibility`` is unscoped, or when the bundle's M5 task (``Bundle.task_id``)
        exists (M5a) and is visible per L1c (:func:`clarion.domain.listing.task_visible`, the
        list's own rule); None otherwise, exactly as for an unknown ``pending_id``. A database
        implementation decides visibility inside the statement that reads the rows, so a
        bundle the caller may not see reads zero rows, like one that does not exist."""
        ...

    def complete_active_bundle(
        self,
        pending_id: str,
        terminal: str,
        responses: Mapping[str, Answer] | None,
        *,
        resolved_by: ResolvedBy | None = None,
    ) -> ClaimResult:
        """The claim. ``terminal`` is "answered" or "rejected" (anything else raises
        ``ValueError``); ``responses`` maps question id → normalized answer (None to reject);
        ``resolved_by`` (its ``at`` ignored) is written by the claim itself — None writes no
        record, and the rows then read as "unknown"."""
        ...

    def cast_vote(self, pending_id: str, vote: Vote, *, resolved_by: ResolvedBy) -> VoteResult:
        """Issue #33: record one vote on an approval request, and — when the tally decides —
        run the claim, in ONE transaction serialized per request (so the request reaches its
        one terminal state exactly once, however many vote at once).

        When the bundle is not an active (D4) approval request, nothing is recorded: ``vote``
        and ``claim`` are None and ``decision`` is read from the rows when they are decided.
        A voter who already voted gets ``repeated=True`` with their first vote; nothing is
        written. Otherwise the vote is stored (its ``at`` the store's clock); when
        :func:`clarion.domain.approvals.tally` decides, the claim writes terminal "answered"
        with the response ``decision_outcome(decision, vote.comment)`` and ``resolved_by``
        (the deciding voter's). A vote that lands after the decision is never recorded.
        Raises ``ValueError`` for an empty ``voter_id``."""
        ...

    def approval_votes(self, pending_id: str) -> tuple[Vote, ...]:
        """The votes recorded on ``pending_id``, in voting order (empty when none)."""
        ...

    def approve_by_standing(self, pending_id: str, standing: StandingApproval) -> ClaimResult:
        """Issue #33 (additive to the design): decide an active approval request at once by a
        standing approval that matched it — the claim (terminal "answered", option
        ``approve``, no comment, ``resolved_by = standing.resolver()``) and, when it wins, the
        record's ``standing_id`` in ONE transaction. A lost claim writes nothing."""
        ...

    def finalize_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        """Clear ``response_delivery_pending`` on exactly the claimed rows, which must all still
        carry ``terminal`` and the marker; None (nothing written) otherwise. Leaves
        ``updated_at`` alone so every reader keeps the claim's timestamp."""
        ...

    def finalize_live_delivery(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> LiveDelivery | None:
        """:meth:`finalize_delivery` for an answer its live asker has taken, in ONE transaction
        with the bundle's session moving ``WAITING_FOR_INPUT → RUNNING`` (compare-and-set,
        ``updated_at`` set; any other state is left alone): the agent the answer wakes is
        running again the moment the delivery is durable, for one commit instead of two.
        None, and nothing written (the session neither), when the claim is not exact."""
        ...

    def record_resume(
        self,
        pending_id: str,
        terminal: str,
        claimed_ids: Collection[str],
        resume: ResumeRecord,
    ) -> tuple[ClarificationRow, ...] | None:
        """The outbox's resume, in ONE transaction: when the claimed rows are exactly what
        :meth:`finalize_delivery` requires, start a new turn on ``resume.session_id``, append
        the resume message (type ``resume``, author ``user``, ``resume.metadata`` with the
        ``pending_id``) on it, and clear the marker on the claimed rows (``updated_at`` kept);
        returns the finalized rows. None, and nothing written, when the claim is not exact.
        A crash leaves either all three writes or none.

        Raises:
            NotFound: the session does not exist (nothing written).
        """
        ...

    def restore_active_bundle(
        self, pending_id: str, terminal: str, claimed_ids: Collection[str]
    ) -> tuple[ClarificationRow, ...] | None:
        """Roll a claimed, undelivered bundle back to pending (dropping ``response`` and the
        marker, keeping ``agent_disconnected``). Only when every claimed row still carries
        ``terminal`` and the marker, on the current turn of a non-terminal session, and the
        bundle is well formed; None (nothing written) otherwise."""
        ...

    def expire_active_bundle(
        self, session_id: str, pending_id: str
    ) -> tuple[ClarificationRow, ...]:
        """Mark the bundle's pending current-turn rows ``expired`` and detached (any session
        state); returns the changed rows."""
        ...

    def cancel_active_bundle(
        self, session_id: str, pending_id: str
    ) -> tuple[ClarificationRow, ...]:
        """Operator cancel (A9): like ``expire_active_bundle`` but writing ``cancelled`` — the
        bundle's pending current-turn rows become ``cancelled`` and detached (any session
        state); rows that are already terminal are left alone. Returns the changed rows."""
        ...

    def detach_active_bundles(self, session_id: str) -> tuple[ClarificationRow, ...]:
        """Set ``agent_disconnected`` on the session's pending current-turn rows that are not
        already detached, status untouched; returns the changed rows (empty on repeat)."""
        ...

    def active_pending_ids(self, session_id: str) -> tuple[str, ...]:
        """Pending ids with a pending-ish row on the session's current turn (no session-state
        check: the workflow-guard reading), in creation order."""
        ...

    def session_has_active_bundle(self, session_id: str) -> bool:
        """The workflow guard: ``bool(active_pending_ids(session_id))``."""
        ...

    def count_active_in_session(self, session_id: str, limit: int) -> int:
        """The per-session limit's count: ``min(len(active_pending_ids(session_id)), limit)``.
        A database implementation reads the session's current-turn pending rows through an
        index and stops after ``limit`` bundles."""
        ...

    def count_active_asked(self, asker_id: str | None, limit: int) -> int:
        """The per-identity limit's count: how many active bundles (D4) were asked by the user
        ``asker_id`` (their stored ``Asker.user_id``), or by anyone when ``asker_id`` is None,
        counting no further than ``limit`` (the result is ``min(count, limit)``). A database
        implementation reads an index and stops after ``limit`` bundles."""
        ...

    def active_limit_reached(
        self, session_id: str | None, per_session: int, asker_id: str | None, per_identity: int
    ) -> ActiveLimit | None:
        """Create's limits in one call (issues #14, #15): ``"session"`` when
        ``count_active_in_session(session_id, per_session) >= per_session`` (not checked when
        ``session_id`` is None), else ``"identity"`` when ``count_active_asked(asker_id,
        per_identity) >= per_identity``, else None. A database implementation answers with one
        statement while the counts stay below the limits: a bounded count of pending-row index
        entries (every active bundle has at least one pending row, so fewer rows than a limit
        proves room), and runs a limit's exact bounded count only when its bound reaches it."""
        ...

    def find_active_duplicate(self, session_id: str, questions: Sequence[Question]) -> str | None:
        """Create's deduplication (facts §2.7): the first of ``active_pending_ids(session_id)``
        whose bundle (``load_bundle``) has the same questions (``same_questions``), or None.
        A database implementation finds it by index rather than by reading every active bundle
        of the session."""
        ...

    def list_active_bundles(self, query: ListQuery) -> ListPage:
        """L1–L16 in one query: active, well-formed bundles whose every row has a question id,
        whose M5 task exists and is visible per L1c (and matches ``workspace_id`` when given),
        at/after ``created_since``, strictly after ``after``, in L6 order, ``limit`` bundles
        (clamped per L10) with ``has_more`` when more exist."""
        ...

    def pending_summary(self) -> PendingSummary:
        """Every active bundle (D4, any visibility): how many, and the oldest's D1
        ``created_at``. Read at each metrics scrape, so every process reports the same
        figures; a database implementation reads the pending-rows index only."""
        ...

    def list_resolved_bundles(self, query: ResolvedQuery) -> ResolvedPage:
        """Issue #20, the resolved list: settled bundles (answered or rejected rows, none still
        marked ``response_delivery_pending``) whose M5 task exists and is visible per L1c,
        resolved at/after ``resolved_since``, strictly before ``before`` in (resolution time,
        pending id) descending order, ``limit`` bundles (clamped per L10) with ``has_more``.
        The resolution time is the newest ``updated_at`` of the bundle's resolved rows (its
        claim's). A database implementation walks an index on resolved rows by resolution time
        and stops after one page."""
        ...

    def pending_actions_for_sessions(self, session_ids: Collection[str]) -> dict[str, str]:
        """§4.11: session id → "clarification" for non-terminal sessions with an active
        bundle on their current turn; sessions with nothing pending are absent."""
        ...

    def reconcile_undelivered(self, older_than: datetime | None = None) -> ReconcileReport:
        """Recovery: for each bundle with rows still marked ``response_delivery_pending``,
        clear the marker (status and response kept: *finalized*) only when a resume record
        for its ``pending_id`` exists (a message of type ``resume`` carrying it); otherwise
        roll the marked rows back to pending, dropping ``response`` and the marker and keeping
        ``agent_disconnected`` (*restored*) — answerable again when the bundle is still active
        (D4), and merely no longer claimed when its turn was superseded or its session ended.
        A claim is never left settled without the delivery it implies.

        With ``older_than``, only bundles whose marked rows were all claimed at or before it
        are touched, so a replica recovering never undoes a delivery another replica is
        finishing right now (the claim stamps ``updated_at``; finalize and restore are bounded
        by the resume wait) — except a delivery whose process is gone (issue #28): when every
        marked row of a bundle was claimed under a :class:`ProcessLease` process id that this
        repository's lease reports gone (:meth:`ProcessLease.gone`), the bundle is recovered at
        once, whatever its age. A delivery made by a live process (this one included), or whose
        process was not recorded (a claim made without a lease), keeps the ``older_than``
        grace; a repository without a lease applies the grace to every delivery."""
        ...
