"""An approval request behind an e-mail answer link (issue #33), on SQLite and PostgreSQL: the
page shows the action verbatim with Approve and Deny; a click is the recipient's vote through
the one resolver — short of the quorum the page says the tally, the deciding vote answers."""

from __future__ import annotations

import pytest

from tests.integration.app.test_answer_links import (  # noqa: F401 - the fixtures by name
    World,
    fixture_database_url,
    fixture_world,
    path_of,
)
from tests.integration.rest.harness import ok

pytestmark = pytest.mark.anyio

ACTION = {"name": "deploy", "arguments": {"to": "production <eu>"}}
FORM = {"Content-Type": "application/x-www-form-urlencoded"}


async def test_two_links_reach_the_quorum_and_the_first_is_told_the_tally(world: World) -> None:
    body = {"session_id": world.shared_session, "action": ACTION, "required_approvals": 2}
    view = ok(
        await world.client.post(
            "/api/v1/approvals/request", json=body, headers=world.alice_headers
        ),
        201,
    )
    pending_id = view["pending_id"]
    bob_link = path_of(world.links.link_for(world.bob, pending_id))
    carol_link = path_of(world.links.link_for(world.carol, pending_id))

    page = await world.client.get(bob_link)
    assert page.status_code == 200
    assert '<pre class="approval-action"' in page.text
    assert "production &lt;eu&gt;" in page.text
    assert 'name="q0_options" value="approve"' in page.text

    first = await world.client.post(
        bob_link, content="q0_options=approve&q0_text=fine", headers=FORM
    )
    assert first.status_code == 200
    assert "Your vote was recorded: 1 of 2 approvals." in first.text
    second = await world.client.post(carol_link, content="q0_options=approve", headers=FORM)
    assert second.status_code == 200
    assert "Your answer was sent to the agent." in second.text

    decided = ok(
        await world.client.get(f"/api/v1/approvals/{pending_id}", headers=world.alice_headers)
    )
    assert decided["status"] == "approved"
    assert [(v["display_name"], v["surface"]) for v in decided["votes"]] == [
        ("bob", "email"),
        ("carol", "email"),
    ]
    assert decided["votes"][0]["comment"] == "fine"
