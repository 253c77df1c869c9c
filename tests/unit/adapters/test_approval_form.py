"""An approval request offered in the asking agent's own client (issue #33): the elicitation
form is a required Approve/Deny choice and an optional comment, the action verbatim in the
message; a submitted form is the decision with its comment."""

from __future__ import annotations

import pytest

from clarion.adapters.approval_display import shown_approval
from clarion.adapters.mcp.form import (
    approval_outcome,
    approval_schema,
    form_message,
    form_outcome,
    form_schema,
)
from clarion.domain.approvals import Action, ApprovalTerms, approval_question
from clarion.domain.errors import InvalidOutcome
from clarion.domain.model import Answer, Outcome

QUESTION = approval_question(
    ApprovalTerms(
        action=Action("shell", {"command": "rm -rf build/"}),
        reason="Clean <the> build & release.",
        required_approvals=2,
    )
)


# -- elicitation ----------------------------------------------------------------------------


def test_the_elicitation_form_of_an_approval_is_a_decision_and_a_comment() -> None:
    schema = form_schema((QUESTION,))
    shown = shown_approval(QUESTION)
    assert shown is not None
    assert schema == approval_schema(QUESTION, shown)
    assert schema["required"] == ["decision"]
    decision = schema["properties"]["decision"]
    assert decision["type"] == "string"
    assert decision["oneOf"] == [
        {"const": "approve", "title": "Approve"},
        {"const": "deny", "title": "Deny"},
    ]
    assert schema["properties"]["comment"]["maxLength"] == 2000
    assert set(schema["properties"]) == {"decision", "comment"}
    message = form_message((QUESTION,), "context from the agent")
    assert "Action: shell\nArguments:\n" in message
    assert "context from the agent" in message
    assert "Clean <the> build & release." in message


@pytest.mark.parametrize(
    ("content", "outcome"),
    [
        ({"decision": "approve"}, Outcome.answer(Answer("decision", ("approve",), ""))),
        (
            {"decision": "deny", "comment": "no"},
            Outcome.answer(Answer("decision", ("deny",), "no")),
        ),
    ],
)
def test_a_submitted_approval_form_is_the_decision_with_its_comment(
    content: dict[str, object], outcome: Outcome
) -> None:
    assert form_outcome((QUESTION,), content) == outcome
    assert approval_outcome(content) == outcome


@pytest.mark.parametrize(
    ("content", "field"),
    [
        ({}, "decision"),
        ({"decision": "maybe"}, "decision"),
        ({"decision": ["approve"]}, "decision"),
        ({"decision": "approve", "comment": 3}, "comment"),
    ],
)
def test_a_bad_approval_form_is_refused_naming_the_field(
    content: dict[str, object], field: str
) -> None:
    with pytest.raises(InvalidOutcome) as refused:
        form_outcome((QUESTION,), content)
    assert refused.value.field == field
