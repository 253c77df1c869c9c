"""The texts a resumed agent receives (upstream facts §2.10), every selected option listed."""

from __future__ import annotations

import pytest

from clarion.domain import Answer, Option, Question, answer_summary, question_summary, resume_prompt

COLOR = Question(
    id="color",
    prompt="Which colours?",
    options=(Option("red", "Red", "warm"), Option("blue", "Blue", "cool"), Option("x", "", "")),
)
SIZE = Question(id="size", prompt="Which size?", options=(Option("m", "Medium", "mid"),))
NOTE = Question(id="note", prompt="Anything else?")


def summary(questions: list[Question], answers: list[Answer]) -> str:
    return answer_summary(questions, answers, rejected=False, reject_reason="")


def test_rejection_with_a_reason() -> None:
    text = answer_summary([COLOR], [], rejected=True, reject_reason="too vague")
    assert text == "User declined to answer. Reason: too vague"


def test_rejection_without_a_reason() -> None:
    assert answer_summary([COLOR], [], rejected=True, reject_reason="") == (
        "User declined to answer."
    )


def test_no_answers_at_all() -> None:
    assert summary([COLOR], []) == "User provided no specific answer."


def test_single_question_custom_text_wins_over_options() -> None:
    assert summary([COLOR], [Answer("color", ("red",), "teal")]) == "User answered: teal"


def test_single_question_lists_every_selected_option_by_label_and_id() -> None:
    # Fixes upstream §9.25: not only the first option, and labels as well as ids.
    text = summary([COLOR], [Answer("color", ("red", "blue"))])
    assert text == "User selected: Red (red), Blue (blue)"


def test_an_option_without_a_label_or_unknown_to_the_question_is_shown_by_id() -> None:
    assert summary([COLOR], [Answer("color", ("x", "ghost"))]) == "User selected: x, ghost"
    assert summary([], [Answer("color", ("red",))]) == "User selected: red"


def test_single_question_empty_entry() -> None:
    assert summary([COLOR], [Answer("color")]) == "User provided no specific answer."


def test_several_questions_one_line_each_in_bundle_order() -> None:
    answers = [
        Answer("note"),
        Answer("size", ("m",), "large really"),
        Answer("color", ("blue", "red")),
    ]
    assert summary([COLOR, SIZE, NOTE], answers) == (
        "A1: Blue (blue), Red (red)\nA2: large really\nA3: (no answer)"
    )


def test_several_questions_skip_a_question_without_an_answer_keeping_its_number() -> None:
    answers = [Answer("note", (), "n"), Answer("color", ("red",))]
    assert summary([COLOR, SIZE, NOTE], answers) == "A1: Red (red)\nA3: n"


def test_several_answers_matching_no_question_fall_back_to_positions() -> None:
    answers = [Answer("a", (), "first"), Answer("b", ("red",))]
    assert summary([COLOR, SIZE], answers) == "A1: first\nA2: red"


def test_one_question_with_several_answers_uses_the_numbered_form() -> None:
    answers = [Answer("color", ("red",)), Answer("other", (), "t")]
    assert summary([COLOR], answers) == "A1: Red (red)"


def test_question_summary_of_one_question_is_its_prompt() -> None:
    assert question_summary([COLOR]) == "Which colours?"


def test_question_summary_of_several_questions_is_numbered() -> None:
    assert question_summary([COLOR, SIZE]) == "Q1: Which colours?\nQ2: Which size?"


def test_resume_prompt_rejected_single_question() -> None:
    text = resume_prompt(
        'Say "hi"?', "User declined to answer.", rejected=True, reject_reason="busy"
    )
    assert text == (
        'The user declined to answer your question: "Say \\"hi\\"?"\n'
        "Reason: busy\nPlease continue without this information."
    )


def test_resume_prompt_rejected_without_a_reason() -> None:
    text = resume_prompt("Go?", "", rejected=True, reject_reason="")
    assert text == (
        'The user declined to answer your question: "Go?"\n'
        "Reason: No reason provided\nPlease continue without this information."
    )


def test_resume_prompt_rejected_several_questions() -> None:
    text = resume_prompt("Q1: a\nQ2: b", "", rejected=True, reject_reason="later")
    assert text == (
        "The user declined to answer your questions:\nQ1: a\nQ2: b\n"
        "Reason: later\nPlease continue without this information."
    )


def test_resume_prompt_answered_single_question() -> None:
    text = resume_prompt("Go? 本", "User answered: yes", rejected=False, reject_reason="")
    assert text == (
        'You previously asked the user: "Go? 本"\n'
        "User answered: yes\nPlease continue with this information."
    )


@pytest.mark.parametrize(
    "summary_text", ["Q1: a\nQ2: b", "one prompt\nspanning two lines"], ids=["multi", "quirk"]
)
def test_resume_prompt_answered_multi_including_a_single_multiline_prompt(
    summary_text: str,
) -> None:
    text = resume_prompt(summary_text, "A1: x\nA2: y", rejected=False, reject_reason="")
    assert text == (
        f"You previously asked the user:\n{summary_text}\n\nA1: x\nA2: y\n"
        "Please continue with this information."
    )
