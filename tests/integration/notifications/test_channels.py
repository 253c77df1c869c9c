"""The real channels on loopback (issue #17): the webhook against a local receiver (signature,
idempotency key kept across a retry after a 500, nothing for a bundle resolved first), e-mail
end to end through a local SMTP server (aiosmtpd), and Apprise's json:// target."""

from __future__ import annotations

import email
import json
import re
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import anyio
import httpx2
import pytest
from aiosmtpd.controller import Controller

from clarion.adapters.notify import AppriseNotifier, EmailNotifier, SmtpSettings, WebhookNotifier
from clarion.adapters.outbound import OutboundPolicy
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Storage, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.model import Answer, Identity, Outcome
from clarion.domain.notifications import ANSWERABLE, FAILED, RESOLVED, RouteSpec, parse_channel
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.domain.resolved_by import Surface
from clarion.domain.signing import verify
from clarion.ports.testing import ManualClock
from tests.integration.notifications.support import (
    PUBLIC_URL,
    FakeChannel,
    NotifyWorld,
    Receiver,
    notify_world,
    storage_for,
)
from tests.sockets import free_port

pytestmark = pytest.mark.anyio

SECRET = "webhook-secret"
# The receivers run on loopback, which a webhook reaches only when allowed (issue #29 S4).
LOOPBACK = OutboundPolicy.allow_loopback()


@pytest.fixture(name="receiver")
def fixture_receiver() -> Iterator[Receiver]:
    with Receiver() as receiver:
        yield receiver


def _memory_world(notifiers: dict[str, object]) -> NotifyWorld:
    clock = ManualClock()
    return notify_world(Storage.in_memory(clock, UuidIds()), clock, notifiers)  # type: ignore[arg-type]


@pytest.mark.server
async def test_the_webhook_body_is_signed_like_the_resume_webhook(receiver: Receiver) -> None:
    world = _memory_world({"webhook": WebhookNotifier(secret=SECRET, policy=LOOPBACK)})
    world.route("", f"webhook:{receiver.url}", events=(ANSWERABLE,))
    world.ask("")
    await world.drain()
    ((headers, body),) = receiver.requests
    assert verify(SECRET, headers["clarion-timestamp"], body, headers["clarion-signature"])
    assert not verify("other", headers["clarion-timestamp"], body, headers["clarion-signature"])
    event = json.loads(body)
    assert headers["idempotency-key"] == event["idempotency_key"]
    assert headers["clarion-event"] == ANSWERABLE
    assert event["version"] == 1
    assert event["link"] == f"{PUBLIC_URL}/#p-1"
    assert event["bundle"]["pending_id"] == "p-1"
    assert [q["id"] for q in event["bundle"]["questions"]] == ["q1"]
    assert event["answers"] == []


@pytest.mark.server
async def test_a_retry_after_a_500_keeps_the_idempotency_key(receiver: Receiver) -> None:
    world = _memory_world({"webhook": WebhookNotifier(secret=SECRET, policy=LOOPBACK)})
    world.route("", f"webhook:{receiver.url}", events=(ANSWERABLE,))
    receiver.statuses = [500]
    world.ask("")
    await world.drain()
    world.advance(6)
    await world.drain()
    keys = [headers["idempotency-key"] for headers, _ in receiver.requests]
    assert len(keys) == 2
    assert keys[0] == keys[1]


@pytest.mark.server
async def test_nothing_is_posted_for_a_bundle_resolved_before_delivery(
    receiver: Receiver,
) -> None:
    world = _memory_world({"webhook": WebhookNotifier(secret=SECRET, policy=LOOPBACK)})
    world.route("", f"webhook:{receiver.url}", events=(ANSWERABLE,))
    world.route("", f"webhook:{receiver.url}", events=(RESOLVED,), include_answers=True)
    world.ask("")
    await world.answer("p-1")
    await world.drain()
    ((headers, body),) = receiver.requests
    assert headers["clarion-event"] == RESOLVED
    assert json.loads(body)["answers"][0]["selected_options"] == ["q1_opt2"]


@pytest.mark.server
async def test_apprise_delivers_a_notify_only_message_to_its_target(receiver: Receiver) -> None:
    world = _memory_world({"apprise": AppriseNotifier()})
    target = receiver.url.replace("http://", "json://")
    world.route("", f"apprise:{target}", events=(ANSWERABLE,))
    world.ask("")
    await world.drain()
    ((_, body),) = receiver.requests
    message = json.loads(body)
    assert f"{PUBLIC_URL}/#p-1" in message["message"]
    assert "Question waiting" in message["title"]


# -- e-mail ------------------------------------------------------------------------------------


class Sink:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.messages: list[tuple[list[str], Message]] = []

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        content = envelope.content  # type: ignore[attr-defined]
        rcpt = list(envelope.rcpt_tos)  # type: ignore[attr-defined]
        self.messages.append((rcpt, email.message_from_bytes(content)))
        return "250 OK"


@pytest.fixture(name="smtp")
def fixture_smtp() -> Iterator[tuple[Sink, int]]:
    sink, port = Sink(), free_port()
    controller = Controller(sink, hostname="127.0.0.1", port=port)
    controller.start()
    try:
        yield sink, port
    finally:
        controller.stop()


class FakeLinks:
    """An AnswerLinkIssuer that hands each recipient a distinct link."""

    def link_for(self, recipient: Identity, pending_id: str) -> str:
        return f"https://links.example/{recipient.user_id}/{pending_id}"


def _text(message: Message, subtype: str) -> str:
    for part in message.walk():
        if part.get_content_type() == f"text/{subtype}":
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            return payload.decode()
    raise AssertionError(f"no text/{subtype} part")


@pytest.mark.server
async def test_an_agent_asks_and_each_routed_recipient_gets_one_email(
    smtp: tuple[Sink, int],
) -> None:
    sink, port = smtp
    mailer = EmailNotifier(
        SmtpSettings(host="127.0.0.1", port=port, security="none", sender="clarion@example.com"),
        links=FakeLinks(),
    )
    world = _memory_world({"email": mailer})
    tokens = world.clarion.storage.tokens
    alice, bob = tokens.create_user("alice"), tokens.create_user("bob")
    workspace = world.workspace()
    world.route(workspace.id, "email:alice@example.com", user_id=alice.id, events=(ANSWERABLE,))
    world.route(workspace.id, "email:bob@example.com", user_id=bob.id, events=(ANSWERABLE,))
    task = world.clarion.storage.host.create_task("deploy", workspace.id)
    session, _ = world.clarion.storage.host.create_session(task.id)
    options = (OptionDraft("Yes", "ship it"), OptionDraft("No", "wait"))
    question = QuestionDraft(prompt="Ship the release today?", options=options)
    results: list[object] = []

    async def agent() -> None:
        asked = await world.clarion.services.asking.ask(
            Identity.internal(), session.id, [question], "Release 2.0 is ready"
        )
        results.append(asked)

    async with anyio.create_task_group() as group:
        group.start_soon(agent)
        with anyio.fail_after(10):
            while len(sink.messages) < 2:
                await world.drain()
                await anyio.sleep(0.01)
        pending_id = sink.messages[0][1]["X-Clarion-Pending-Id"]
        outcome = Outcome.answer(Answer(question_id="q1", selected_options=("q1_opt1",)))
        await world.clarion.resolver.resolve(
            Identity.internal(), pending_id, outcome, surface=Surface.REST
        )
    await world.drain()
    assert sorted(rcpt for rcpt, _ in sink.messages) == [
        ["alice@example.com"],
        ["bob@example.com"],
    ]
    for rcpt, message in sink.messages:
        owner = alice if rcpt == ["alice@example.com"] else bob
        plain, html = _text(message, "plain"), _text(message, "html")
        assert "Ship the release today?" in plain
        assert "Yes" in plain
        assert f"https://links.example/{owner.id}/{pending_id}" in plain
        assert f"https://links.example/{owner.id}/{pending_id}" in html
    assert len(results) == 1


@pytest.mark.server
async def test_without_an_issuer_the_email_carries_the_inbox_deep_link(
    smtp: tuple[Sink, int],
) -> None:
    sink, port = smtp
    mailer = EmailNotifier(SmtpSettings(host="127.0.0.1", port=port, security="none"))
    world = _memory_world({"email": mailer})
    world.route("", "email:ops@example.com", events=(ANSWERABLE,))
    world.ask("")
    await world.drain()
    ((_, message),) = sink.messages
    assert f"{PUBLIC_URL}/#p-1" in _text(message, "plain")


async def test_an_unreachable_smtp_server_is_retried() -> None:
    mailer = EmailNotifier(
        SmtpSettings(host="127.0.0.1", port=free_port(), security="none", timeout_s=2)
    )
    world = _memory_world({"email": mailer})
    world.route("", "email:ops@example.com", events=(ANSWERABLE,))
    world.ask("")
    await world.drain()
    (delivery,) = [e for e in world.entries() if e.route_id]
    assert (delivery.status, delivery.attempts) == ("due", 1)
    assert delivery.last_error.startswith("SMTP failed")


@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
@pytest.mark.server
async def test_an_emailed_answer_link_answers_the_waiting_agent_and_the_next_recipient_sees_the_winner(  # noqa: E501
    smtp: tuple[Sink, int],
    kind: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
) -> None:
    """Issue #17 end to end, with the composed channels: the agent asks, each routed recipient
    gets one e-mail carrying their own signed answer link, following one answers through the
    one resolver (recorded as the e-mail surface) and the agent gets it in the same call; the
    other recipient's link then shows the winner (R2)."""
    sink, port = smtp
    with storage_for(kind, request, tmp_path) as storage:
        await _email_link_story(sink, port, storage, request.getfixturevalue("notify_clock"))


async def _email_link_story(sink: Sink, port: int, storage: Storage, clock: ManualClock) -> None:
    settings = Settings(
        database_url="memory://",
        public_url="http://127.0.0.1",
        live_delivery="memory",
        auth_enabled=True,
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_security="none",
    )
    clarion = build_clarion(settings, storage=storage, clock=clock)
    world = NotifyWorld(clarion=clarion, clock=clock, channel=FakeChannel())
    users = clarion.authentication
    alice, bob = users.create_user("alice"), users.create_user("bob")
    workspace = world.workspace()
    world.route(workspace.id, "email:alice@example.com", user_id=alice.id, events=(ANSWERABLE,))
    world.route(workspace.id, "email:bob@example.com", user_id=bob.id, events=(ANSWERABLE,))
    session, _ = clarion.storage.host.create_session(
        clarion.storage.host.create_task("deploy", workspace.id).id
    )
    options = (OptionDraft("Yes", "ship it"), OptionDraft("No", "wait"))
    question = QuestionDraft(prompt="Ship the release today?", options=options)
    results: list[object] = []

    async def agent() -> None:
        results.append(
            await clarion.services.asking.ask(
                Identity.internal(), session.id, [question], "Release 2.0 is ready"
            )
        )

    def link_in(message: Message) -> str:
        pattern = r"http://127\.0\.0\.1(/answer/[A-Za-z0-9_.\-]+)"
        (path,) = {str(found) for found in re.findall(pattern, _text(message, "plain"))}
        return path

    transport = httpx2.ASGITransport(app=clarion.asgi_app)
    async with (
        httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
        anyio.create_task_group() as group,
    ):
        group.start_soon(agent)
        with anyio.fail_after(10):
            while len(sink.messages) < 2:
                await world.drain()
                await anyio.sleep(0.01)
        links = {rcpt[0]: link_in(message) for rcpt, message in sink.messages}
        assert links["alice@example.com"] != links["bob@example.com"]
        page = await client.get(links["alice@example.com"])
        assert page.status_code == 200
        assert "Ship the release today?" in page.text
        assert "<form" in page.text
        posted = await client.post(
            links["alice@example.com"],
            data={"action": "answer", "q0-options": ["q1_opt1"], "q0-text": ""},
            headers={"Origin": "http://127.0.0.1"},
        )
        assert posted.status_code == 200, posted.text
    (asked,) = results
    assert "Yes" in str(asked)
    bundle = clarion.storage.claims.load_bundle(sink.messages[0][1]["X-Clarion-Pending-Id"])
    assert bundle is not None
    (row,) = bundle.rows
    assert row.resolved_by is not None
    assert (row.resolved_by.surface, row.resolved_by.identity_id) == (Surface.EMAIL, alice.id)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        late = await client.get(links["bob@example.com"])
    assert "Already answered" in late.text
    assert "<form" not in late.text
    clarion.close()


@pytest.mark.server
async def test_each_delivery_attempt_is_counted_by_channel_and_result(receiver: Receiver) -> None:
    """Issue #20's notification metric, fed by the worker: one sent webhook, then one retry."""
    world = _memory_world({"webhook": WebhookNotifier(secret=SECRET, policy=LOOPBACK)})
    world.route("", f"webhook:{receiver.url}", events=(ANSWERABLE,))
    world.route("", "webhook:http://127.0.0.1:9/unreachable", events=(ANSWERABLE,))
    world.ask("")
    await world.drain()
    transport = httpx2.ASGITransport(app=world.clarion.asgi_app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        scrape = (await client.get("/metrics")).text
    assert 'clarion_notification_deliveries_total{channel="webhook",result="sent"} 1.0' in scrape
    assert 'clarion_notification_deliveries_total{channel="webhook",result="retry"} 1.0' in scrape


@pytest.mark.server
async def test_a_webhook_is_signed_by_default_with_its_routes_own_secret(
    receiver: Receiver,
) -> None:
    """#29: with no server-wide secret configured, every POST is signed with the secret the
    route got when it was created (before: unsigned)."""
    clock = ManualClock()
    world = notify_world(
        Storage.in_memory(clock, UuidIds()),
        clock,
        {"webhook": WebhookNotifier(policy=LOOPBACK)},
        outbound_allow="127.0.0.1",
    )
    assert world.clarion.notification_routes is not None
    spec = RouteSpec(
        workspace_id="", channel=parse_channel(f"webhook:{receiver.url}"), events=(ANSWERABLE,)
    )
    route = await world.clarion.notification_routes.add(Identity.internal(), spec)
    assert route.secret
    world.ask("")
    await world.drain()
    ((headers, body),) = receiver.requests
    assert verify(route.secret, headers["clarion-timestamp"], body, headers["clarion-signature"])


@pytest.mark.server
async def test_a_webhook_to_an_internal_address_is_given_up_unsent(receiver: Receiver) -> None:
    """#29 S4: delivery checks the address it connects to, also for a route stored before
    the check at creation (or one whose name now resolves inside): nothing is sent."""
    world = _memory_world({"webhook": WebhookNotifier(secret=SECRET)})
    world.route("", f"webhook:{receiver.url}", events=(ANSWERABLE,))
    world.ask("")
    await world.drain()
    assert receiver.requests == []
    (entry,) = [e for e in world.entries() if e.route_id]
    assert entry.status == FAILED
    assert "CLARION_OUTBOUND_ALLOW" in entry.last_error


@pytest.mark.server
async def test_apprise_holds_a_non_administrators_route_to_hosted_services(
    receiver: Receiver,
) -> None:
    """#29 S4: an Apprise URL a non-administrator could not create now (here a json://
    target on loopback, stored before the rule) is given up at send time, unsent."""
    world = _memory_world({"apprise": AppriseNotifier()})
    user = world.clarion.authentication.create_user("alice")
    workspace = world.workspace(owner_id=user.id)
    target = receiver.url.replace("http://", "json://")
    world.route(workspace.id, f"apprise:{target}", events=(ANSWERABLE,), user_id=user.id)
    world.ask(workspace.id)
    await world.drain()
    assert receiver.requests == []
    (entry,) = [e for e in world.entries() if e.route_id]
    assert entry.status == FAILED
    assert "administrators" in entry.last_error
