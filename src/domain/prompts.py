"""Texts a resumed agent receives (upstream facts §2.10), listing every selected option."""

from __future__ import annotations

import json
from collections.abc import Sequence

from clarion.domain.model import Answer, Question


def _option_text(question: Question | None, option_id: str) -> str:
    if question is not None:
        for option in question.options:
            if option.option_id == option_id and option.label:
                return f"{option.label} ({option_id})"
    return option_id


def _selected_text(question: Question | None, answer: Answer) -> str:
    return ", ".join(_option_text(question, option_id) for option_id in answer.selected_options)


def format_answer_body(question: Question | None, answer: Answer) -> str:
    """Custom text wins; else every selected option by label and id; else "(no answer)"."""
    if answer.custom_text:
        return answer.custom_text
    if answer.selected_options:
        return _selected_text(question, answer)
    return "(no answer)"


def answer_summary(
    questions: Sequence[Question],
    answers: Sequence[Answer],
    *,
    rejected: bool,
    reject_reason: str,
) -> str:
    """``buildAnswerSummary``: one line per answered question, or the declined sentence."""
    if rejected:
        return (
            f"User declined to answer. Reason: {reject_reason}"
            if reject_reason
            else "User declined to answer."
        )
    if not answers:
        return "User provided no specific answer."
    by_id = {question.id: question for question in questions}
    if len(questions) <= 1 and len(answers) == 1:
        answer = answers[0]
        question = by_id.get(answer.question_id)
        if answer.custom_text:
            return f"User answered: {answer.custom_text}"
        if answer.selected_options:
            return f"User selected: {_selected_text(question, answer)}"
        return "User provided no specific answer."
    answer_by_id = {answer.question_id: answer for answer in answers}
    lines = [
        f"A{index}: {format_answer_body(question, answer_by_id[question.id])}"
        for index, question in enumerate(questions, start=1)
        if question.id in answer_by_id
    ]
    if not lines:
        lines = [
            f"A{index}: {format_answer_body(by_id.get(answer.question_id), answer)}"
            for index, answer in enumerate(answers, start=1)
        ]
    return "\n".join(lines)


def question_summary(questions: Sequence[Question]) -> str:
    """One question → its prompt; several → "Q1: ...\\nQ2: ..."."""
    if len(questions) == 1:
        return questions[0].prompt
    return "\n".join(f"Q{i}: {q.prompt}" for i, q in enumerate(questions, start=1))


def resume_prompt(summary: str, answer_text: str, *, rejected: bool, reject_reason: str) -> str:
    """``buildClarificationPrompt``: the prompt that resumes a detached agent."""
    multi = "\n" in summary
    if rejected:
        reason = reject_reason or "No reason provided"
        if multi:
            head = f"The user declined to answer your questions:\n{summary}"
        else:
            quoted = json.dumps(summary, ensure_ascii=False)
            head = f"The user declined to answer your question: {quoted}"
        return f"{head}\nReason: {reason}\nPlease continue without this information."
    if multi:
        return (
            f"You previously asked the user:\n{summary}\n\n{answer_text}\n"
            "Please continue with this information."
        )
    return (
        f"You previously asked the user: {json.dumps(summary, ensure_ascii=False)}\n"
        f"{answer_text}\nPlease continue with this information."
    )
