"""The JSON wire format shared by REST and MCP: one private cattrs converter, one place.

Output shapes follow the spec's always-emit rules: R12 (``answers``, ``rejected``,
``reject_reason`` and each answer's ``question_id``, ``selected_options``, ``custom_text``
always present, ``[]``/``""`` for empty) and L4a (every listed field present, never null).
Input parsing is strict: wrong types and unknown fields raise a ``ValidationError`` whose
``field`` is the JSON path of the offending value (``answers[0].custom_text``).
"""

from __future__ import annotations

import typing
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Protocol, TypeVar

import attrs
import cattrs
from cattrs.cols import list_structure_factory
from cattrs.preconf.json import make_converter

from clarion.domain.errors import ValidationError
from clarion.domain.host import Task
from clarion.domain.listing import ListedBundle, ListPage
from clarion.domain.model import Answer, Outcome, Resolution
from clarion.domain.questions import OptionDraft, QuestionDraft

T = TypeVar("T")


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


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with ``Z``; fractional seconds only when non-zero, trailing zeros trimmed."""
    utc = moment.astimezone(UTC)
    text = utc.strftime("%Y-%m-%dT%H:%M:%S")
    if utc.microsecond:
        text += f".{utc.microsecond:06d}".rstrip("0")
    return text + "Z"


def answer_json(answer: Answer) -> dict[str, Any]:
    return {
        "question_id": answer.question_id,
        "selected_options": list(answer.selected_options),
        "custom_text": answer.custom_text,
    }


def response_json(resolution: Resolution) -> dict[str, Any]:
    """``SerializeResponse`` (upstream facts §5.9): key order and always-present keys (R12)."""
    return {
        "pending_id": resolution.pending_id,
        "answers": [answer_json(answer) for answer in resolution.answers],
        "rejected": resolution.rejected,
        "reject_reason": resolution.reject_reason,
        "responded_at": format_timestamp(resolution.responded_at),
    }


def resolution_json(resolution: Resolution) -> dict[str, Any]:
    """The MCP ``answer_question`` result: ``claimed``, ``status`` and ``response`` (N3, N4)."""
    return {
        "claimed": resolution.claimed,
        "status": resolution.status,
        "response": response_json(resolution),
    }


def respond_body(resolution: Resolution) -> dict[str, Any]:
    """The REST ``respond`` 200 body (R10, R11): ``success`` plus the MCP result's keys."""
    return {"success": True, **resolution_json(resolution)}


def listed_bundle_json(bundle: ListedBundle, now: datetime) -> dict[str, Any]:
    """L3/L4 with L4a: every field present; strings default to "", arrays to []."""
    return {
        "pending_id": bundle.pending_id,
        "task_id": bundle.task_id,
        "session_id": bundle.session_id,
        "created_at": format_timestamp(bundle.created_at),
        "age_seconds": bundle.age_seconds(now),
        "context": bundle.context,
        "questions": [
            {
                "question_id": question.question_id,
                "title": question.title,
                "prompt": question.prompt,
                "status": question.status,
                "options": [
                    {
                        "option_id": option.option_id,
                        "label": option.label,
                        "description": option.description,
                    }
                    for option in question.options
                ],
            }
            for question in bundle.questions
        ],
    }


def list_json(page: ListPage, now: datetime) -> dict[str, Any]:
    """L11: ``{"bundles", "count", "next_cursor"}``; ``count`` equals ``len(bundles)``."""
    bundles = [listed_bundle_json(bundle, now) for bundle in page.bundles]
    return {"bundles": bundles, "count": len(bundles), "next_cursor": page.next_cursor}


class TaskWithActions(Protocol):
    """A task with its pending-action projection (T1, T2), e.g. the host use case's view."""

    @property
    def task(self) -> Task: ...

    @property
    def task_pending_action(self) -> str | None: ...

    @property
    def primary_session_pending_action(self) -> str | None: ...


def task_json(view: TaskWithActions) -> dict[str, Any]:
    """One listed task; both pending-action keys always present, ``null`` when none (T2)."""
    task = view.task
    return {
        "id": task.id,
        "title": task.title,
        "workspace_id": task.workspace_id,
        "created_at": format_timestamp(task.created_at),
        "task_pending_action": view.task_pending_action,
        "primary_session_pending_action": view.primary_session_pending_action,
    }


def tasks_json(views: Sequence[TaskWithActions]) -> dict[str, Any]:
    """``{"tasks": [...], "total"}`` for REST ``GET /tasks`` and ``list_tasks_kandev``."""
    tasks = [task_json(view) for view in views]
    return {"tasks": tasks, "total": len(tasks)}


# --- input ---------------------------------------------------------------------------------


@attrs.frozen
class AnswerIn:
    question_id: str = ""
    selected_options: list[str] | None = None
    custom_text: str = ""


@attrs.frozen
class RespondIn:
    """``POST /:id/respond`` and the MCP answer tool's arguments (``pending_id`` aside)."""

    answers: list[AnswerIn] | None = None
    rejected: bool = False
    reject_reason: str = ""


@attrs.frozen
class OptionIn:
    label: str = ""
    description: str = ""
    option_id: str | None = None


@attrs.frozen
class QuestionIn:
    prompt: str = ""
    options: list[OptionIn] | None = None
    id: str | None = None
    title: str = ""


def _strict(kind: type[Any], name: str) -> Any:
    def structure(value: Any, _: Any) -> Any:
        # bool is an int subclass; JSON true must not pass as a number or vice versa.
        if type(value) is not kind:
            raise TypeError(f"expected {name}")
        return value

    return structure


def _is_list(kind: Any) -> bool:
    return typing.get_origin(kind) is list


def _make_input_converter() -> cattrs.Converter:
    converter = make_converter(forbid_extra_keys=True)
    converter.register_structure_hook(str, _strict(str, "a string"))
    converter.register_structure_hook(bool, _strict(bool, "a boolean"))
    converter.register_structure_hook(int, _strict(int, "an integer"))

    def list_hook(kind: Any) -> Any:
        base = list_structure_factory(kind, converter)

        def structure_list(value: Any, target: Any) -> list[Any]:
            # A JSON string is iterable; it must not pass for an array.
            if not isinstance(value, list):
                raise TypeError("expected an array")
            return base(value, target)  # type: ignore[no-any-return]

        return structure_list

    converter.register_structure_hook_factory(_is_list, list_hook)
    return converter


_INPUT = _make_input_converter()


def _describe(exc: BaseException, kind: Any) -> str:
    """Caller-facing wording for one structuring failure (no Python type names)."""
    if isinstance(exc, cattrs.ForbiddenExtraKeysError):
        return f"extra fields found ({', '.join(sorted(exc.extra_fields))})"
    if isinstance(exc, TypeError) and str(exc).startswith("expected "):
        return str(exc)
    if isinstance(exc, KeyError):
        return "required field missing"
    if attrs.has(kind) or isinstance(exc, AttributeError):
        return "expected a JSON object"
    return "invalid value"


def _path_of(message: str) -> tuple[str, str]:
    """Split cattrs' ``"<problem> @ $.a[0].b"`` into (field path, problem)."""
    problem, _, where = message.rpartition(" @ ")
    path = where.removeprefix("$").lstrip(".")
    return path, problem


def _join(prefix: str, path: str) -> str:
    if not prefix:
        return path
    if not path:
        return prefix
    return f"{prefix}{path}" if path.startswith("[") else f"{prefix}.{path}"


def structure(payload: Any, kind: type[T], *, prefix: str = "") -> T:
    """Structure ``payload`` strictly; raise ``ValidationError`` naming the offending field
    by its JSON path below ``prefix`` (for example ``answers[0].custom_text``)."""
    if not isinstance(payload, Mapping):
        where = prefix or "body"
        raise ValidationError(f"invalid payload: {where} must be a JSON object", field=where)
    try:
        return _INPUT.structure(payload, kind)
    except cattrs.BaseValidationError as exc:
        first = cattrs.transform_error(exc, format_exception=_describe)[0]
        path, problem = _path_of(first)
        if problem.startswith("extra fields found"):
            names = problem[problem.find("(") + 1 : problem.rfind(")")]
            unknown = names.split(",")[0].strip()
            field = _join(prefix, _join(path, unknown))
            raise ValidationError(f"invalid payload: unknown field {field!r}", field=field) from exc
        field = _join(prefix, path) or "body"
        raise ValidationError(f"invalid payload: {field}: {problem}", field=field) from exc


def parse_outcome(payload: Any) -> Outcome:
    """A respond body / answer-tool arguments → :class:`Outcome`."""
    body = structure(payload, RespondIn)
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
        question = structure(entry, QuestionIn, prefix=f"{field}[{index}]")
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
