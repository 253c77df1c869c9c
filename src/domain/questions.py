"""Validation and id assignment for a new bundle's question set (upstream facts §2.2, §2.5).

Rules: 1–4 questions; each with a non-empty prompt and 2–6 options; each option with a
non-empty label and description; question ids default to ``q<i>`` and option ids to
``q<i>_opt<j>`` (1-based) when absent; duplicate ids are rejected; every text (title, prompt,
option label and description, ids) within its :class:`~clarion.domain.limits.Limits` bound.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence

import attrs

from clarion.domain.errors import InvalidQuestions
from clarion.domain.limits import Limits, check_length
from clarion.domain.model import Option, Question

MIN_QUESTIONS, MAX_QUESTIONS = 1, 4
MIN_OPTIONS, MAX_OPTIONS = 2, 6


@attrs.frozen
class OptionDraft:
    """An option as submitted; ``option_id`` None means "assign one"."""

    label: str
    description: str
    option_id: str | None = None


@attrs.frozen
class QuestionDraft:
    """A question as submitted; ``id`` None means "assign one"."""

    prompt: str
    options: tuple[OptionDraft, ...]
    id: str | None = None
    title: str = ""


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def _option(number: int, index: int, draft: OptionDraft, limits: Limits) -> Option:
    field = f"questions[{number - 1}].options[{index - 1}]"
    check_length(draft.label, limits.max_option_label, field=f"{field}.label", what="a label")
    check_length(
        draft.description,
        limits.max_option_description,
        field=f"{field}.description",
        what="a description",
    )
    if draft.option_id is not None:
        check_length(draft.option_id, limits.max_id, field=f"{field}.option_id", what="an id")
    if not draft.label.strip():
        raise InvalidQuestions(
            f"question {number} option {index} is missing required 'label' field",
            field=f"{field}.label",
        )
    if not draft.description.strip():
        raise InvalidQuestions(
            f"question {number} option {index} is missing required 'description' field",
            field=f"{field}.description",
        )
    return Option(
        option_id=draft.option_id or f"q{number}_opt{index}",
        label=draft.label,
        description=draft.description,
    )


def validate_questions(
    drafts: Sequence[QuestionDraft], limits: Limits | None = None
) -> tuple[Question, ...]:
    """Validate a question set and assign missing ids. Raises :class:`InvalidQuestions`."""
    limits = limits if limits is not None else Limits()
    if len(drafts) < MIN_QUESTIONS:
        raise InvalidQuestions("questions must contain at least 1 question", field="questions")
    if len(drafts) > MAX_QUESTIONS:
        raise InvalidQuestions("questions must contain at most 4 questions", field="questions")
    questions: list[Question] = []
    seen: set[str] = set()
    for number, draft in enumerate(drafts, start=1):
        field = f"questions[{number - 1}]"
        if draft.id is not None:
            check_length(draft.id, limits.max_id, field=f"{field}.id", what="an id")
        check_length(draft.title, limits.max_title, field=f"{field}.title", what="a title")
        check_length(draft.prompt, limits.max_prompt, field=f"{field}.prompt", what="a prompt")
        question_id = draft.id or f"q{number}"
        if question_id in seen:
            raise InvalidQuestions(
                f"question {number} has duplicate id {_quoted(question_id)}", field=f"{field}.id"
            )
        seen.add(question_id)
        if not draft.prompt.strip():
            raise InvalidQuestions(
                f"question {number} is missing required 'prompt' field", field=f"{field}.prompt"
            )
        if len(draft.options) < MIN_OPTIONS:
            raise InvalidQuestions(
                f"question {number} must have at least 2 options", field=f"{field}.options"
            )
        if len(draft.options) > MAX_OPTIONS:
            raise InvalidQuestions(
                f"question {number} must have at most 6 options", field=f"{field}.options"
            )
        options = tuple(
            _option(number, index, option, limits)
            for index, option in enumerate(draft.options, start=1)
        )
        option_ids = [option.option_id for option in options]
        duplicate = next((o for o in option_ids if option_ids.count(o) > 1), None)
        if duplicate is not None:
            raise InvalidQuestions(
                f"question {number} has duplicate option id {_quoted(duplicate)}",
                field=f"{field}.options",
            )
        questions.append(
            Question(id=question_id, prompt=draft.prompt, title=draft.title, options=options)
        )
    return tuple(questions)


def same_questions(left: Sequence[Question], right: Sequence[Question]) -> bool:
    """Dedup equality (upstream facts §2.7): prompts and options equal; ids and titles ignored."""
    return len(left) == len(right) and all(
        a.prompt == b.prompt and a.options == b.options for a, b in zip(left, right, strict=True)
    )


def questions_digest(questions: Sequence[Question]) -> str:
    """A SHA-256 hex digest of exactly what :func:`same_questions` compares, so equal question
    sets have equal digests (a store can index it to find a duplicate in one lookup; equal
    digests are then confirmed with :func:`same_questions`)."""
    canonical = [
        [q.prompt, [[o.option_id, o.label, o.description] for o in q.options]] for q in questions
    ]
    text = json.dumps(canonical, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
