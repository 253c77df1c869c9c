"""The Slack channel against the fake Web API (issue #18): a delivery posts one message and
records it, a repeated delivery posts nothing again, failures map to retry or give up as Slack
names them, and a terminal event updates every recorded message of its route, skipping one
that is gone."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from typing import ParamSpec, TypeVar

import anyio
import pytest

from clarion.adapters.memory import InMemoryNotificationStore, InMemoryStore
from clarion.adapters.notify import WebhookNotifier
from clarion.adapters.slack import SlackApi, SlackNotifier
from clarion.adapters.system import UuidIds
from clarion.app.root.compose import Storage, build_clarion
from clarion.app.root.settings import Settings
from clarion.app.usecases.runner import Runner
from clarion.domain.errors import ValidationError
from clarion.domain.model import Answer, Identity, Option, Outcome, Question, Resolution
from clarion.domain.notifications import RouteSpec, parse_channel
from clarion.domain.resolved_by import Surface
from clarion.ports.notifications import (
    DeliveryOutcome,
    InPlaceNotifier,
    Notification,
    Sent,
)
from clarion.ports.testing import ManualClock
from tests.integration.slack.fake_slack import TOKEN, FakeSlack, fake_slack

P = ParamSpec("P")
T = TypeVar("T")

QUESTIONS = (Question(id="q1", prompt="Ship it?", options=(Option("q1_opt1", "Yes"),)),)


@pytest.fixture(name="fake")
async def fixture_fake() -> AsyncIterator[FakeSlack]:
    async with fake_slack() as fake:
        yield fake


def _notifier(
    fake: FakeSlack, token: str = TOKEN
) -> tuple[SlackNotifier, InMemoryNotificationStore]:
    store = InMemoryNotificationStore(InMemoryStore(), ManualClock(), UuidIds())
    return SlackNotifier(SlackApi(token, api_url=fake.api_url()), store), store


def _notification(store: InMemoryNotificationStore, event: str, key: str) -> Notification:
    route = (
        store.list_routes()[0]
        if store.list_routes()
        else store.add_route(
            RouteSpec(workspace_id="", channel=parse_channel("slack:#ops")), created_by="t"
        )
    )
    resolution = Resolution(
        pending_id="p-1",
        status="answered",
        answers=(Answer("q1", ("q1_opt1",)),),
        rejected=False,
        reject_reason="",
        responded_at=datetime(2026, 1, 1, tzinfo=UTC),
        claimed=True,
    )
    return Notification(
        idempotency_key=key,
        event=event,
        route=route,
        recipient=Identity.internal(),
        pending_id="p-1",
        task_id="t-1",
        workspace_id="",
        status="pending",
        context="",
        questions=QUESTIONS,
        link="https://c.example/#p-1",
        occurred_at=datetime(2026, 1, 1, tzinfo=UTC),
        resolution=resolution if event == "resolved" else None,
    )


@pytest.mark.anyio
async def test_a_delivery_posts_once_and_a_repeat_posts_nothing(fake: FakeSlack) -> None:
    notifier, store = _notifier(fake)
    first = await notifier.deliver(_notification(store, "answerable", "k-1"))
    again = await notifier.deliver(_notification(store, "answerable", "k-1"))
    assert (first.status, again.status) == (Sent.SENT, Sent.SENT)
    assert len(fake.of("chat.postMessage")) == 1
    (posted,) = store.posted_for("p-1", "slack")
    assert (posted.channel_id, posted.idempotency_key) == ("COPS", "k-1")
    reminder = await notifier.deliver(_notification(store, "reminder", "k-2"))
    assert reminder.status is Sent.SENT
    assert len(store.posted_for("p-1", "slack")) == 2


@pytest.mark.parametrize(
    ("status", "error", "expected"),
    [
        (500, "internal_error", Sent.RETRY),
        (429, "ratelimited", Sent.RETRY),
        (200, "channel_not_found", Sent.PERMANENT),
        (200, "not_in_channel", Sent.PERMANENT),
    ],
)
@pytest.mark.anyio
async def test_failures_are_retried_or_given_up_as_slack_names_them(
    fake: FakeSlack, status: int, error: str, expected: Sent
) -> None:
    notifier, store = _notifier(fake)
    fake.failures["chat.postMessage"] = [(status, error)]
    outcome = await notifier.deliver(_notification(store, "answerable", "k-1"))
    assert outcome.status is expected
    assert error in outcome.detail
    assert store.posted_for("p-1", "slack") == ()


@pytest.mark.anyio
async def test_a_wrong_token_is_permanent_and_an_unreachable_slack_is_retried(
    fake: FakeSlack,
) -> None:
    notifier, store = _notifier(fake, token="xoxb-wrong")
    assert (
        await notifier.deliver(_notification(store, "answerable", "k"))
    ).status is Sent.PERMANENT
    unreachable = SlackNotifier(
        SlackApi(TOKEN, api_url="http://127.0.0.1:9/api/", timeout=2), store
    )
    assert (
        await unreachable.deliver(_notification(store, "answerable", "k2"))
    ).status is Sent.RETRY


@pytest.mark.anyio
async def test_the_outcome_updates_every_message_and_skips_one_that_is_gone(
    fake: FakeSlack,
) -> None:
    notifier, store = _notifier(fake)
    await notifier.deliver(_notification(store, "answerable", "k-1"))
    await notifier.deliver(_notification(store, "reminder", "k-2"))
    fake.failures["chat.update"] = [(200, "message_not_found")]
    outcome = await notifier.deliver(_notification(store, "resolved", "k-3"))
    assert outcome.status is Sent.SENT
    assert len(fake.of("chat.update")) == 2
    updated = [m for m in fake.posted() if m.updates]
    assert len(updated) == 1
    assert updated[0].blocks[0]["text"]["text"] == "Answered"
    fake.failures["chat.update"] = [(503, "service_unavailable")]
    assert (await notifier.deliver(_notification(store, "resolved", "k-3"))).status is Sent.RETRY


def test_the_composition_wires_slack_only_as_configured() -> None:
    """#18: a bot token adds the slack channel, a signing secret the endpoint; a secret alone
    stops the build naming the missing token."""

    def paths(settings: Settings) -> set[str]:
        app = build_clarion(settings).asgi_app
        return {getattr(route, "path", "") for route in app.routes}

    plain = Settings(database_url="memory://")
    assert "/integrations/slack/interactions" not in paths(plain)
    configured = Settings(database_url="memory://", slack_bot_token=TOKEN, slack_signing_secret="s")
    assert "/integrations/slack/interactions" in paths(configured)
    with pytest.raises(ValidationError) as caught:
        build_clarion(Settings(database_url="memory://", slack_signing_secret="s"))
    assert caught.value.field == "CLARION_SLACK_BOT_TOKEN"


class _PostAfterAnotherProcessSettled:
    """The real Slack channel, except that while a question message is being posted the
    bundle is answered and a second process (another worker on the same store) applies the
    terminal update first — before this message is recorded. It declares the
    ``updates_in_place`` capability (:class:`InPlaceNotifier`) as given."""

    def __init__(
        self,
        inner: SlackNotifier,
        settle: Callable[[], Awaitable[None]],
        *,
        updates_in_place: bool = True,
    ) -> None:
        self._inner = inner
        self._settle = settle
        self.updates_in_place = updates_in_place

    async def deliver(self, notification: Notification) -> DeliveryOutcome:
        if notification.event == "answerable":
            await self._settle()
        return await self._inner.deliver(notification)


def test_only_the_slack_channel_declares_that_it_updates_in_place() -> None:
    """#32: the capability is declared on the port (:class:`InPlaceNotifier`), not found by
    duck typing; the webhook and e-mail channels post messages that are final."""
    store = InMemoryNotificationStore(InMemoryStore(), ManualClock(), UuidIds())
    slack = SlackNotifier(SlackApi(TOKEN, api_url="http://127.0.0.1:9/"), store)
    assert isinstance(slack, InPlaceNotifier)
    assert slack.updates_in_place
    assert not isinstance(WebhookNotifier(), InPlaceNotifier)


@pytest.mark.anyio
@pytest.mark.parametrize("updates_in_place", [True, False])
async def test_a_terminal_update_that_raced_the_post_is_applied_again(
    fake: FakeSlack, updates_in_place: bool
) -> None:
    """#18: across processes, the route's terminal update can run before the message it
    should update is recorded; the worker that posted schedules it once more — for a channel
    that declares ``updates_in_place`` (#32), and only for one: otherwise the message stays
    as posted."""
    clock = ManualClock()
    storage = Storage.in_memory(clock, UuidIds())
    settings = Settings(
        database_url="memory://",
        live_delivery="memory",
        slack_bot_token=TOKEN,
        slack_api_url=fake.api_url(),
    )
    other = build_clarion(settings, storage=storage, clock=clock)
    assert storage.notifications is not None
    inner = SlackNotifier(SlackApi(TOKEN, api_url=fake.api_url()), storage.notifications)
    other_worker = other.notifications
    assert other_worker is not None

    async def settle() -> None:
        outcome = Outcome.answer(Answer("q1", ("q1_opt1",)))
        await other.resolver.resolve(Identity.internal(), "p-1", outcome, surface=Surface.REST)
        while await other_worker.run_once():
            pass

    posting = build_clarion(
        settings,
        storage=storage,
        clock=clock,
        notifiers={
            "slack": _PostAfterAnotherProcessSettled(
                inner, settle, updates_in_place=updates_in_place
            )
        },
    )
    workspace = storage.host.create_workspace("ws", "")
    task = storage.host.create_task("t", workspace.id)
    session, _ = storage.host.create_session(task.id)
    storage.notifications.add_route(
        RouteSpec(workspace_id=workspace.id, channel=parse_channel("slack:#ops")), created_by="t"
    )
    storage.claims.create_bundle(
        pending_id="p-1", session_id=session.id, task_id=task.id, questions=QUESTIONS, context=""
    )
    worker = posting.notifications
    assert worker is not None
    for _ in range(10):
        if not await worker.run_once():
            break
    (message,) = fake.posted()
    if not updates_in_place:
        assert message.updates == 0
        assert any(block["type"] == "actions" for block in message.blocks)
        return
    assert message.updates == 1
    assert message.blocks[0]["text"]["text"] == "Answered"
    assert not any(block["type"] == "actions" for block in message.blocks)


class _RecordingRunner(Runner):
    """The one Runner, noting what went through it and on which pool."""

    def __init__(self) -> None:
        super().__init__(anyio.CapacityLimiter(4))
        self.store: list[str] = []
        self.outbound_calls = 0
        self.most_borrowed = 0

    async def __call__(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        self.store.append(getattr(function, "__name__", "?"))

        def borrowed() -> T:
            self.most_borrowed = max(self.most_borrowed, self.limiter.borrowed_tokens)
            return function(*args, **kwargs)

        return await super().__call__(borrowed)

    async def outbound(self, function: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        self.outbound_calls += 1
        return await super().outbound(function, *args, **kwargs)


@pytest.mark.anyio
async def test_the_store_calls_run_under_the_shared_limiter_and_slack_calls_outbound(
    fake: FakeSlack,
) -> None:
    """#32: the posted-message store's calls go through the Runner the notifier is given (the
    composition's one, with the shared worker limiter), the Web API calls through its
    outbound pool."""
    runner = _RecordingRunner()
    store = InMemoryNotificationStore(InMemoryStore(), ManualClock(), UuidIds())
    api = SlackApi(TOKEN, api_url=fake.api_url(), offload=runner)
    notifier = SlackNotifier(api, store, offload=runner)
    assert (await notifier.deliver(_notification(store, "answerable", "k-1"))).status is Sent.SENT
    assert (await notifier.deliver(_notification(store, "resolved", "k-2"))).status is Sent.SENT
    assert runner.store == ["posted_by_key", "record_posted", "posted_for"]
    assert runner.most_borrowed == 1  # each ran holding a token of the shared limiter
    assert runner.outbound_calls == 2  # chat.postMessage, then chat.update
