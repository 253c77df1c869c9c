"""The world every contract suite runs in: the ports under test, a settable clock, and seeding
helpers that go through the ports only (so they work for any implementation)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Mapping
from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from clarion.domain.approvals import NO_CANDIDATES, Candidates
from clarion.domain.host import Session, Task, Turn, Workspace
from clarion.domain.model import ANSWERED, CLARIFICATION_REQUEST, PENDING, Answer, Option, Question
from clarion.domain.rows import Asker, Bundle, MessageRecord, clarification_metadata
from clarion.ports.claims import ClaimRepository, ClaimResult
from clarion.ports.host import HostRepository
from clarion.ports.tokens import TokenStore

DEFAULT_START = datetime(2026, 1, 1, 12, 0, tzinfo=UTC)


def _checked(when: datetime) -> datetime:
    if when.tzinfo is None or when.utcoffset() != timedelta(0):
        raise ValueError("ManualClock needs an aware UTC datetime")
    return when.astimezone(UTC)


class ManualClock:
    """A thread-safe, settable :class:`clarion.ports.Clock`.

    Each ``now()`` returns the current value and then advances it by ``step`` (1 ms by default),
    so consecutive writes get distinct, increasing timestamps; a zero step freezes time, which
    is how tests produce ties (L6, D2, turn order).
    """

    def __init__(
        self, start: datetime = DEFAULT_START, *, step: timedelta = timedelta(milliseconds=1)
    ) -> None:
        self._lock = threading.Lock()
        self._now = _checked(start)
        self._step = step

    def now(self) -> datetime:
        with self._lock:
            value = self._now
            self._now = value + self._step
            return value

    def peek(self) -> datetime:
        """The value the next ``now()`` returns, without advancing."""
        with self._lock:
            return self._now

    def set(self, when: datetime, *, step: timedelta | None = None) -> None:
        """Jump to ``when`` (backwards too); optionally change the step."""
        with self._lock:
            self._now = _checked(when)
            if step is not None:
                self._step = step

    def advance(self, delta: timedelta) -> None:
        with self._lock:
            self._now = self._now + delta


def sample_question(number: int, *, options: int = 2) -> Question:
    """Question ``q<number>`` with options ``q<number>_opt<j>``, as creation would assign."""
    return Question(
        id=f"q{number}",
        prompt=f"Question {number}?",
        title=f"Title {number}",
        options=tuple(
            Option(option_id=f"q{number}_opt{j}", label=f"Choice {j}", description=f"Means {j}")
            for j in range(1, options + 1)
        ),
    )


def sample_questions(count: int) -> tuple[Question, ...]:
    return tuple(sample_question(i) for i in range(1, count + 1))


def answers_for(bundle: Bundle, option: int = 1, text: str = "") -> dict[str, Answer]:
    """A normalized response map choosing option ``option`` of every question."""
    return {
        row.question_id: Answer(
            question_id=row.question_id,
            selected_options=(f"{row.question_id}_opt{option}",),
            custom_text=text,
        )
        for row in bundle.rows
    }


def claim(world: ContractWorld, pending_id: str, option: int = 1) -> ClaimResult:
    """Claim ``pending_id`` as answered with option ``option`` of every question."""
    return world.claims.complete_active_bundle(
        pending_id, ANSWERED, answers_for(world.bundle(pending_id), option)
    )


def statuses(world: ContractWorld, pending_id: str) -> list[str | None]:
    """The raw stored statuses of the bundle's rows in D2 order."""
    return [row.status for row in world.bundle(pending_id).rows]


_ABSENT: Any = object()


def row_metadata(
    pending_id: str,
    *,
    question_id: str | None = "q1",
    index: Any = 0,
    status: Any = PENDING,
    question: Any = _ABSENT,
    total: int = 1,
    context: str = "",
    **extra: Any,
) -> dict[str, Any]:
    """Metadata of one clarification row for legacy or malformed seeds.

    ``question_id=None`` omits the flat key; ``status=None`` omits the status key (legacy rows);
    ``question`` defaults to a well-formed question object whose ``id`` is ``question_id`` (pass
    any value to store it verbatim, or ``None`` to omit the key); ``index=None`` omits
    ``question_index``; ``extra`` keys are added as given.
    """
    qid = question_id or ""
    metadata = clarification_metadata(
        pending_id=pending_id,
        question=attrs.evolve(sample_question(1), id=qid),
        index=0,
        total=total,
        context=context,
    )
    if question_id is None:
        del metadata["question_id"]
    if question is None:
        del metadata["question"]
    elif question is not _ABSENT:
        metadata["question"] = question
    if index is None:
        del metadata["question_index"]
    else:
        metadata["question_index"] = index
    if status is None:
        del metadata["status"]
    else:
        metadata["status"] = status
    metadata.update(extra)
    return metadata


@attrs.frozen
class Replica:
    """Another serving process on the world's store (issue #28): a claim repository holding a
    liveness lease of its own, and ``end`` — the process dies and its lease is freed."""

    claims: ClaimRepository
    end: Callable[[], None]


@attrs.define
class ContractWorld:
    """The implementations under test, sharing one store.

    ``clock`` must be the clock the implementations read. ``storage_names`` returns the names
    of the tables (or collections) the implementation keeps; the P1 check asserts that no
    ``clarification_resolutions`` store exists. ``replica`` (when given) starts another
    process on the same store, with its own :class:`clarion.ports.ProcessLease` and the
    world's clock; ``claims`` itself holds no lease.
    """

    host: HostRepository
    claims: ClaimRepository
    tokens: TokenStore
    clock: ManualClock
    storage_names: Callable[[], Collection[str]]
    replica: Callable[[], Replica] | None = None

    def workspace(self, name: str = "ws", owner_id: str = "") -> Workspace:
        return self.host.create_workspace(name, owner_id)

    def task(self, workspace_id: str = "", title: str = "task") -> Task:
        return self.host.create_task(title, workspace_id)

    def session(
        self, task_id: str | None = None, *, workspace_id: str = "", is_primary: bool = False
    ) -> Session:
        """A RUNNING session (of a new task in ``workspace_id`` unless ``task_id`` is given)."""
        owner = task_id if task_id is not None else self.task(workspace_id).id
        session, _ = self.host.create_session(owner, is_primary=is_primary)
        return session

    def turn(self, session_id: str) -> Turn:
        turn = self.host.current_turn(session_id)
        assert turn is not None
        return turn

    def ask(
        self,
        session_id: str,
        pending_id: str,
        *,
        questions: int = 1,
        context: str = "",
        task_id: str | None = None,
        asker: Asker | None = None,
        candidates: Candidates = NO_CANDIDATES,
    ) -> Bundle:
        """Create a bundle through the claim repository (the ordinary path)."""
        session = self.host.get_session(session_id)
        assert session is not None
        return self.claims.create_bundle(
            pending_id=pending_id,
            session_id=session_id,
            task_id=session.task_id if task_id is None else task_id,
            questions=sample_questions(questions),
            context=context,
            asker=asker,
            candidates=candidates,
        )

    def bundle_in_new_session(
        self, pending_id: str, *, workspace_id: str = "", questions: int = 1
    ) -> Bundle:
        session = self.session(workspace_id=workspace_id)
        return self.ask(session.id, pending_id, questions=questions)

    def raw_row(
        self,
        session_id: str,
        metadata: Mapping[str, Any],
        *,
        turn_id: str | None = None,
        task_id: str | None = None,
        type: str = CLARIFICATION_REQUEST,
    ) -> MessageRecord:
        """Append a row with arbitrary metadata (legacy and malformed cases) through the host.

        ``turn_id`` defaults to the session's current turn; ``task_id`` None means the
        session's task, "" the legacy empty task id.
        """
        return self.host.append_message(
            session_id,
            turn_id=turn_id or self.turn(session_id).id,
            content="raw row",
            author_type="agent",
            type=type,
            metadata=metadata,
            task_id=task_id,
        )

    def bundle(self, pending_id: str) -> Bundle:
        bundle = self.claims.load_bundle(pending_id)
        assert bundle is not None, pending_id
        return bundle
