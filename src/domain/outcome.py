"""Outcome validation (N6–N8b, L16) and normalization (N3a, P1b).

Validation counts lengths in code points on the caller's raw input; normalization trims
afterwards (N3a rule 3), so a value one code point over the cap is rejected even when trimming
would bring it under.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from clarion.domain.errors import InvalidOutcome
from clarion.domain.limits import UNSTORABLE, storable
from clarion.domain.model import (
    ANSWERED,
    MAX_TEXT_CODE_POINTS,
    REJECTED,
    Answer,
    Outcome,
    Question,
    ResolutionStatus,
)

# Go's strings.TrimSpace trims Unicode White_Space; Python's str.strip() also strips the
# separators U+001C..U+001F, which are not White_Space. Keep them, as upstream does.
_NOT_TRIMMED = frozenset("\x1c\x1d\x1e\x1f")


def trim(text: str) -> str:
    """Trim leading and trailing Unicode whitespace (Go ``strings.TrimSpace`` semantics)."""
    start, end = 0, len(text)
    while start < end and text[start].isspace() and text[start] not in _NOT_TRIMMED:
        start += 1
    while end > start and text[end - 1].isspace() and text[end - 1] not in _NOT_TRIMMED:
        end -= 1
    return text[start:end]


def _quoted(value: str) -> str:
    return json.dumps(value, ensure_ascii=False)


def validate_outcome(questions: Sequence[Question], outcome: Outcome) -> None:
    """Raise :class:`InvalidOutcome` naming the offending field, or return when valid.

    ``questions`` is the bundle's question set in D2 order, one per durable row (N6a).
    Which rule is reported when several are broken is unspecified (N8d).
    """
    if any(not question.id for question in questions):
        raise InvalidOutcome(
            "bundle contains a message with a missing question_id", field="question_id"
        )
    if len(outcome.reject_reason) > MAX_TEXT_CODE_POINTS:
        raise InvalidOutcome("reason exceeds 2000 characters", field="reject_reason")
    if not storable(outcome.reject_reason):
        raise InvalidOutcome(f"reason {UNSTORABLE}", field="reject_reason")
    if outcome.rejected:
        if outcome.answers:
            raise InvalidOutcome(
                "rejected may not be combined with a non-empty answers array", field="answers"
            )
        return
    if len(outcome.answers) != len(questions):
        raise InvalidOutcome(
            f"expected exactly {len(questions)} answer(s), got {len(outcome.answers)}",
            field="answers",
        )
    by_id = {question.id: question for question in questions}
    seen: set[str] = set()
    for position, answer in enumerate(outcome.answers, start=1):
        field = f"answers[{position - 1}]"
        if not answer.question_id:
            raise InvalidOutcome(
                f"answer {position} is missing question_id", field=f"{field}.question_id"
            )
        question = by_id.get(answer.question_id)
        if question is None:
            raise InvalidOutcome(
                f"answer {position} references unknown question_id {_quoted(answer.question_id)}",
                field=f"{field}.question_id",
            )
        if answer.question_id in seen:
            raise InvalidOutcome(
                f"answer {position} repeats question_id {_quoted(answer.question_id)}",
                field=f"{field}.question_id",
            )
        seen.add(answer.question_id)
        known = set(question.option_ids())
        for option_id in answer.selected_options:
            if option_id not in known:
                raise InvalidOutcome(
                    f"answer {position} references unknown option_id {_quoted(option_id)}",
                    field=f"{field}.selected_options",
                )
        if len(answer.custom_text) > MAX_TEXT_CODE_POINTS:
            raise InvalidOutcome(
                f"answer {position} custom_text exceeds 2000 characters",
                field=f"{field}.custom_text",
            )
        if not storable(answer.custom_text):
            raise InvalidOutcome(
                f"answer {position} custom_text {UNSTORABLE}", field=f"{field}.custom_text"
            )


def normalize_answer(question: Question, answer: Answer) -> Answer:
    """N3a rules 2 and 3: options de-duplicated in option order; free text trimmed."""
    position = {option_id: index for index, option_id in enumerate(question.option_ids())}
    unique = dict.fromkeys(answer.selected_options)
    ordered = sorted(unique, key=lambda option_id: position.get(option_id, len(position)))
    return Answer(
        question_id=answer.question_id,
        selected_options=tuple(ordered),
        custom_text=trim(answer.custom_text),
    )


def normalize_outcome(
    questions: Sequence[Question], outcome: Outcome
) -> tuple[ResolutionStatus, Outcome]:
    """N3a: the canonical form of a *validated* outcome, with its terminal status.

    Answers follow the bundle's question order; a rejection keeps its trimmed reason and no
    answers; a stray reason on the answers path is discarded.
    """
    if outcome.rejected:
        return REJECTED, Outcome(rejected=True, reject_reason=trim(outcome.reject_reason))
    by_id = {answer.question_id: answer for answer in outcome.answers}
    answers = tuple(
        normalize_answer(question, by_id[question.id])
        for question in questions
        if question.id in by_id
    )
    return ANSWERED, Outcome(answers=answers)


def responses_by_question(outcome: Outcome) -> dict[str, Answer] | None:
    """P1a: the claim's ``responses`` map keyed by question id; None for a rejection."""
    if outcome.rejected:
        return None
    return {answer.question_id: answer for answer in outcome.answers}
