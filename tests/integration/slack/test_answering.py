"""Answering from Slack end to end (issue #18), on SQLite and PostgreSQL: the routed channel and
direct message each get an interactive message; a signed button click answers through the one
resolver as the Slack surface and the waiting agent receives that answer in the same call (R7);
every message is then updated in place to the final state; a second click by someone else gets
the winner's answer (R2). Refused requests — bad signature, stale timestamp, replay, an unlinked
account, a user who cannot see the workspace — change nothing."""

from __future__ import annotations

import time

import anyio
import pytest
from slack_sdk.signature import SignatureVerifier

from clarion.domain.resolved_by import Surface
from tests.integration.rest.harness import ok
from tests.integration.slack.support import (
    PUBLIC_URL,
    SECRET,
    SlackWorld,
    final_header,
    has_buttons,
    text_of,
)

pytestmark = pytest.mark.anyio


async def test_a_click_answers_the_waiting_agent_and_every_message_shows_the_outcome(
    world: SlackWorld,
) -> None:
    """#18, R7, R2: post → click → the blocked wait returns the answer → messages updated."""
    pending_id = await world.ask()
    channel, direct = await world.posted(pending_id, 2)
    assert {channel.channel, direct.channel} == {"CCLARION", "DUBOB"}
    shown = text_of(channel)
    for part in ("Choice 1", "Choice 2", "Question 1?"):
        assert part in shown
    assert "Deploying &lt;the&gt; release &amp; more" in shown  # mrkdwn escaped
    assert f"{PUBLIC_URL}/#{pending_id}" in shown
    assert has_buttons(channel)

    # Bob's client still shows the buttons when he clicks later (built before the update).
    late_click, late_name = world.click_payload("UBOB", direct, "clarion_option_0")
    result: dict[str, object] = {}

    async def wait() -> None:
        response = await world.http.get(
            f"/api/v1/clarification/{pending_id}/wait", headers=world.people["alice"].headers
        )
        result.update(ok(response))

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(wait)
        await anyio.sleep(0.2)  # the wait is live before the click
        started = time.monotonic()
        name = await world.click("UALICE", channel, "clarion_option_1")
        acked_in = time.monotonic() - started
    assert result["answers"] == [{"question_id": "q1", "selected_options": ["q1_opt2"]}]
    assert (await world.reply(name)).startswith("Answered.")
    resolved_by = world.resolved_by(pending_id)
    assert resolved_by is not None
    assert (resolved_by.surface, resolved_by.identity_id) == (
        Surface.SLACK,
        world.people["alice"].user_id,
    )
    await world.fake.wait_for(
        lambda: all(m.updates for m in world.messages_of(pending_id)), "both messages updated"
    )
    for message in world.messages_of(pending_id):
        assert final_header(message) == "Answered"
        assert not has_buttons(message)
        assert "alice via Slack" in text_of(message)
        assert "Choice 2" in text_of(message)
    print(f"slack click acknowledged in {acked_in * 1000:.0f} ms")

    # A second click, by bob on his direct message, gets the winner's answer (R2).
    before = world.stored(pending_id)
    assert (await world.send(*world.signed(late_click))).status_code == 200
    reply = await world.reply(late_name)
    assert reply.startswith("Already answered by alice via Slack")
    assert "Choice 2" in reply
    assert world.stored(pending_id) == before


async def test_refused_requests_change_nothing(world: SlackWorld) -> None:
    """#18: bad signature, stale timestamp, replay → 401; an unlinked account and a user who
    cannot see the workspace get an ephemeral explanation; the bundle stays as it was."""
    pending_id = await world.ask(task_id=world.private_task)
    (message,) = await world.posted(pending_id, 1)
    assert message.channel == "CPRIVATE"
    before = world.stored(pending_id)

    payload, name = world.click_payload("UALICE", message, "clarion_option_0")
    body, headers = world.signed(payload, secret="not-the-secret")
    assert (await world.send(body, headers)).status_code == 401
    body, headers = world.signed(payload, timestamp=int(time.time()) - 6 * 60)
    assert (await world.send(body, headers)).status_code == 401
    body, headers = world.signed(payload)
    tampered = body.replace(b"clarion_option_0", b"clarion_option_1")
    assert (await world.send(tampered, headers)).status_code == 401
    unsigned = {"Content-Type": "application/x-www-form-urlencoded"}
    assert (await world.send(body, unsigned)).status_code == 401

    # An unlinked Slack account: acknowledged, told why, nothing recorded.
    stranger, stranger_reply = world.click_payload("UNOBODY", message, "clarion_option_0")
    accepted = world.signed(stranger)
    assert (await world.send(*accepted)).status_code == 200
    assert "not linked to a Clarion user" in await world.reply(stranger_reply)
    assert "UNOBODY" in await world.reply(stranger_reply)
    # The same signed request again is a replay.
    assert (await world.send(*accepted)).status_code == 401

    # Carol is linked but may not see alice's private workspace: refused like a foreign id.
    foreign, foreign_reply = world.click_payload("UCAROL", message, "clarion_option_0")
    assert (await world.send(*world.signed(foreign))).status_code == 200
    assert "not available to you" in await world.reply(foreign_reply)
    # ... and may not open the form either.
    modal, modal_reply = world.click_payload("UCAROL", message, "clarion_modal")
    assert (await world.send(*world.signed(modal))).status_code == 200
    assert "not available to you" in await world.reply(modal_reply)

    assert world.fake.responses(name) == []
    assert world.fake.of("views.open") == []
    assert world.stored(pending_id) == before
    assert world.fake.of("chat.update") == []
    # Alice, who may, still can.
    assert (await world.send(*world.signed(payload))).status_code == 200
    assert (await world.reply(name)).startswith("Answered.")


async def test_the_interaction_endpoint_takes_forms_only_and_is_outside_the_api(
    world: SlackWorld,
) -> None:
    """#18: the HTTP gate admits Slack's form body on this path and nothing else (415 for
    JSON, as elsewhere it refuses forms); a foreign Origin is still 403; no bearer is read."""
    body, headers = world.signed({"type": "block_actions", "actions": []})
    as_json = {**headers, "Content-Type": "application/json"}
    assert (await world.send(body, as_json)).status_code == 415
    foreign = {**headers, "Origin": "https://evil.example"}
    assert (await world.send(body, foreign)).status_code == 403
    bearer = {**headers, "Authorization": "Bearer not-a-token"}
    assert (await world.send(body, bearer)).status_code == 200
    odd, odd_headers = world.signed({"type": "shortcut"})
    assert (await world.send(odd, odd_headers)).status_code == 200
    garbage = b"payload=not-json"
    stamp = odd_headers["X-Slack-Request-Timestamp"]
    signature = SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=garbage)
    assert signature is not None
    signed_garbage = {**odd_headers, "X-Slack-Signature": signature}
    assert (await world.send(garbage, signed_garbage)).status_code == 400
