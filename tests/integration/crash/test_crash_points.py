"""Issue #13: a real ``clarion serve`` killed with SIGKILL right after each step of the answer
path (``CLARION_TEST_CRASH_AFTER``), then restarted on the same SQLite file. For every point the
bundle ends either answerable, or answered with exactly one resume that carries the winning
answer — through the outbox and through the webhook (docs/reliability.md, the crash table)."""

from __future__ import annotations

import signal
from pathlib import Path

import httpx2
import pytest

from tests.integration.crash.serving import (
    answer_body,
    new_bundle,
    pending_ids,
    resumes,
    serving,
    start_ready,
    webhook_receiver,
)

# (dispatcher, crash point) → whether the bundle is answerable again after the restart.
CASES = {
    ("outbox", "claim"): True,
    ("outbox", "resume-recorded"): False,
    ("outbox", "resume-accepted"): False,
    ("webhook", "claim"): True,
    ("webhook", "resume-accepted"): True,  # the receiver has it: at-least-once, new key later
    ("webhook", "finalize"): False,
    ("webhook", "restore"): True,  # the receiver refused; the roll-back committed
}


@pytest.mark.parametrize(("dispatcher", "point"), list(CASES))
def test_a_kill_at_each_point_of_the_answer_path_leaves_the_bundle_answerable_or_resumed_once(
    tmp_path: Path, dispatcher: str, point: str
) -> None:
    database_url = f"sqlite:///{tmp_path / 'crash.db'}"
    with webhook_receiver() as receiver:
        # The receiver is on loopback, which must be allowed (issue #29 S4).
        env = (
            {"CLARION_RESUME_WEBHOOK": receiver.url, "CLARION_OUTBOUND_ALLOW": "127.0.0.1"}
            if dispatcher == "webhook"
            else {}
        )
        receiver.status = 500 if point == "restore" else 200
        crashing = start_ready(
            database_url, "crashing", tmp_path, {**env, "CLARION_TEST_CRASH_AFTER": point}
        )
        try:
            with httpx2.Client(timeout=60) as http:
                session_id, pending_id = new_bundle(http, crashing.base_url)
                respond = f"{crashing.base_url}/api/v1/clarification/{pending_id}/respond"
                with pytest.raises(httpx2.TransportError):
                    http.post(respond, json=answer_body(1))
            assert crashing.process.wait(60) == -signal.SIGKILL
        finally:
            crashing.kill()
        assert '"crashpoint.kill"' in crashing.log()
        receiver.status = 200
        before_restart = list(receiver.posts)

        with serving(database_url, "restarted", tmp_path, env) as server:
            base = server.base_url
            respond = f"{base}/api/v1/clarification/{pending_id}/respond"
            with httpx2.Client(timeout=60) as http:
                answerable = pending_id in pending_ids(http, base)
                assert answerable is CASES[dispatcher, point]
                if answerable:
                    assert resumes(http, base, session_id) == []
                    retried = http.post(respond, json=answer_body(2))
                    assert retried.status_code == 200, retried.text
                    assert retried.json()["claimed"] is True
                    winner = ["q1_opt2"]
                else:
                    replay = http.post(respond, json=answer_body(2))
                    assert replay.status_code == 200, replay.text
                    assert replay.json()["claimed"] is False
                    winner = ["q1_opt1"]
                    assert replay.json()["response"]["answers"][0]["selected_options"] == winner
                assert pending_id not in pending_ids(http, base)
                recorded = resumes(http, base, session_id)

    if dispatcher == "outbox":
        [resume] = recorded
        assert resume["metadata"]["pending_id"] == pending_id
        assert resume["metadata"]["answers"][0]["selected_options"] == winner
        assert receiver.posts == []
        return
    assert recorded == []
    accepted = [post for post in receiver.posts if post.status == 200]
    assert accepted, "an answered bundle's resume reached the receiver"
    assert accepted[-1].body["pending_id"] == pending_id
    assert accepted[-1].body["answers"][0]["selected_options"] == winner
    keys = [post.headers["Idempotency-Key"] for post in accepted]
    assert len(set(keys)) == len(keys)  # each accepted POST belongs to a different claim
    if answerable:
        # Whatever the receiver got before the crash belongs to a claim that was rolled back.
        assert all(post.headers["Idempotency-Key"] != keys[-1] for post in before_restart)
