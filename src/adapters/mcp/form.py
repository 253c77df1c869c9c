"""A bundle as an MCP elicitation form, and a submitted form as an outcome.

The form is the spec's restricted schema (a flat object of primitive properties, identical in
2025-11-25 and 2026-07-28), so every field is optional and one of:

- ``q<i>_choice`` — a multi-select enum with titles (``type: array``, ``items.anyOf`` of
  ``{const: option_id, title: label}``): a Clarion answer may select any number of a
  question's options, as in the inbox;
- ``q<i>_text`` — free text for that question, at most 2,000 code points (N8b);
- ``skip`` — a boolean that rejects the whole bundle, with ``skip_reason`` (≤ 2,000).

Keys are positional (``q1`` is the bundle's first question in D2 order), so a question id that
is not a valid property name never reaches the schema. These names are pinned (goldens, clients
in the field); they are the medium's spelling of the one answer form's fields
(:mod:`clarion.domain.answer_form`: ``q<i>_choice`` is ``q<i-1>_options``, ``skip_reason`` is
``reason``), and a submitted form is read by that form's one parser (:func:`form_outcome`), its
errors named by this schema's keys. The resolver validates the outcome again, like every other
surface's (N6–N8b).

An approval request (issue #33; :mod:`clarion.adapters.approval_display` recognises its one
question) is offered as its own form instead: ``decision``, a required single-select enum with
titles (``approve`` / ``deny``), and ``comment``, optional free text — one decision, not
"choose any" (:func:`approval_schema`, :func:`approval_outcome`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from clarion.adapters.approval_display import ShownApproval, approval_of
from clarion.domain.answer_form import (
    REASON,
    SKIP,
    AnswerForm,
    FormError,
    options_field,
    text_field,
)
from clarion.domain.approvals import APPROVAL_QUESTION_ID, APPROVE, DENY
from clarion.domain.errors import InvalidOutcome
from clarion.domain.model import MAX_TEXT_CODE_POINTS, Answer, Outcome, Question

_FORM_FIELD: Final = re.compile(r"q(\d+)_(options|text)")
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
    """What the client shows above the form: the shared context, then how answering works
    (for an approval request: the reason and the action verbatim, :func:`approval_message`)."""
    approval = approval_of(questions)
    if approval is not None:
        return approval_message(approval, context)
    return "\n\n".join([*_opening(questions, context), FOOTER])


def _opening(questions: Sequence[Question], context: str) -> list[str]:
    """The paragraphs both messages open with: how many questions the agent asks, then the
    shared context when there is one."""
    count = len(questions)
    lead = (
        "The agent asks you one question." if count == 1 else f"The agent asks {count} questions."
    )
    return [lead, context.strip()] if context.strip() else [lead]


LINK_FOOTER: Final = (
    "Open the link to answer on Clarion's answer page (sign in as yourself if it asks); the "
    "first answer from anywhere counts. Leave it unopened to keep the question open for others."
)


def link_message(questions: Sequence[Question], context: str) -> str:
    """What a client shows with a URL-mode link: the questions' titles and prompts (so the
    person knows what the page asks), the shared context, then how answering works."""
    parts = _opening(questions, context)
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
    """The ``requestedSchema`` offering ``questions`` (see the module docstring; an approval
    request gets :func:`approval_schema`)."""
    approval = approval_of(questions)
    if approval is not None:
        return approval_schema(questions[0], approval)
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


def form_values(questions: Sequence[Question], content: Mapping[str, object]) -> dict[str, object]:
    """The submitted ``content`` as the answer form's flat field values: this schema's pinned
    names (``q1_choice``, ``q1_text``, ``skip``, ``skip_reason``; 1-based) mapped onto the
    form's (``q0_options``, ``q0_text``, ``skip``, ``reason``; 0-based)."""
    values: dict[str, object] = {SKIP: content.get(SKIP), REASON: content.get(SKIP_REASON)}
    for position in range(1, len(questions) + 1):
        values[options_field(position - 1)] = content.get(choice_key(position))
        values[text_field(position - 1)] = content.get(text_key(position))
    return values


def schema_key(field: str) -> str:
    """The property of this schema that shows the answer form's ``field`` (itself when the
    schema has none: ``form``)."""
    if field == REASON:
        return SKIP_REASON
    named = _FORM_FIELD.fullmatch(field)
    if named is None:
        return field
    position = int(named.group(1)) + 1
    return choice_key(position) if named.group(2) == "options" else text_key(position)


def form_outcome(questions: Sequence[Question], content: Mapping[str, object] | None) -> Outcome:
    """The outcome a submitted form stands for, read by the bundle's one answer form
    (:class:`~clarion.domain.answer_form.AnswerForm`): a rejection when ``skip`` is true, else
    one answer per question (options and free text, either possibly empty: an accepted form
    with nothing in it is the caller's to judge).

    Raises:
        InvalidOutcome: a field has a type the schema does not allow, a text is over the
            limit, or the outcome breaks N6–N8b; ``field`` names this schema's property
            (``q1_choice``), or ``form`` for the form as a whole.
    """
    if approval_of(questions) is not None:
        return approval_outcome(content or {})
    try:
        return AnswerForm(tuple(questions)).parse(
            form_values(questions, content or {}), require_answer=False
        )
    except FormError as exc:
        key = schema_key(exc.field)
        raise InvalidOutcome(f"{key}: {exc.message}", field=key) from exc


# -- approval requests (issue #33) ---------------------------------------------------------

DECISION_KEY: Final = "decision"
COMMENT_KEY: Final = "comment"
APPROVAL_FOOTER: Final = (
    "Approve or deny here or anywhere else Clarion shows this request. When it needs several "
    "approvals, yours is one of them; any deny decides at once. Declining the form denies; "
    "closing it without a choice keeps the request open for others."
)


def approval_message(approval: ShownApproval, context: str) -> str:
    """What the client shows above an approval form: the agent's context, the reason, the
    action exactly as it will run, then how deciding works."""
    parts = [f"The agent asks for your approval to run {approval.name}."]
    parts += [part for part in (context.strip(), approval.reason.strip()) if part]
    parts += [approval.action, APPROVAL_FOOTER]
    return "\n\n".join(parts)


def approval_schema(question: Question, approval: ShownApproval) -> dict[str, Any]:
    """An approval's ``requestedSchema``: ``decision``, a titled single-select enum
    (``approve`` / ``deny``), required; ``comment``, optional free text (≤ 2,000)."""
    return {
        "type": "object",
        "properties": {
            DECISION_KEY: {
                "type": "string",
                "title": question.title or f"Approve {approval.name}?",
                "description": approval.action,
                "oneOf": [
                    {"const": option.option_id, "title": option.label or option.option_id}
                    for option in question.options
                ],
            },
            COMMENT_KEY: {
                "type": "string",
                "title": "Comment (optional)",
                "description": "Told to the agent with your decision.",
                "maxLength": MAX_TEXT_CODE_POINTS,
            },
        },
        "required": [DECISION_KEY],
    }


def approval_outcome(content: Mapping[str, object]) -> Outcome:
    """The decision a submitted approval form stands for: option ``decision`` chosen, the
    comment as its text. The resolver turns it into a vote (quorum, veto).

    Raises:
        InvalidOutcome: ``decision`` is not one of the options, or ``comment`` is not a string
            (``field`` names the property).
    """
    decision = content.get(DECISION_KEY)
    if decision not in (APPROVE, DENY):
        raise InvalidOutcome(f'{DECISION_KEY}: choose "{APPROVE}" or "{DENY}"', field=DECISION_KEY)
    comment = content.get(COMMENT_KEY)
    if comment is None:
        comment = ""
    if not isinstance(comment, str):
        raise InvalidOutcome(f"{COMMENT_KEY}: must be text", field=COMMENT_KEY)
    assert isinstance(decision, str)
    return Outcome.answer(Answer(APPROVAL_QUESTION_ID, (decision,), comment))
