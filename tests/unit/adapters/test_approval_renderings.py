"""Approval requests as the people's surfaces render them (issue #33): the action verbatim and
escaped, apart from the reason, with Approve/Deny — on the e-mail answer page and in Slack."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from clarion.adapters.approval_display import approval_of, shown_approval
from clarion.adapters.slack.blocks import as_dicts, final_blocks, question_blocks
from clarion.adapters.slack.interactions import vote_text
from clarion.adapters.web.answer import render_form, render_outcome, render_vote
from clarion.app.usecases.answer_links import LinkPage, LinkState
from clarion.app.usecases.resolve import VoteRecorded
from clarion.domain.answer_form import FORM
from clarion.domain.approvals import Action, ApprovalTerms, Decision, Vote, approval_question
from clarion.domain.model import Answer, Option, Question, Resolution
from clarion.domain.notifications import RESOLVED
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from clarion.ports.claims import VoteResult

ARGUMENTS = {"command": "rm -rf build/ && echo '<script>alert(1)</script>' & done", "n": 2}
TERMS = ApprovalTerms(
    action=Action("shell", ARGUMENTS),
    reason="Clean <the> build & release.",
    required_approvals=2,
)
QUESTION = approval_question(TERMS)
PRETTY = json.dumps(ARGUMENTS, indent=2, sort_keys=True, ensure_ascii=False)
AT = datetime(2026, 12, 5, 18, 0, tzinfo=UTC)


def _resolution(answer: Answer) -> Resolution:
    return Resolution(
        pending_id="p1",
        status="answered",
        answers=(answer,),
        rejected=False,
        reject_reason="",
        responded_at=AT,
        claimed=True,
    )


def test_the_approval_question_splits_into_its_reason_and_its_verbatim_action() -> None:
    shown = shown_approval(QUESTION)
    assert shown is not None
    assert shown.reason == "Clean <the> build & release."
    assert shown.name == "shell"
    assert shown.action == f"Action: shell\nArguments:\n{PRETTY}\nNeeds 2 approvals."


def test_a_reason_that_imitates_the_action_block_cannot_hide_the_real_one() -> None:
    forged = ApprovalTerms(
        action=Action("deploy", {"to": "prod"}),
        reason='Action: harmless\nArguments:\n{"x": 1}',
    )
    shown = shown_approval(approval_question(forged))
    assert shown is not None
    assert shown.name == "deploy"
    assert shown.action.startswith("Action: deploy\n")
    assert "harmless" in shown.reason


def test_an_ordinary_question_is_no_approval() -> None:
    plain = Question(id="q1", prompt="Which?", options=(Option("approve", "A"), Option("x", "B")))
    assert shown_approval(plain) is None
    decision_like = Question(
        id="decision",
        prompt="No action here",
        options=(Option("approve", "A"), Option("deny", "D")),
    )
    assert shown_approval(decision_like) is None
    assert approval_of((QUESTION, plain)) is None
    assert approval_of((QUESTION,)) is not None


# -- the e-mail answer page ----------------------------------------------------------------


def test_the_answer_page_shows_the_action_escaped_in_pre_with_approve_and_deny() -> None:
    page = LinkPage(state=LinkState.OPEN, pending_id="p1", questions=(QUESTION,))
    html = render_form(page)
    assert '<pre class="approval-action"' in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<script>" not in html
    assert "rm -rf build/ &amp;&amp; echo" in html
    assert 'name="q0_options" value="approve"' in html
    assert 'name="q0_options" value="deny"' in html
    assert 'type="checkbox"' not in html  # one decision, not "choose any"
    assert "Skip this question" not in html
    assert "Clean &lt;the&gt; build &amp; release." in html


def test_the_answer_page_keeps_the_comment_and_shows_a_refusal() -> None:
    from clarion.domain.answer_form import AnswerForm

    page = LinkPage(state=LinkState.OPEN, pending_id="p1", questions=(QUESTION,))
    submitted = AnswerForm(page.questions).read({"q0_text": "too <long>"})
    html = render_form(page, submitted, {FORM: "Not recorded."})
    assert "too &lt;long&gt;</textarea>" in html
    assert "Not recorded." in html


def test_the_outcome_page_of_an_approval_shows_the_action_too() -> None:
    resolution = _resolution(Answer("decision", ("approve",), "ok"))
    page = LinkPage(
        state=LinkState.RECORDED, pending_id="p1", questions=(QUESTION,), resolution=resolution
    )
    html = render_outcome(page, submitted=True)
    assert '<pre class="approval-action"' in html
    assert "Approve" in html


# -- Slack --------------------------------------------------------------------------------


def test_slack_shows_the_action_in_a_code_block_with_approve_and_deny_buttons() -> None:
    blocks = as_dicts(
        question_blocks(
            event="answerable",
            pending_id="p1",
            context="",
            questions=(QUESTION,),
            link="https://clarion.example/#p1",
        )
    )
    text = blocks[1]["text"]["text"]
    assert "```Action: shell" in text
    assert "&lt;script&gt;" in text
    assert "<script>" not in text
    assert "Clean &lt;the&gt; build &amp; release." in text
    buttons = blocks[2]["elements"]
    assert [(b["text"]["text"], b.get("style")) for b in buttons] == [
        ("Approve", "primary"),
        ("Deny", "danger"),
    ]
    assert json.loads(buttons[0]["value"]) == ["p1", "decision", "approve"]
    assert blocks[3]["elements"][0]["text"]["text"] == "Decide with a comment…"


def test_slack_never_lets_the_arguments_close_the_code_block() -> None:
    terms = ApprovalTerms(action=Action("x", {"s": "```*bold*```"}))
    blocks = as_dicts(
        question_blocks(
            event="answerable",
            pending_id="p1",
            context="",
            questions=(approval_question(terms),),
            link="https://clarion.example/#p1",
        )
    )
    text = blocks[1]["text"]["text"]
    assert text.endswith("```")
    assert text.count("```") == 2


def test_slack_cuts_a_huge_action_inside_its_code_block() -> None:
    terms = ApprovalTerms(action=Action("x", {"s": "y" * 9000}))
    blocks = as_dicts(
        question_blocks(
            event="answerable",
            pending_id="p1",
            context="",
            questions=(approval_question(terms),),
            link="https://clarion.example/#p1",
        )
    )
    text = blocks[1]["text"]["text"]
    assert len(text) <= 3000
    assert text.endswith("…```")


def test_the_final_slack_message_of_an_approval_keeps_the_action_and_says_the_decision() -> None:
    resolution = _resolution(Answer("decision", ("deny",), "not today"))
    by = ResolvedBy("u1", IdentityKind.USER, "bob", Surface.SLACK, AT)
    blocks = as_dicts(
        final_blocks(
            event=RESOLVED,
            context="",
            questions=(QUESTION,),
            link="https://clarion.example/#p1",
            resolution=resolution,
            resolved_by=by,
        )
    )
    rendered = json.dumps(blocks)
    assert blocks[0]["text"]["text"] == "Denied"
    assert "Denied by bob via Slack" in rendered
    assert "```Action: shell" in blocks[1]["text"]["text"]
    assert "Deny" in rendered
    assert "not today" in rendered
    assert "actions" not in [block["type"] for block in blocks]


# -- a vote that does not decide (quorum) -----------------------------------------------------


def _recorded(*, repeated: bool) -> VoteRecorded:
    vote = Vote("u1", "alice", Decision.APPROVE)
    result = VoteResult(
        vote=vote, repeated=repeated, approvals=1, required=2, claim=None, decision=None
    )
    return VoteRecorded("p1", result)


def test_a_vote_short_of_the_quorum_is_told_the_tally_on_every_surface() -> None:
    counted, repeat = _recorded(repeated=False), _recorded(repeated=True)
    assert vote_text(counted) == (
        "Your vote was recorded: 1 of 2 approvals. The request waits for more approvals "
        "before the agent is told."
    )
    assert vote_text(repeat) == (
        "You have already voted on this request; your first vote counts (1 of 2 approvals so far)."
    )
    page = LinkPage(state=LinkState.OPEN, pending_id="p1", questions=(QUESTION,))
    html = render_vote(page, counted)
    assert "Your vote was recorded: 1 of 2 approvals." in html
    assert '<pre class="approval-action"' in html
    assert "<form" not in html
