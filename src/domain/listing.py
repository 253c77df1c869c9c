"""The listing contract (L1–L16): visibility, the query, and the shape of one listed bundle."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from datetime import datetime
from json.encoder import encode_basestring
from typing import Any, Generic, Protocol, TypeVar

import attrs

from clarion.domain.cursor import encode_cursor
from clarion.domain.model import Identity, Option, Question
from clarion.domain.rows import (
    ClarificationRow,
    context_from_metadata,
    d2_key,
    display_status,
    parse_question,
    question_id_from_metadata,
    question_index_from_metadata,
    status_from_metadata,
)

DEFAULT_LIMIT = 50
MAX_LIMIT = 200


def clamp_limit(limit: int | None, maximum: int = MAX_LIMIT) -> int:
    """L10: absent or below 1 → 50 (or ``maximum`` when that is smaller); above ``maximum``
    (200 by default, ``CLARION_MAX_PAGE_SIZE``) → ``maximum``."""
    if limit is None or limit < 1:
        return min(DEFAULT_LIMIT, maximum)
    return min(limit, maximum)


@attrs.frozen
class Visibility:
    """Which workspaces a caller sees (L1a). Unscoped callers see everything.

    A scoped caller's set is given one of two ways: by the rule itself — the workspaces whose
    ``owner_id`` is "" or ``owner_id`` (:meth:`owned_by`; a store evaluates it in its own
    query, whatever the number of workspaces) — or as a set of workspace ids (:meth:`only`;
    for a host authorizer that only knows ids; a store binds every id, so its cost grows with
    the set).
    """

    unscoped: bool
    workspace_ids: frozenset[str] = frozenset()
    owner_id: str | None = None  # set: the owner rule; None: ``workspace_ids``
    # Issue #33: the scoped caller's user id for assignments — a bundle with assigned
    # candidates is visible only to a candidate (directly or through a group), exactly as an
    # unknown bundle otherwise; None applies no assignment filter (unscoped, internal callers).
    assignee: str | None = None

    @classmethod
    def everything(cls) -> Visibility:
        return cls(unscoped=True)

    @classmethod
    def only(cls, workspace_ids: Collection[str]) -> Visibility:
        return cls(unscoped=False, workspace_ids=frozenset(workspace_ids))

    @classmethod
    def owned_by(cls, user_id: str) -> Visibility:
        """The spec's rule for ``user_id``: unowned workspaces and the caller's own."""
        return cls(unscoped=False, owner_id=user_id)

    def assigned_to(self, user_id: str | None) -> Visibility:
        """This visibility with the assignment filter for ``user_id`` (None: no filter)."""
        return attrs.evolve(self, assignee=user_id)

    def sees(self, workspace_id: str, owner_id: str) -> bool:
        """Whether the existing workspace ``workspace_id`` (owned by ``owner_id``) is in the
        set."""
        if self.unscoped:
            return True
        if self.owner_id is not None:
            return owner_id in ("", self.owner_id)
        return workspace_id in self.workspace_ids


def workspace_visible_to(owner_id: str, identity: Identity) -> bool:
    """A workspace is visible when unowned or owned by the caller (spec "Permissions")."""
    return not identity.is_scoped or owner_id == "" or owner_id == identity.user_id


def task_visible(
    visibility: Visibility,
    task_workspace_id: str,
    workspace_exists: bool,
    workspace_owner_id: str = "",
) -> bool:
    """L1c: unscoped, or the task's workspace is empty, dangling, or in the visible set
    (``workspace_owner_id`` is the existing workspace's owner)."""
    return (
        visibility.unscoped
        or task_workspace_id == ""
        or not workspace_exists
        or visibility.sees(task_workspace_id, workspace_owner_id)
    )


@attrs.frozen
class PendingSummary:
    """How much waits (issue #20's scrape-time gauges): the number of active bundles (D4) and
    the D1 ``created_at`` of the oldest (None when nothing waits)."""

    count: int
    oldest_created_at: datetime | None


@attrs.frozen
class ListQuery:
    """One page request. ``workspace_id == ""`` means "not supplied" (L7a.4)."""

    visibility: Visibility
    limit: int = DEFAULT_LIMIT
    workspace_id: str = ""
    created_since: datetime | None = None
    after: tuple[datetime, str] | None = None  # decoded cursor (L9)


@attrs.frozen
class ListedQuestion:
    """L4: one question of a listed bundle; every field always present (L4a)."""

    question_id: str
    title: str
    prompt: str
    status: str
    options: tuple[Option, ...]


@attrs.frozen
class AskedBundle:
    """What a bundle asked, as every list shows it: the fields a pending bundle and a resolved
    or closed one (:mod:`clarion.domain.history`) share."""

    pending_id: str
    task_id: str
    session_id: str
    created_at: datetime
    context: str
    questions: tuple[ListedQuestion, ...]


@attrs.frozen
class ListedBundle(AskedBundle):
    """L3: one listed bundle."""

    def age_seconds(self, now: datetime) -> int:
        """D7: server clock minus ``created_at``, floored at 0."""
        return max(0, int((now - self.created_at).total_seconds()))

    @property
    def cursor(self) -> str:
        return encode_cursor(self.created_at, self.pending_id)


class Positioned(Protocol):
    """A bundle that knows its position in its list, as an opaque cursor (L9)."""

    @property
    def cursor(self) -> str: ...


B = TypeVar("B", bound=Positioned)


@attrs.frozen
class BundlePage(Generic[B]):
    """A page of bundles in their list's order; ``has_more`` when a further page exists, and
    then ``next_cursor`` is the last bundle's position (L9)."""

    bundles: tuple[B, ...]
    has_more: bool

    @property
    def next_cursor(self) -> str:
        return self.bundles[-1].cursor if self.has_more and self.bundles else ""


@attrs.frozen
class ListPage(BundlePage[ListedBundle]):
    """A page of bundles in L6 order."""


# What a listed bundle's JSON holds besides its texts — keys, punctuation, the timestamp and
# age — and the same for each question and option (generous: a budget errs on the small side).
BUNDLE_OVERHEAD = 160
QUESTION_OVERHEAD = 80
OPTION_OVERHEAD = 50


def text_bytes(text: str) -> int:
    """The bytes of ``text`` as a JSON string in UTF-8 (quotes and escapes included)."""
    return len(encode_basestring(text).encode("utf-8"))


def questions_bytes(questions: Iterable[ListedQuestion]) -> int:
    """The bytes of listed questions in JSON (an estimate from above, see the overheads)."""
    total = 0
    for question in questions:
        total += QUESTION_OVERHEAD + sum(
            text_bytes(text)
            for text in (question.question_id, question.title, question.prompt, question.status)
        )
        for option in question.options:
            total += OPTION_OVERHEAD + sum(
                text_bytes(text) for text in (option.option_id, option.label, option.description)
            )
    return total


def listed_bundle_bytes(bundle: ListedBundle) -> int:
    """About how many bytes ``bundle`` takes in a list response's JSON (#29 F8's budget,
    ``CLARION_MAX_LIST_BYTES``): its texts JSON-escaped in UTF-8 plus a fixed allowance per
    bundle, question and option for keys and punctuation."""
    texts = (bundle.pending_id, bundle.task_id, bundle.session_id, bundle.context)
    return BUNDLE_OVERHEAD + sum(text_bytes(t) for t in texts) + questions_bytes(bundle.questions)


def bundle_order_key(bundle: ListedBundle) -> tuple[datetime, str]:
    """L6: ``created_at`` ascending, then ``pending_id`` ascending."""
    return (bundle.created_at, bundle.pending_id)


def after_position(bundle: ListedBundle, query: ListQuery) -> bool:
    """L8 and L9: at or after ``created_since`` and strictly after the cursor."""
    if query.created_since is not None and bundle.created_at < query.created_since:
        return False
    return query.after is None or bundle_order_key(bundle) > query.after


def listed_bundle(pending_id: str, task_id: str, rows: Sequence[ClarificationRow]) -> ListedBundle:
    """Build the L3/L4 view of a bundle from its rows (D1 ``created_at``, D2 question order)."""
    return _assemble(
        pending_id,
        task_id,
        [
            _Entry(
                d2=d2_key(row),
                session_id=row.session_id,
                context=row.context,
                question=_listed_question(row.question_id, row.question, row.status),
            )
            for row in rows
        ],
    )


def listed_bundle_from_metadata(
    pending_id: str, task_id: str, rows: Iterable[StoredRow]
) -> ListedBundle:
    """:func:`listed_bundle` straight from stored rows — ``(message id, session id,
    created_at, metadata)`` each — for the list page's hot path: the same readers
    :func:`~clarion.domain.rows.parse_row` uses, for only the fields a listed bundle shows
    (no full row, no response, no resolver record)."""
    entries = []
    for message_id, session_id, created_at, metadata in rows:
        question_id = question_id_from_metadata(metadata)
        question = parse_question(metadata.get("question"), question_id)
        entries.append(
            _Entry(
                d2=(question_index_from_metadata(metadata), created_at, message_id),
                session_id=session_id,
                context=context_from_metadata(metadata),
                question=_listed_question(question_id, question, status_from_metadata(metadata)),
            )
        )
    return _assemble(pending_id, task_id, entries)


# A stored row as the list page reads it: (message id, session id, created_at, metadata).
StoredRow = tuple[str, str, datetime, Mapping[str, Any]]


@attrs.frozen
class _Entry:
    d2: tuple[int, datetime, str]  # D2's key: question_index, created_at, message id
    session_id: str
    context: str
    question: ListedQuestion


def _listed_question(
    question_id: str, question: Question | None, status: str | None
) -> ListedQuestion:
    return ListedQuestion(
        question_id=question_id,
        title=question.title if question else "",
        prompt=question.prompt if question else "",
        status=display_status(status),
        options=question.options if question else (),
    )


def _assemble(pending_id: str, task_id: str, entries: list[_Entry]) -> ListedBundle:
    """D2 question order, D1 ``created_at``, the earliest row's context."""
    entries.sort(key=lambda entry: entry.d2)
    earliest = min(entries, key=lambda entry: (entry.d2[1], entry.d2[2]))
    return ListedBundle(
        pending_id=pending_id,
        task_id=task_id,
        session_id=entries[0].session_id,
        created_at=earliest.d2[1],
        context=earliest.context,
        questions=tuple(entry.question for entry in entries),
    )
