"""The Slack pieces on their own (issue #18): channel targets, settings, the replay guard, the
modal's parsing and limits, and the Block Kit messages (escaping, buttons, final state)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from slack_sdk.models.blocks import InputBlock

from clarion.adapters.slack.blocks import (
    final_blocks,
    has_option_buttons,
    modal_view,
    parse_option_value,
    question_blocks,
)
from clarion.adapters.slack.interactions import ReplayGuard, error_blocks, modal_outcome
from clarion.app.root.settings import Settings
from clarion.domain.answer_form import NOTHING_CHOSEN, AnswerForm, FormError
from clarion.domain.errors import ValidationError
from clarion.domain.model import Answer, Option, Outcome, Question, Resolution
from clarion.domain.notifications import EXPIRED_EVENT, RESOLVED, parse_channel, slack_conversation
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface

QUESTION = Question(
    id="q1",
    title="Database",
    prompt="Which <db> & why?",
    options=(Option("q1_opt1", "SQLite", "Embedded"), Option("q1_opt2", "PostgreSQL")),
)
OTHER = Question(id="q2", prompt="Anything else?")


@pytest.mark.parametrize(
    ("text", "conversation"),
    [("slack:#deploys", "#deploys"), ("slack:C0123ABC", "C0123ABC"), ("slack:@U0123AB", "U0123AB")],
)
def test_slack_channels_name_a_channel_or_a_user(text: str, conversation: str) -> None:
    channel = parse_channel(text)
    assert channel.kind == "slack"
    assert slack_conversation(channel.target) == conversation


@pytest.mark.parametrize(
    "text", ["slack:", "slack:deploys", "slack:#Deploys", "slack:@alice", "slack:#a b", "slack:c01"]
)
def test_a_bad_slack_target_is_refused_naming_the_forms(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_channel(text)
    assert caught.value.field == "channel"


def test_slack_settings_are_read_from_the_environment() -> None:
    settings = Settings.from_env(
        {
            "CLARION_SLACK_BOT_TOKEN": "xoxb-1",
            "CLARION_SLACK_SIGNING_SECRET": "s3cret",
            "CLARION_SLACK_API_URL": "http://127.0.0.1:9/api",
        }
    )
    assert (settings.slack_bot_token, settings.slack_signing_secret) == ("xoxb-1", "s3cret")
    assert settings.slack_api_url == "http://127.0.0.1:9/api/"
    assert Settings().slack_api_url == "https://slack.com/api/"
    assert "xoxb-1" not in repr(settings)
    assert "s3cret" not in repr(settings)
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"CLARION_SLACK_API_URL": "slack.com/api"})
    assert caught.value.field == "CLARION_SLACK_API_URL"


def test_the_replay_guard_accepts_a_signature_once_within_its_window() -> None:
    now = [1000.0]
    guard = ReplayGuard(window_s=300, limit=3, now=lambda: now[0])
    assert guard.first_use("v0=a")
    assert not guard.first_use("v0=a")
    now[0] += 599
    assert not guard.first_use("v0=a")  # still within twice the window (clock skew both ways)
    now[0] += 2
    assert guard.first_use("v0=a")  # forgotten: its timestamp check fails by now anyway
    for signature in ("v0=b", "v0=c", "v0=d"):
        assert guard.first_use(signature)
    assert guard.first_use("v0=a")  # bounded: the oldest was forgotten first


def test_a_modal_state_becomes_an_outcome_and_overlong_text_is_a_field_error() -> None:
    """#32: the modal's block ids are the answer form's field names; its one parser reads them
    and every over-long text is an error on its own block."""
    form = AnswerForm(
        (Question(id="q1", options=(Option("q1_opt1"), Option("q1_opt2"))), Question(id="q2"))
    )
    values = {
        "q0_options": {"options": {"selected_options": [{"value": "q1_opt2"}]}},
        "q0_text": {"text": {"value": None}},
        "q1_text": {"text": {"value": "ok"}},
    }
    assert modal_outcome(values, form) == Outcome.answer(
        Answer("q1", ("q1_opt2",), ""), Answer("q2", (), "ok")
    )
    values["q1_text"] = {"text": {"value": "ö" * 2001}}
    values["q0_text"] = {"text": {"value": "x" * 2002}}
    with pytest.raises(FormError) as caught:
        modal_outcome(values, form)
    assert error_blocks(caught.value.errors, form) == {
        "q0_text": "At most 2,000 characters, please (this has 2,002).",
        "q1_text": "At most 2,000 characters, please (this has 2,001).",
    }
    skip = {
        "skip": {"skip": {"selected_options": [{"value": "skip"}]}},
        "reason": {"reason": {"value": "later"}},
    }
    assert modal_outcome(skip, form) == Outcome.reject("later")


def test_a_modal_with_nothing_chosen_is_refused_on_the_first_answer_block() -> None:
    """#32: as on the answer page and in the inbox, an empty form is not an answer."""
    form = AnswerForm((Question(id="q1", options=(Option("a"),)),))
    with pytest.raises(FormError) as caught:
        modal_outcome({"q0_text": {"text": {"value": "  "}}}, form)
    assert error_blocks(caught.value.errors, form) == {"q0_text": NOTHING_CHOSEN}


@pytest.mark.parametrize(
    ("field", "block"),
    [
        ("q1_options", "q1_text"),  # the second question shows no options block
        ("q0_options", "q0_options"),
        ("reason", "reason"),
        ("form", "q0_text"),
    ],
)
def test_a_field_error_goes_to_the_block_that_shows_it(field: str, block: str) -> None:
    form = AnswerForm((Question(id="q1", options=(Option("a"),)), Question(id="q2")))
    assert error_blocks({field: "no"}, form) == {block: "no"}


def test_the_modals_input_blocks_are_the_forms_fields() -> None:
    questions = (Question(id="q1", options=(Option("a"),)), Question(id="q2"))
    view = modal_view(pending_id="p", context="", questions=questions, metadata={})
    inputs = [block.block_id for block in view.blocks if isinstance(block, InputBlock)]
    assert inputs == [field.name for field in AnswerForm(questions).fields()]


def test_one_question_with_options_gets_a_button_per_option_and_text_is_escaped() -> None:
    blocks = [
        b.to_dict()
        for b in question_blocks(
            event="answerable",
            pending_id="p-1",
            context="a <b> & c",
            questions=(QUESTION,),
            link="https://c.example/#p-1",
        )
    ]
    text = str(blocks)
    assert "a &lt;b&gt; &amp; c" in text
    assert "Which &lt;db&gt; &amp; why?" in text
    (options,) = [b for b in blocks if b.get("block_id") == "clarion_options"]
    values = [parse_option_value(e["value"]) for e in options["elements"]]
    assert values == [("p-1", "q1", "q1_opt1"), ("p-1", "q1", "q1_opt2")]
    assert has_option_buttons((QUESTION,))
    assert not has_option_buttons((QUESTION, OTHER))
    assert not has_option_buttons((OTHER,))
    assert parse_option_value("[1,2]") is None
    assert parse_option_value("not json") is None


def test_the_modal_offers_checkboxes_and_limited_text_areas() -> None:
    view = modal_view(
        pending_id="p-1", context="", questions=(QUESTION, OTHER), metadata={"channel": "C1"}
    ).to_dict()
    inputs = {b["block_id"]: b["element"] for b in view["blocks"] if b["type"] == "input"}
    assert set(inputs) == {"q0_options", "q0_text", "q1_text", "skip", "reason"}
    assert all(inputs[k]["max_length"] == 2000 for k in ("q0_text", "q1_text", "reason"))


def test_the_final_state_names_the_winner_and_has_no_buttons() -> None:
    resolution = Resolution(
        pending_id="p-1",
        status="answered",
        answers=(Answer("q1", ("q1_opt2",), "because"),),
        rejected=False,
        reject_reason="",
        responded_at=datetime(2026, 1, 1, tzinfo=UTC),
        claimed=True,
    )
    who = ResolvedBy("u-1", IdentityKind.USER, "alice", Surface.INBOX)
    blocks = [
        b.to_dict()
        for b in final_blocks(
            event=RESOLVED,
            context="",
            questions=(QUESTION,),
            link="https://c.example/#p-1",
            resolution=resolution,
            resolved_by=who,
        )
    ]
    text = str(blocks)
    assert blocks[0]["text"]["text"] == "Answered"
    assert "PostgreSQL — “because”" in text
    assert "Answered by alice via the web inbox" in text
    assert all(b["type"] != "actions" for b in blocks)
    expired = final_blocks(
        event=EXPIRED_EVENT,
        context="",
        questions=(QUESTION,),
        link="l",
        resolution=None,
        resolved_by=None,
    )
    assert expired[0].to_dict()["text"]["text"] == "Expired"
