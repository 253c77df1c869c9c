"""Tool arguments → use-case inputs. Every failure is a ``ValidationError`` naming the field.

The low-level SDK server advertises the schemas generated from the argument models
(:data:`clarion.adapters.wire.models.TOOL_INPUTS`) but does not enforce them, so this module
does: a top-level field the model does not name is refused (upstream forces
``additionalProperties: false`` at the top level, so ``reason`` is refused, facts §9.1), wrong
types name the argument, and the shared wire module parses the nested answer and question
shapes exactly as REST does.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import attrs

from clarion.adapters import wire
from clarion.adapters.wire import models
from clarion.domain.errors import ValidationError
from clarion.domain.model import Outcome
from clarion.domain.questions import QuestionDraft


@attrs.frozen
class AskArguments:
    """``ask_user_question`` arguments: the drafts, the context and the context paragraphs
    (non-empty paragraphs replace ``context``; the use case joins them, after checking each
    one's length)."""

    questions: tuple[QuestionDraft, ...]
    context: str
    context_paragraphs: tuple[str, ...] = ()


def _mapping(arguments: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return arguments if arguments is not None else {}


def _refuse_unknown(arguments: Mapping[str, Any], shape: type[Any]) -> None:
    unknown = sorted(set(arguments) - {field.name for field in attrs.fields(shape)})
    if unknown:
        raise ValidationError(f"invalid arguments: unknown field {unknown[0]!r}", field=unknown[0])


def _optional_string(arguments: Mapping[str, Any], name: str) -> str:
    value = arguments.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ValidationError(f"invalid arguments: {name} must be a string", field=name)
    return value


def _optional_limit(arguments: Mapping[str, Any]) -> int | None:
    value = arguments.get("limit")
    if value is None:
        return None
    # bool is an int subclass; JSON true is not a number.
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError("invalid arguments: limit must be a number", field="limit")
    # Upstream forwards int(float): a fractional page size is truncated, then clamped (L10).
    return int(value)


def parse_list_pending(arguments: Mapping[str, Any] | None) -> models.ListPendingInput:
    """L7–L10: every argument optional; the use case parses ``created_since`` and ``cursor``."""
    args = _mapping(arguments)
    _refuse_unknown(args, models.ListPendingInput)
    return models.ListPendingInput(
        workspace_id=_optional_string(args, "workspace_id"),
        created_since=_optional_string(args, "created_since"),
        cursor=_optional_string(args, "cursor"),
        limit=_optional_limit(args),
    )


def parse_answer(arguments: Mapping[str, Any] | None) -> tuple[str, Outcome]:
    """N1/N9: ``pending_id`` (required) plus the outcome, parsed by the shared wire module."""
    args = dict(_mapping(arguments))
    pending_id = args.pop("pending_id", None)
    if pending_id is None or pending_id == "":
        raise ValidationError("pending_id is required", field="pending_id")
    if not isinstance(pending_id, str):
        raise ValidationError("invalid arguments: pending_id must be a string", field="pending_id")
    return pending_id, wire.parse_outcome(args)


def parse_list_tasks(arguments: Mapping[str, Any] | None) -> str:
    """The optional ``workspace_id`` ("" = every visible workspace)."""
    args = _mapping(arguments)
    _refuse_unknown(args, models.ListTasksInput)
    return _optional_string(args, "workspace_id")


def parse_ask(arguments: Mapping[str, Any] | None) -> AskArguments:
    """Facts §2.2: ``questions`` (required), ``context``, ``context_paragraphs``.

    Non-empty ``context_paragraphs`` override ``context`` and are joined with blank lines by
    the use case. Counts, prompts, options, ids and every length are the use case's rules
    (domain ``validate_questions`` and ``validate_context``).
    """
    args = _mapping(arguments)
    _refuse_unknown(args, models.AskInput)
    if args.get("questions") is None:
        raise ValidationError(
            "questions is required (array of 1-4 question objects)", field="questions"
        )
    drafts = wire.parse_question_drafts(args["questions"])
    context = _optional_string(args, "context")
    paragraphs = args.get("context_paragraphs")
    if paragraphs is not None:
        if not isinstance(paragraphs, list) or not all(isinstance(p, str) for p in paragraphs):
            raise ValidationError(
                "invalid arguments: context_paragraphs must be an array of strings",
                field="context_paragraphs",
            )
        return AskArguments(questions=drafts, context=context, context_paragraphs=tuple(paragraphs))
    return AskArguments(questions=drafts, context=context)
