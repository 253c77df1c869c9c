"""Resume dispatchers: outbox, webhook and callable (R7: accepted, or refused → rollback)."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx2
import pytest

from clarion.adapters.memory import InMemoryHostRepository, InMemoryStore
from clarion.adapters.resume import (
    CallableResumeDispatcher,
    OutboxResumeDispatcher,
    WebhookResumeDispatcher,
    webhook_payload,
)
from clarion.adapters.system import UuidIds
from clarion.domain.model import Answer
from clarion.ports.resume import (
    RESUME_MESSAGE_TYPE,
    ResumeDispatcher,
    ResumeRefused,
    ResumeRequest,
)
from clarion.ports.testing import ManualClock

pytestmark = pytest.mark.anyio


def _request(session_id: str = "s1", task_id: str = "t1") -> ResumeRequest:
    return ResumeRequest(
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


@pytest.fixture(name="host")
def fixture_host() -> InMemoryHostRepository:
    return InMemoryHostRepository(InMemoryStore(), ManualClock(), UuidIds())


async def test_outbox_records_the_resume_as_a_new_turn_with_the_prompt(
    host: InMemoryHostRepository,
) -> None:
    task = host.create_task("t")
    session, first_turn = host.create_session(task.id)
    dispatcher: ResumeDispatcher = OutboxResumeDispatcher(host)
    await dispatcher.dispatch(_request(session.id, task.id))
    turn = host.current_turn(session.id)
    assert turn is not None
    assert turn.id != first_turn.id
    [message] = [m for m in host.list_messages(session.id) if m.type == RESUME_MESSAGE_TYPE]
    assert message.turn_id == turn.id
    assert message.author_type == "user"
    assert message.content == _request().prompt
    assert message.metadata["pending_id"] == "p1"
    assert message.metadata["clarification_turn_id"] == "turn-1"
    assert message.metadata["answers"][0]["selected_options"] == ["q1_opt1", "q1_opt2"]


async def test_outbox_refuses_a_resume_for_a_missing_session(
    host: InMemoryHostRepository,
) -> None:
    with pytest.raises(ResumeRefused):
        await OutboxResumeDispatcher(host).dispatch(_request("missing"))


def test_webhook_payload_carries_every_answer_key() -> None:
    payload = webhook_payload(_request())
    assert set(payload) == {"task_id", "session_id", "pending_id", "prompt", "answers", "rejected"}
    assert payload["answers"] == [
        {"question_id": "q1", "selected_options": ["q1_opt1", "q1_opt2"], "custom_text": ""},
        {"question_id": "q2", "selected_options": [], "custom_text": "soon"},
    ]
    assert payload["rejected"] is False


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
