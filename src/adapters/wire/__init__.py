"""The JSON wire format shared by REST and MCP: domain values in, wire models out.

The shapes are the attrs classes of :mod:`.models`; :mod:`.convert` holds the one private
cattrs converter that writes and reads them.

Output shapes follow the spec's always-emit rules: R12 (``answers``, ``rejected``,
``reject_reason`` and each answer's ``question_id``, ``selected_options``, ``custom_text``
always present, ``[]``/``""`` for empty) and L4a (every listed field present, never null).
Input parsing is strict: wrong types and unknown fields raise a ``ValidationError`` whose
``field`` is the JSON path of the offending value (``answers[0].custom_text``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol, TypeVar

import attrs

from clarion.adapters.wire import models
from clarion.adapters.wire.convert import format_timestamp, structure, unstructure
from clarion.domain.errors import ValidationError
from clarion.domain.host import Task
from clarion.domain.listing import ListedBundle, ListPage
from clarion.domain.model import Answer, Option, Outcome, Resolution
from clarion.domain.questions import OptionDraft, QuestionDraft

__all__ = ["format_timestamp", "structure", "unstructure"]


class DuplicateKey(ValueError):
    """A JSON object names one key twice (Python's parser would keep the last silently, so two
    readers of one body could disagree about what it says)."""

    def __init__(self, key: str) -> None:
        shown = key if len(key) <= 64 else key[:64] + "…"
        super().__init__(f"duplicate key {shown!r} in a JSON object")
        self.key = key


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads`: builds the object, or raises
    :class:`DuplicateKey` naming the first key that appears twice."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKey(key)
        result[key] = value
    return result


UNSTORABLE_TEXT = "strings may not contain NUL or unpaired surrogates"


def is_storable(value: Any) -> bool:
    """True when every string in ``value`` (and every key) can be stored and sent back: no NUL
    (PostgreSQL text refuses it) and no lone surrogate (``\\ud800`` escapes decode to text that
    cannot be encoded as UTF-8 again). Every input — REST bodies, path and query parameters,
    MCP arguments — is checked with this before it reaches a use case.

    Raises:
        RecursionError: ``value`` is nested too deeply (callers refuse it as well).
    """
    if isinstance(value, str):
        if "\x00" in value:
            return False
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, Mapping):
        return all(is_storable(key) and is_storable(item) for key, item in value.items())
    if isinstance(value, list | tuple):
        return all(is_storable(item) for item in value)
    return True


def answer_model(answer: Answer) -> models.Answer:
    return models.Answer(answer.question_id, list(answer.selected_options), answer.custom_text)


def response_model(resolution: Resolution) -> models.Response:
    return models.Response(
        pending_id=resolution.pending_id,
        answers=[answer_model(answer) for answer in resolution.answers],
        rejected=resolution.rejected,
        reject_reason=resolution.reject_reason,
        responded_at=resolution.responded_at,
    )


def response_json(resolution: Resolution) -> dict[str, Any]:
    """``SerializeResponse`` (upstream facts §5.9): key order and always-present keys (R12)."""
    return unstructure(response_model(resolution))


def resolution_json(resolution: Resolution) -> dict[str, Any]:
    """The MCP ``answer_question`` result: ``claimed``, ``status`` and ``response`` (N3, N4)."""
    return unstructure(
        models.Resolution(
            resolution.claimed,
            resolution.status,
            response_model(resolution),
        )
    )


def respond_body(resolution: Resolution) -> dict[str, Any]:
    """The REST ``respond`` 200 body (R10, R11): ``success`` plus the MCP result's keys."""
    return unstructure(
        models.RespondResult(
            True,
            resolution.claimed,
            resolution.status,
            response_model(resolution),
        )
    )


def wait_response_json(resolution: Resolution) -> dict[str, Any]:
    """What ``GET /:id/wait`` returns: upstream's Response in its omitempty shape (facts §5.10;
    A4 leaves this endpoint's success body unchanged). The respond envelope is R12's instead."""
    return unstructure(
        models.WaitResponse(
            pending_id=resolution.pending_id,
            answers=[
                models.WaitAnswer(
                    question_id=answer.question_id,
                    selected_options=list(answer.selected_options),
                    custom_text=answer.custom_text,
                )
                for answer in resolution.answers
            ],
            rejected=resolution.rejected,
            reject_reason=resolution.reject_reason,
            responded_at=resolution.responded_at,
        )
    )


def option_models(options: Iterable[Option]) -> list[models.Option]:
    return [models.Option(option.option_id, option.label, option.description) for option in options]


def listed_bundle_model(bundle: ListedBundle, now: datetime) -> models.ListedBundle:
    """L3/L4 with L4a: every field present; strings default to "", arrays to []."""
    return models.ListedBundle(
        pending_id=bundle.pending_id,
        task_id=bundle.task_id,
        session_id=bundle.session_id,
        created_at=bundle.created_at,
        age_seconds=bundle.age_seconds(now),
        context=bundle.context,
        questions=[
            models.ListedQuestion(
                question_id=question.question_id,
                title=question.title,
                prompt=question.prompt,
                status=question.status,
                options=option_models(question.options),
            )
            for question in bundle.questions
        ],
    )


def listed_bundle_json(bundle: ListedBundle, now: datetime) -> dict[str, Any]:
    return unstructure(listed_bundle_model(bundle, now))


Item = TypeVar("Item", models.ListedBundle, models.ResolvedBundle | models.ClosedBundle)


def with_approvals(
    items: list[Item], approvals: Mapping[str, models.ApprovalSummary] | None
) -> list[Item]:
    """``items`` with the ``approval`` object of those that are approval requests (issue #33);
    every other item is left as it is, so its JSON is byte for byte what it was."""
    if not approvals:
        return items
    return [
        attrs.evolve(item, approval=approvals[item.pending_id])
        if item.pending_id in approvals
        else item
        for item in items
    ]


def list_json(
    page: ListPage,
    now: datetime,
    approvals: Mapping[str, models.ApprovalSummary] | None = None,
) -> dict[str, Any]:
    """L11: ``{"bundles", "count", "next_cursor"}``; ``count`` equals ``len(bundles)``. An
    approval request's item gains its ``approvals`` summary (issue #33, by pending id)."""
    bundles = with_approvals(
        [listed_bundle_model(bundle, now) for bundle in page.bundles], approvals
    )
    return unstructure(models.PendingPage(bundles, len(bundles), page.next_cursor))


class TaskWithActions(Protocol):
    """A task with its pending-action projection (T1, T2), e.g. the host use case's view."""

    @property
    def task(self) -> Task: ...

    @property
    def task_pending_action(self) -> str | None: ...

    @property
    def primary_session_pending_action(self) -> str | None: ...


def _action(value: str | None) -> Literal["clarification"] | None:
    """A pending action as T2 publishes it: ``"clarification"`` or ``null``."""
    if value is None:
        return None
    if value != "clarification":
        raise ValueError(f"unknown pending action {value!r}")
    return "clarification"


def task_model(view: TaskWithActions) -> models.Task:
    task = view.task
    return models.Task(
        id=task.id,
        title=task.title,
        workspace_id=task.workspace_id,
        created_at=task.created_at,
        task_pending_action=_action(view.task_pending_action),
        primary_session_pending_action=_action(view.primary_session_pending_action),
    )


def task_json(view: TaskWithActions) -> dict[str, Any]:
    """One listed task; both pending-action keys always present, ``null`` when none (T2)."""
    return unstructure(task_model(view))


def tasks_json(views: Sequence[TaskWithActions]) -> dict[str, Any]:
    """``{"tasks": [...], "total"}`` for ``list_tasks_kandev``."""
    tasks = [task_model(view) for view in views]
    return unstructure(models.ToolTaskList(tasks, len(tasks)))


def task_page_json(views: Sequence[TaskWithActions], next_cursor: str) -> dict[str, Any]:
    """``{"tasks": [...], "total", "next_cursor"}`` for REST ``GET /tasks``."""
    tasks = [task_model(view) for view in views]
    return unstructure(models.TaskList(tasks, len(tasks), next_cursor))


# --- input ---------------------------------------------------------------------------------


def parse_outcome(payload: Any) -> Outcome:
    """A respond body / answer-tool arguments → :class:`Outcome`."""
    body = structure(payload, models.RespondRequest)
    answers = tuple(
        Answer(
            question_id=entry.question_id,
            selected_options=tuple(entry.selected_options or ()),
            custom_text=entry.custom_text,
        )
        for entry in body.answers or ()
    )
    return Outcome(answers=answers, rejected=body.rejected, reject_reason=body.reject_reason)


def parse_question_drafts(payload: Any, *, field: str = "questions") -> tuple[QuestionDraft, ...]:
    """A JSON array of questions → drafts for :func:`clarion.domain.validate_questions`."""
    if not isinstance(payload, list):
        raise ValidationError(f"invalid payload: {field} must be an array", field=field)
    drafts: list[QuestionDraft] = []
    for index, entry in enumerate(payload):
        question = structure(entry, models.QuestionIn, prefix=f"{field}[{index}]")
        drafts.append(
            QuestionDraft(
                prompt=question.prompt,
                id=question.id or None,
                title=question.title,
                options=tuple(
                    OptionDraft(
                        label=option.label,
                        description=option.description,
                        option_id=option.option_id or None,
                    )
                    for option in question.options or ()
                ),
            )
        )
    return tuple(drafts)
