"""The Slack modal (issue #18): a bundle that is not one question with options opens a form
with checkboxes and 2,000-code-point text areas; a submission is validated before it is
answered (field errors come back as ``response_action: errors`` and change nothing), then
answered through the one resolver; skipping with a reason shows the reason. Expired and
cancelled bundles update their messages too. N6–N8b, R2."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from tests.integration.rest.harness import ok
from tests.integration.slack.fake_slack import FakeSlack
from tests.integration.slack.support import (
    SlackWorld,
    final_header,
    has_buttons,
    slack_world,
    text_of,
)

pytestmark = pytest.mark.anyio


def _values(
    *,
    options: dict[int, list[str]] | None = None,
    texts: dict[int, str] | None = None,
    skip: bool = False,
    reason: str = "",
) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for index, chosen in (options or {}).items():
        values[f"q{index}_options"] = {
            "options": {
                "type": "checkboxes",
                "selected_options": [{"value": option} for option in chosen],
            }
        }
    for index, text in (texts or {}).items():
        values[f"q{index}_text"] = {"text": {"type": "plain_text_input", "value": text}}
    if skip:
        values["skip"] = {"skip": {"type": "checkboxes", "selected_options": [{"value": "skip"}]}}
    values["reason"] = {"reason": {"type": "plain_text_input", "value": reason or None}}
    return values


async def _open_modal(world: SlackWorld, pending_id: str) -> dict[str, Any]:
    message, _ = await world.posted(pending_id, 2)
    assert not any(
        element.get("action_id", "").startswith("clarion_option")
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block["elements"]
    ), "several questions: no option buttons, the form instead"
    name = await world.click("UALICE", message, "clarion_modal")
    await world.fake.wait_for(lambda: bool(world.fake.of("views.open")), "views.open")
    assert world.fake.responses(name) == []
    opened = world.fake.of("views.open")[-1]
    assert opened["trigger_id"] == f"trigger-{world.clicks}"
    view = opened["view"]
    assert isinstance(view, dict)
    return view


async def test_a_modal_answers_multi_select_and_free_text_within_the_limit(
    world: SlackWorld,
) -> None:
    """#18: checkboxes + text areas; 2,001 code points refused per field, 2,000 accepted."""
    pending_id = await world.ask(count=2, options=3)
    view = await _open_modal(world, pending_id)
    inputs = {
        block["block_id"]: block["element"] for block in view["blocks"] if block["type"] == "input"
    }
    assert inputs["q0_options"]["type"] == "checkboxes"
    assert [o["value"] for o in inputs["q0_options"]["options"]] == [
        "q1_opt1",
        "q1_opt2",
        "q1_opt3",
    ]
    assert inputs["q1_text"] == {
        "type": "plain_text_input",
        "action_id": "text",
        "multiline": True,
        "max_length": 2000,
    }
    assert json.loads(view["private_metadata"])["pending_id"] == pending_id
    before = world.stored(pending_id)

    too_long = "é" * 2001  # code points, not bytes
    refused = await world.send(
        *world.signed(
            world.submission(
                "UALICE",
                view,
                _values(options={0: ["q1_opt1", "q1_opt3"]}, texts={1: too_long}),
            )
        )
    )
    assert ok(refused) == {
        "response_action": "errors",
        "errors": {"q1_text": "At most 2,000 characters, please (this has 2,001)."},
    }
    unknown = await world.send(
        *world.signed(world.submission("UALICE", view, _values(options={0: ["q9_opt9"]})))
    )
    assert ok(unknown)["response_action"] == "errors"
    assert "q0_options" in ok(unknown)["errors"]
    nothing = await world.send(*world.signed(world.submission("UALICE", view, _values())))
    assert "Choose an option" in ok(nothing)["errors"]["q0_text"]
    assert world.stored(pending_id) == before

    result: dict[str, Any] = {}

    async def wait() -> None:
        response = await world.http.get(
            f"/api/v1/clarification/{pending_id}/wait", headers=world.people["alice"].headers
        )
        result.update(ok(response))

    text = "😀" * 2000
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait)
        await anyio.sleep(0.2)
        accepted = await world.send(
            *world.signed(
                world.submission(
                    "UALICE",
                    view,
                    _values(options={0: ["q1_opt1", "q1_opt3"]}, texts={1: text}),
                )
            )
        )
        assert ok(accepted) == {"response_action": "clear"}
    assert result["answers"] == [
        {"question_id": "q1", "selected_options": ["q1_opt1", "q1_opt3"]},
        {"question_id": "q2", "custom_text": text},
    ]
    await world.fake.wait_for(lambda: bool(world.fake.of("chat.postEphemeral")), "ephemeral")
    (ephemeral,) = world.fake.of("chat.postEphemeral")
    assert ephemeral["user"] == "UALICE"
    assert ephemeral["text"].startswith("Answered.")
    await world.fake.wait_for(
        lambda: all(m.updates for m in world.messages_of(pending_id)), "messages updated"
    )
    for message in world.messages_of(pending_id):
        assert final_header(message) == "Answered"
        assert "Choice 1, Choice 3" in text_of(message)
        assert not has_buttons(message)


async def test_skipping_with_a_reason_reaches_the_agent_and_an_overlong_reason_is_refused(
    world: SlackWorld,
) -> None:
    """#18, R9, R2b: the reason goes to the agent; the messages show the skip (the reason is
    never stored, so they cannot show it)."""
    pending_id = await world.ask(count=2)
    view = await _open_modal(world, pending_id)
    long_reason = await world.send(
        *world.signed(world.submission("UALICE", view, _values(skip=True, reason="x" * 2001)))
    )
    assert list(ok(long_reason)["errors"]) == ["reason"]
    skipped = await world.send(
        *world.signed(world.submission("UALICE", view, _values(skip=True, reason="Not <mine>")))
    )
    assert ok(skipped) == {"response_action": "clear"}
    await world.fake.wait_for(lambda: bool(world.fake.of("chat.postEphemeral")), "ephemeral")
    (ephemeral,) = world.fake.of("chat.postEphemeral")
    assert ephemeral["text"].startswith("You skipped this.")
    assert "Reason: Not &lt;mine&gt;" in ephemeral["text"]
    await world.fake.wait_for(
        lambda: all(m.updates for m in world.messages_of(pending_id)), "messages updated"
    )
    for message in world.messages_of(pending_id):
        assert final_header(message) == "Skipped"
        assert "Skipped by alice via Slack" in text_of(message)
        assert message.text.startswith("Skipped: ")
        assert "Not &lt;mine&gt;" not in text_of(message)


async def test_expired_and_cancelled_bundles_update_their_messages(world: SlackWorld) -> None:
    expired = await world.ask()
    await world.posted(expired, 2)
    bundle = world.clarion.storage.claims.load_bundle(expired)
    assert bundle is not None
    await world.clarion.services.lifecycle.expire_bundle(bundle)
    await world.fake.wait_for(
        lambda: all(m.updates for m in world.messages_of(expired)), "expired messages updated"
    )
    for message in world.messages_of(expired):
        assert final_header(message) == "Expired"
        assert not has_buttons(message)
        assert "Nobody answered" in text_of(message)


async def test_with_authentication_disabled_anyone_in_slack_may_answer(
    fake: FakeSlack, tmp_path: Any
) -> None:
    """#18: as on every other surface, auth disabled means one identity for everybody."""
    async with slack_world(f"sqlite:///{tmp_path / 'open.db'}", fake, auth_enabled=False) as world:
        pending_id = await world.ask()
        message, _ = await world.posted(pending_id, 2)
        name = await world.click("USOMEONE", message, "clarion_option_0")
        assert (await world.reply(name)).startswith("Answered.")
        resolved_by = world.resolved_by(pending_id)
        assert resolved_by is not None
        assert resolved_by.display_name == "anonymous (auth disabled)"


async def test_a_late_submission_is_validated_first_then_gets_the_winner(
    world: SlackWorld,
) -> None:
    """#18, R2c, R2: after someone answered, an invalid submission still gets its validation
    message; a valid one is told who answered and what, and nothing changes."""
    pending_id = await world.ask(count=2)
    view = await _open_modal(world, pending_id)
    answered = await world.http.post(
        f"/api/v1/clarification/{pending_id}/respond",
        json={"rejected": True},
        headers=world.people["carol"].headers,
    )
    assert ok(answered)["claimed"] is True
    before = world.stored(pending_id)
    invalid = await world.send(
        *world.signed(world.submission("UALICE", view, _values(options={1: ["q9_opt9"]})))
    )
    assert "q1_options" in ok(invalid)["errors"]
    late = await world.send(
        *world.signed(world.submission("UALICE", view, _values(options={0: ["q1_opt1"]})))
    )
    (message,) = ok(late)["errors"].values()
    assert message.startswith("Already answered by carol via the REST API")
    assert world.stored(pending_id) == before
