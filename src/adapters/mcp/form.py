"""A bundle as an MCP elicitation form, and a submitted form as an outcome.

The form is the spec's restricted schema (a flat object of primitive properties, identical in
2025-11-25 and 2026-07-28), so every field is optional and one of:

- ``q<i>_choice`` — a multi-select enum with titles (``type: array``, ``items.anyOf`` of
  ``{const: option_id, title: label}``): a Clarion answer may select any number of a
  question's options, as in the inbox;
- ``q<i>_text`` — free text for that question, at most 2,000 code points (N8b);
- ``skip`` — a boolean that rejects the whole bundle, with ``skip_reason`` (≤ 2,000).

Keys are positional (``q1`` is the bundle's first question in D2 order), so a question id that
is not a valid property name never reaches the schema. Nothing here decides validity: the
outcome goes to the resolver, which validates it like every other surface's (N6–N8b).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from clarion.domain.errors import InvalidOutcome
from clarion.domain.model import MAX_TEXT_CODE_POINTS, Answer, Outcome, Question

SKIP: Final = "skip"
SKIP_REASON: Final = "skip_reason"
FOOTER: Final = (
    "Answer here or anywhere else Clarion shows this question; the first answer counts. "
    'Declining the form, like ticking "Skip these questions", tells the agent you will not '
    "answer; closing it without a choice keeps the question open for others."
)


def choice_key(position: int) -> str:
    """The form property holding the options chosen for the ``position``-th question (1-based)."""
    return f"q{position}_choice"


def text_key(position: int) -> str:
    """The form property holding the free text for the ``position``-th question (1-based)."""
    return f"q{position}_text"


def form_message(questions: Sequence[Question], context: str) -> str:
    """What the client shows above the form: the shared context, then how answering works."""
    count = len(questions)
    lead = (
        "The agent asks you one question." if count == 1 else f"The agent asks {count} questions."
    )
    parts = [lead]
    if context.strip():
        parts.append(context.strip())
    parts.append(FOOTER)
    return "\n\n".join(parts)


LINK_FOOTER: Final = (
    "Open the link to answer on Clarion's answer page (sign in as yourself if it asks); the "
    "first answer from anywhere counts. Leave it unopened to keep the question open for others."
)


def link_message(questions: Sequence[Question], context: str) -> str:
    """What a client shows with a URL-mode link: the questions' titles and prompts (so the
    person knows what the page asks), the shared context, then how answering works."""
    count = len(questions)
    lead = (
        "The agent asks you one question." if count == 1 else f"The agent asks {count} questions."
    )
    parts = [lead]
    if context.strip():
        parts.append(context.strip())
    parts.extend(
        f"{_question_title(position, question)}: {question.prompt}"
        for position, question in enumerate(questions, start=1)
    )
    parts.append(LINK_FOOTER)
    return "\n\n".join(parts)


def _question_title(position: int, question: Question) -> str:
    return question.title or f"Question {position}"


def _choice_description(question: Question) -> str:
    lines = [question.prompt]
    lines.extend(
        f"- {option.label}: {option.description}" if option.description else f"- {option.label}"
        for option in question.options
    )
    return "\n".join(lines)


def form_schema(questions: Sequence[Question]) -> dict[str, Any]:
    """The ``requestedSchema`` offering ``questions`` (see the module docstring)."""
    properties: dict[str, Any] = {}
    for position, question in enumerate(questions, start=1):
        title = _question_title(position, question)
        properties[choice_key(position)] = {
            "type": "array",
            "title": title,
            "description": _choice_description(question),
            "items": {
                "anyOf": [
                    {"const": option.option_id, "title": option.label or option.option_id}
                    for option in question.options
                ]
            },
            "maxItems": len(question.options),
        }
        properties[text_key(position)] = {
            "type": "string",
            "title": f"{title}: in your own words (optional)",
            "description": question.prompt,
            "maxLength": MAX_TEXT_CODE_POINTS,
        }
    properties[SKIP] = {
        "type": "boolean",
        "title": "Skip these questions",
        "description": "Tell the agent you will not answer; it is told the reason below.",
        "default": False,
    }
    properties[SKIP_REASON] = {
        "type": "string",
        "title": "Why skip (optional)",
        "maxLength": MAX_TEXT_CODE_POINTS,
    }
    return {"type": "object", "properties": properties}


def _text(content: Mapping[str, object], key: str) -> str:
    value = content.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidOutcome(f"{key} must be a string", field=key)
    return value


def _choices(content: Mapping[str, object], key: str) -> tuple[str, ...]:
    value = content.get(key)
    if value is None:
        return ()
    if isinstance(value, str):  # a client that rendered the field as a single choice
        return (value,)
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(str(item) for item in value)
    raise InvalidOutcome(f"{key} must be a list of option ids", field=key)


def form_outcome(questions: Sequence[Question], content: Mapping[str, object] | None) -> Outcome:
    """The outcome a submitted form stands for: a rejection when ``skip`` is true, else one
    answer per question (options and free text, either possibly empty).

    Raises:
        InvalidOutcome: a field has a type the schema does not allow (``field`` names it).
    """
    content = content or {}
    skip = content.get(SKIP)
    if skip is not None and not isinstance(skip, bool):
        raise InvalidOutcome(f"{SKIP} must be a boolean", field=SKIP)
    if skip:
        return Outcome.reject(_text(content, SKIP_REASON))
    return Outcome.answer(
        *(
            Answer(
                question_id=question.id,
                selected_options=_choices(content, choice_key(position)),
                custom_text=_text(content, text_key(position)),
            )
            for position, question in enumerate(questions, start=1)
        )
    )
