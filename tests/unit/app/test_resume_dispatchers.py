"""Resume dispatchers: outbox, webhook and callable (R7: accepted, or refused → rollback)."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import httpx2
import pytest

from clarion.adapters.memory import InMemoryClaimRepository, InMemoryHostRepository, InMemoryStore
from clarion.adapters.resume import (
    CallableResumeDispatcher,
    OutboxResumeDispatcher,
    WebhookResumeDispatcher,
    is_plain_http_to_another_host,
    webhook_payload,
)
from clarion.adapters.resume.outbox import resume_metadata
from clarion.adapters.system import UuidIds
from clarion.domain.model import ANSWERED, Answer, Option, Question
from clarion.ports.resume import (
    RESUME_MESSAGE_TYPE,
    ResumeDispatcher,
    ResumeRefused,
    ResumeRequest,
)
from clarion.ports.testing import ManualClock

pytestmark = pytest.mark.anyio


def _request(
    session_id: str = "s1", task_id: str = "t1", claimed_ids: tuple[str, ...] = ()
) -> ResumeRequest:
    return ResumeRequest(
        claimed_ids=claimed_ids,
        task_id=task_id,
        session_id=session_id,
        pending_id="p1",
        turn_id="turn-1",
        prompt='You previously asked the user: "Ship?"\nA1: Yes\nPlease continue.',
        answers=(
            Answer(question_id="q1", selected_options=("q1_opt1", "q1_opt2")),
            Answer(question_id="q2", custom_text="soon"),
        ),
        rejected=False,
    )


@attrs.define
class _Outbox:
    host: InMemoryHostRepository
    claims: InMemoryClaimRepository

    def claimed_bundle(self, pending_id: str = "p1") -> tuple[str, str, tuple[str, ...]]:
        """A session with one claimed, undelivered bundle: (task id, session id, claimed ids)."""
        task = self.host.create_task("t")
        session, _ = self.host.create_session(task.id)
        question = Question(
            id="q1", prompt="Ship?", options=(Option("q1_opt1", "Yes"), Option("q1_opt2", "No"))
        )
        self.claims.create_bundle(
            pending_id=pending_id,
            session_id=session.id,
            task_id=task.id,
            questions=[question],
            context="",
        )
        won = self.claims.complete_active_bundle(
            pending_id, ANSWERED, {"q1": Answer(question_id="q1", selected_options=("q1_opt1",))}
        )
        assert won.claimed
        return task.id, session.id, won.claimed_ids


@pytest.fixture(name="outbox")
def fixture_outbox() -> _Outbox:
    store, clock, ids = InMemoryStore(), ManualClock(), UuidIds()
    return _Outbox(
        InMemoryHostRepository(store, clock, ids), InMemoryClaimRepository(store, clock, ids)
    )


async def test_outbox_records_the_resume_as_a_new_turn_with_the_prompt_and_finalizes(
    outbox: _Outbox,
) -> None:
    host = outbox.host
    task_id, session_id, claimed = outbox.claimed_bundle()
    first_turn = host.current_turn(session_id)
    dispatcher: ResumeDispatcher = OutboxResumeDispatcher(outbox.claims)
    finalized = await dispatcher.dispatch(_request(session_id, task_id, claimed))
    assert finalized is not None
    assert [row.id for row in finalized] == list(claimed)
    assert not any(row.delivery_pending for row in finalized)
    turn = host.current_turn(session_id)
    assert turn is not None
    assert first_turn is not None
    assert turn.id != first_turn.id
    [message] = [m for m in host.list_messages(session_id) if m.type == RESUME_MESSAGE_TYPE]
    assert message.turn_id == turn.id
    assert message.author_type == "user"
    assert message.content == _request().prompt
    assert message.metadata["pending_id"] == "p1"
    assert message.metadata["clarification_turn_id"] == "turn-1"
    assert message.metadata["answers"][0]["selected_options"] == ["q1_opt1", "q1_opt2"]


async def test_outbox_refuses_a_resume_for_a_missing_session_or_a_claim_it_does_not_hold(
    outbox: _Outbox,
) -> None:
    task_id, session_id, claimed = outbox.claimed_bundle()
    dispatcher = OutboxResumeDispatcher(outbox.claims)
    with pytest.raises(ResumeRefused):
        await dispatcher.dispatch(_request("missing", task_id, claimed))
    with pytest.raises(ResumeRefused):
        await dispatcher.dispatch(_request(session_id, task_id, ("not-a-claimed-row",)))
    assert not [m for m in outbox.host.list_messages(session_id) if m.type == RESUME_MESSAGE_TYPE]


def test_webhook_payload_carries_every_answer_key() -> None:
    payload = webhook_payload(_request())
    assert set(payload) == {"task_id", "session_id", "pending_id", "prompt", "answers", "rejected"}
    assert payload["answers"] == [
        {"question_id": "q1", "selected_options": ["q1_opt1", "q1_opt2"], "custom_text": ""},
        {"question_id": "q2", "selected_options": [], "custom_text": "soon"},
    ]
    assert payload["rejected"] is False


def test_the_receipt_is_added_to_the_webhook_and_the_outbox_only_when_there_is_one() -> None:
    """Issue #34: additive — a resume without a receipt keeps exactly the keys above."""
    receipt = {"alg": "Ed25519", "kid": "k", "payload": {"request_id": "p"}, "signature": "s"}
    signed = attrs.evolve(_request(), receipt=receipt)
    assert webhook_payload(signed) == webhook_payload(_request()) | {"receipt": receipt}
    assert resume_metadata(signed) == resume_metadata(_request()) | {"receipt": receipt}
    assert "receipt" not in resume_metadata(_request())


async def test_webhook_2xx_accepts_the_resume() -> None:
    seen: list[dict[str, Any]] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(json.loads(request.content))
        return httpx2.Response(202)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        dispatcher: ResumeDispatcher = WebhookResumeDispatcher("http://agent/resume", client=client)
        await dispatcher.dispatch(_request())
    assert seen == [webhook_payload(_request())]


@pytest.mark.parametrize("status", [301, 400, 500, 503])
async def test_webhook_non_2xx_refuses_the_resume(status: int) -> None:
    transport = httpx2.MockTransport(lambda request: httpx2.Response(status))
    async with httpx2.AsyncClient(transport=transport) as client:
        with pytest.raises(ResumeRefused):
            await WebhookResumeDispatcher("http://agent/resume", client=client).dispatch(_request())


async def test_webhook_timeout_refuses_the_resume() -> None:
    def handler(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("too slow", request=request)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        with pytest.raises(ResumeRefused):
            await WebhookResumeDispatcher("http://agent/resume", client=client).dispatch(_request())


async def test_webhook_unreachable_endpoint_refuses_the_resume() -> None:
    dispatcher = WebhookResumeDispatcher("http://127.0.0.1:9/resume", timeout=2)
    with pytest.raises(ResumeRefused):
        await dispatcher.dispatch(_request())


async def test_callable_async_function_accepts_by_returning() -> None:
    received: list[ResumeRequest] = []

    async def resume(request: ResumeRequest) -> None:
        received.append(request)

    await CallableResumeDispatcher(resume).dispatch(_request())
    assert received == [_request()]


async def test_callable_sync_function_runs_off_the_event_loop() -> None:
    loop_thread = threading.get_ident()
    threads: list[int] = []

    def resume(request: ResumeRequest) -> bool:
        threads.append(threading.get_ident())
        return True

    await CallableResumeDispatcher(resume).dispatch(_request())
    assert threads
    assert threads[0] != loop_thread


async def test_callable_that_raises_refuses_the_resume() -> None:
    async def resume(request: ResumeRequest) -> None:
        raise ConnectionError("agent runtime down")

    with pytest.raises(ResumeRefused) as refused:
        await CallableResumeDispatcher(resume).dispatch(_request())
    assert isinstance(refused.value.__cause__, ConnectionError)


async def test_callable_sync_function_that_raises_refuses_the_resume() -> None:
    def resume(request: ResumeRequest) -> None:
        raise ResumeRefused("busy")

    with pytest.raises(ResumeRefused, match="busy"):
        await CallableResumeDispatcher(resume).dispatch(_request())


def _documented_receiver(monkeypatch: pytest.MonkeyPatch, secret: str) -> Any:
    """The receiver shown in docs/operations.md, run as written."""
    text = (Path(__file__).resolve().parents[3] / "docs" / "operations.md").read_text()
    section = text.split("## Receiving webhook resumes", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    assert len(code.strip().splitlines()) <= 16
    monkeypatch.setenv("CLARION_RESUME_WEBHOOK_SECRET", secret)
    namespace: dict[str, Any] = {}
    exec(compile(code, "operations.md", "exec"), namespace)  # our own documented receiver
    return namespace["accept"]


async def _posts(dispatcher_for: Any, *requests: ResumeRequest) -> list[httpx2.Request]:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200)

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(handler)) as client:
        dispatcher = dispatcher_for(client)
        for request in requests:
            await dispatcher.dispatch(request)
    return seen


async def test_webhook_idempotency_key_is_stable_per_claim_and_new_for_a_new_claim() -> None:
    first_claim = attrs.evolve(_request(), claimed_at=datetime(2026, 1, 1, tzinfo=UTC))
    retry = attrs.evolve(first_claim)
    after_rollback = attrs.evolve(first_claim, claimed_at=datetime(2026, 1, 2, tzinfo=UTC))
    posts = await _posts(
        lambda client: WebhookResumeDispatcher("http://agent/resume", client=client),
        first_claim,
        retry,
        after_rollback,
    )
    keys = [post.headers["Idempotency-Key"] for post in posts]
    assert keys[0] == keys[1] == first_claim.idempotency_key
    assert keys[2] != keys[0]
    assert all("Clarion-Signature" not in post.headers for post in posts)


async def test_webhook_signature_verifies_with_the_documented_receiver_and_not_when_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    secret = "s3cret-for-the-test"
    accept = _documented_receiver(monkeypatch, secret)
    request = attrs.evolve(_request(), claimed_at=datetime(2026, 1, 1, tzinfo=UTC))
    [post, again] = await _posts(
        lambda client: WebhookResumeDispatcher(
            "https://agent/resume", client=client, secret=secret
        ),
        request,
        request,
    )
    assert json.loads(post.content) == webhook_payload(request)
    assert accept(post.headers, post.content) is True
    assert accept(again.headers, again.content) is False  # the same claim: a duplicate
    tampered = post.content.replace(b"q1_opt1", b"q1_opt2")
    assert tampered != post.content
    with pytest.raises(PermissionError):
        accept(post.headers, tampered)
    other_key = attrs.evolve(request, claimed_at=datetime(2026, 1, 2, tzinfo=UTC))
    [wrong_secret] = await _posts(
        lambda client: WebhookResumeDispatcher("https://agent/resume", client=client, secret="x"),
        other_key,
    )
    with pytest.raises(PermissionError):
        accept(wrong_secret.headers, wrong_secret.content)


@pytest.mark.parametrize(
    ("url", "warn"),
    [
        ("http://agents.internal/resume", True),
        ("http://10.0.0.5:8080/resume", True),
        ("https://agents.internal/resume", False),
        ("http://127.0.0.1:9000/resume", False),
        ("http://localhost/resume", False),
        ("http://[::1]/resume", False),
        ("", False),
    ],
)
def test_plain_http_to_a_non_loopback_host_is_recognized(url: str, warn: bool) -> None:
    assert is_plain_http_to_another_host(url) is warn
