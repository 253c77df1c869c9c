"""``clarion users link-slack|unlink-slack|slack-links`` (issue #18): links are stored in the
server's database and read by the server's own store; bad input is refused naming it."""

from __future__ import annotations

import json

import pytest

from clarion.app.root.compose import Clarion
from tests.integration.cli.support import run_cli


def test_linking_listing_and_unlinking_a_slack_account(
    clarion: Clarion, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    alice = clarion.authentication.create_user("alice")
    db = ("--database-url", database_url)
    code, out, _ = run_cli(capsys, "users", "link-slack", alice.id, "U0ALICE", *db)
    assert (code, out.strip()) == (0, f"slack U0ALICE answers as {alice.id}")
    store = clarion.storage.notifications
    assert store is not None
    link = store.chat_user("slack", "U0ALICE")
    assert link is not None
    assert link.user_id == alice.id
    code, out, _ = run_cli(capsys, "users", "slack-links", "--json", *db)
    assert [(row["slack_user_id"], row["user_id"]) for row in json.loads(out)] == [
        ("U0ALICE", alice.id)
    ]
    code, out, _ = run_cli(capsys, "users", "unlink-slack", "U0ALICE", *db)
    assert (code, out.strip()) == (0, "unlinked U0ALICE")
    code, out, _ = run_cli(capsys, "users", "unlink-slack", "U0ALICE", *db)
    assert (code, out.strip()) == (1, "U0ALICE was not linked")
    assert store.chat_user("slack", "U0ALICE") is None


def test_bad_input_is_refused_naming_it(
    clarion: Clarion, database_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    db = ("--database-url", database_url)
    code, _, err = run_cli(capsys, "users", "link-slack", "no-such-user", "U0ALICE", *db)
    assert code != 0
    assert "no active user 'no-such-user'" in err
    alice = clarion.authentication.create_user("alice")
    code, _, err = run_cli(capsys, "users", "link-slack", alice.id, "alice", *db)
    assert code != 0
    assert "not a Slack user id: 'alice'" in err
    store = clarion.storage.notifications
    assert store is not None
    assert store.chat_user_links("slack") == ()
