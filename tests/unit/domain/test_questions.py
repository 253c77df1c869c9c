"""Question-set validation and id assignment for creation (upstream facts §2.2, §2.5, §2.7)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clarion.domain import (
    InvalidQuestions,
    Option,
    OptionDraft,
    Question,
    QuestionDraft,
    same_questions,
    validate_questions,
)
from tests.strategies import labels, question_sets


def opts(count: int) -> tuple[OptionDraft, ...]:
    return tuple(OptionDraft(label=f"L{j}", description=f"D{j}") for j in range(1, count + 1))


def draft(
    prompt: str = "Which?", options: int = 2, question_id: str | None = None
) -> QuestionDraft:
    return QuestionDraft(prompt=prompt, options=opts(options), id=question_id)


def field_of(drafts: list[QuestionDraft]) -> str:
    with pytest.raises(InvalidQuestions) as caught:
        validate_questions(drafts)
    return caught.value.field


def test_ids_are_assigned_positionally_when_absent() -> None:
    questions = validate_questions([draft(options=2), draft(options=3)])
    assert [q.id for q in questions] == ["q1", "q2"]
    assert questions[1].option_ids() == ("q2_opt1", "q2_opt2", "q2_opt3")
    assert questions[1].options[0] == Option("q2_opt1", "L1", "D1")


def test_given_ids_and_title_are_kept() -> None:
    given_options = (
        OptionDraft(label="Yes", description="do it", option_id="yes"),
        OptionDraft(label="No", description="don't"),
    )
    (question,) = validate_questions(
        [QuestionDraft(prompt="Go?", options=given_options, id="go", title="Go")]
    )
    assert question == Question(
        id="go",
        prompt="Go?",
        title="Go",
        options=(Option("yes", "Yes", "do it"), Option("q1_opt2", "No", "don't")),
    )


def test_empty_ids_count_as_absent() -> None:
    (question,) = validate_questions(
        [
            QuestionDraft(
                prompt="p", options=(OptionDraft("a", "b", ""), OptionDraft("c", "d")), id=""
            )
        ]
    )
    assert question.id == "q1"
    assert question.option_ids() == ("q1_opt1", "q1_opt2")


@pytest.mark.parametrize("count", [1, 4])
def test_one_to_four_questions_are_accepted(count: int) -> None:
    assert len(validate_questions([draft() for _ in range(count)])) == count


@pytest.mark.parametrize("count", [0, 5])
def test_zero_or_five_questions_are_rejected(count: int) -> None:
    assert field_of([draft() for _ in range(count)]) == "questions"


@pytest.mark.parametrize("count", [2, 6])
def test_two_to_six_options_are_accepted(count: int) -> None:
    (question,) = validate_questions([draft(options=count)])
    assert len(question.options) == count


@pytest.mark.parametrize("count", [0, 1, 7])
def test_fewer_than_two_or_more_than_six_options_are_rejected(count: int) -> None:
    assert field_of([draft(), draft(options=count)]) == "questions[1].options"


@pytest.mark.parametrize("prompt", ["", "  \n"])
def test_a_missing_prompt_is_rejected(prompt: str) -> None:
    assert field_of([draft(prompt=prompt)]) == "questions[0].prompt"


@pytest.mark.parametrize(
    ("option", "field"),
    [
        (OptionDraft(label="", description="d"), "questions[0].options[1].label"),
        (OptionDraft(label=" ", description="d"), "questions[0].options[1].label"),
        (OptionDraft(label="l", description=""), "questions[0].options[1].description"),
        (OptionDraft(label="l", description="\t"), "questions[0].options[1].description"),
    ],
)
def test_a_missing_option_label_or_description_is_rejected(option: OptionDraft, field: str) -> None:
    question = QuestionDraft(prompt="p", options=(OptionDraft("a", "b"), option))
    assert field_of([question]) == field


def test_duplicate_question_ids_are_rejected() -> None:
    assert field_of([draft(question_id="same"), draft(question_id="same")]) == "questions[1].id"


def test_an_explicit_id_colliding_with_an_assigned_one_is_rejected() -> None:
    # Upstream quirk: ids are assigned positionally, so [{id:"q2"}, {no id}] collides on "q2".
    assert field_of([draft(question_id="q2"), draft()]) == "questions[1].id"


def test_duplicate_option_ids_are_rejected() -> None:
    options = (
        OptionDraft("a", "b", option_id="x"),
        OptionDraft("c", "d", option_id="y"),
        OptionDraft("e", "f", option_id="x"),
    )
    assert field_of([QuestionDraft(prompt="p", options=options)]) == "questions[0].options"


def test_an_explicit_option_id_colliding_with_an_assigned_one_is_rejected() -> None:
    options = (OptionDraft("a", "b", option_id="q1_opt2"), OptionDraft("c", "d"))
    assert field_of([QuestionDraft(prompt="p", options=options)]) == "questions[0].options"


def test_the_same_option_id_on_different_questions_is_fine() -> None:
    options = (OptionDraft("a", "b", option_id="yes"), OptionDraft("c", "d", option_id="no"))
    validate_questions([QuestionDraft("p1", options), QuestionDraft("p2", options)])


@settings(max_examples=30)
@given(question_sets(), st.data())
def test_same_questions_ignores_ids_and_titles(
    questions: tuple[Question, ...], data: st.DataObject
) -> None:
    renamed = tuple(
        Question(
            id=data.draw(labels(max_size=5)),
            prompt=q.prompt,
            title=data.draw(labels(max_size=5)),
            options=q.options,
        )
        for q in questions
    )
    assert same_questions(questions, renamed) is True


def test_same_questions_compares_prompts_options_and_length() -> None:
    a = Question(id="q1", prompt="p", options=(Option("o", "L", "D"),))
    assert same_questions([a], [a]) is True
    assert same_questions([a], [Question(id="q1", prompt="other", options=a.options)]) is False
    assert (
        same_questions([a], [Question(id="q1", prompt="p", options=(Option("o", "L", "X"),))])
        is False
    )
    assert (
        same_questions([a], [Question(id="q1", prompt="p", options=(Option("z", "L", "D"),))])
        is False
    )
    assert same_questions([a], [a, a]) is False
    assert same_questions([], []) is True
