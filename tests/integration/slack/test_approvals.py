"""An approval request in Slack (issue #33): the message shows the action verbatim in a code
block with Approve and Deny buttons; a click is the person's vote through the one resolver —
short of the quorum the clicker is told the tally, the deciding click answers, and every
message ends as "Approved" with who decided."""

from __future__ import annotations

import pytest

from clarion.domain.approvals import Action, ApprovalTerms
from clarion.domain.model import Identity
from tests.integration.slack.support import SlackWorld, final_header, has_buttons, text_of

pytestmark = pytest.mark.anyio


async def test_two_clicks_reach_the_quorum_and_every_message_says_approved(
    world: SlackWorld,
) -> None:
    alice = world.people["alice"]
    session_id = await world.session()
    terms = ApprovalTerms(
        action=Action("deploy", {"to": "production <eu>"}),
        reason="Ship v2.3",
        required_approvals=2,
    )
    view = await world.clarion.services.approvals.create(
        Identity.user(alice.user_id), session_id=session_id, terms=terms
    )
    pending_id = view.pending_id
    channel, _direct = await world.posted(pending_id, 2)
    shown = text_of(channel)
    assert "```Action: deploy" in shown
    assert "production &lt;eu&gt;" in shown
    assert "Ship v2.3" in shown

    first = await world.click("UALICE", channel, "clarion_option_0")
    assert (await world.reply(first)).startswith("Your vote was recorded: 1 of 2 approvals.")
    repeat = await world.click("UALICE", channel, "clarion_option_1")  # Deny: a repeat
    assert (await world.reply(repeat)).startswith("You have already voted on this request")
    second = await world.click("UBOB", channel, "clarion_option_0")
    assert (await world.reply(second)).startswith("Answered.")

    decided = await world.clarion.services.approvals.view(Identity.internal(), pending_id)
    assert decided.status == "approved"
    assert [vote.display_name for vote in decided.votes] == ["alice", "bob"]
    await world.fake.wait_for(
        lambda: all(m.updates for m in world.messages_of(pending_id)), "both messages updated"
    )
    for message in world.messages_of(pending_id):
        assert final_header(message) == "Approved"
        assert not has_buttons(message)
        assert "Approved by bob via Slack" in text_of(message)
