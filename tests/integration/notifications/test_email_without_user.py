"""#29: an ``email:`` route created without a user. With authentication disabled (the README's
setup) it sends, and its answer link answers as the one identity every request then is; with
authentication enabled it is refused at creation (``user_id``, tested with the REST routes)."""

from __future__ import annotations

import email
import re
from collections.abc import Iterator
from email.message import Message
from pathlib import Path

import httpx2
import pytest
from aiosmtpd.controller import Controller

from clarion.app.root.compose import build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.errors import InvalidArgument
from clarion.domain.model import Identity
from clarion.domain.notifications import ANSWERABLE, RouteSpec, parse_channel
from clarion.domain.resolved_by import Surface
from clarion.ports.testing import ManualClock
from tests.integration.notifications.support import FakeChannel, NotifyWorld, storage_for
from tests.sockets import free_port

pytestmark = pytest.mark.anyio

BASE = "http://127.0.0.1"


class Sink:
    """aiosmtpd handler keeping every message it receives."""

    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def handle_DATA(self, server: object, session: object, envelope: object) -> str:
        self.messages.append(email.message_from_bytes(envelope.content))  # type: ignore[attr-defined]
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


def _settings(port: int, *, auth_enabled: bool) -> Settings:
    return Settings(
        database_url="memory://",
        public_url=BASE,
        live_delivery="memory",
        auth_enabled=auth_enabled,
        smtp_host="127.0.0.1",
        smtp_port=port,
        smtp_security="none",
    )


@pytest.mark.parametrize(
    "kind", ["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)]
)
async def test_with_authentication_off_a_userless_email_route_sends_a_working_answer_link(
    smtp: tuple[Sink, int], kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    sink, port = smtp
    clock: ManualClock = request.getfixturevalue("notify_clock")  # the storage's clock too
    with storage_for(kind, request, tmp_path) as storage:
        clarion = build_clarion(_settings(port, auth_enabled=False), storage=storage, clock=clock)
        try:
            routing = clarion.notification_routes
            assert routing is not None
            spec = RouteSpec(
                workspace_id="", channel=parse_channel("email:me@example.com"), events=(ANSWERABLE,)
            )
            route = await routing.add(Identity.synthetic_admin(), spec)
            assert route.user_id == ""
            world = NotifyWorld(clarion=clarion, clock=clock, channel=FakeChannel())
            bundle = world.ask("")
            await world.drain()
            (message,) = sink.messages
            text = next(
                part.get_payload(decode=True)
                for part in message.walk()
                if part.get_content_type() == "text/plain"
            )
            assert isinstance(text, bytes)
            (path,) = re.findall(r"http://127\.0\.0\.1(/answer/[A-Za-z0-9_.\-]+)", text.decode())
            (delivery,) = [entry for entry in world.entries() if entry.route_id]
            assert (delivery.status, delivery.last_error) == ("done", "")  # no retry
            transport = httpx2.ASGITransport(app=clarion.asgi_app)
            async with httpx2.AsyncClient(transport=transport, base_url=BASE) as client:
                page = await client.get(path)
                assert "<form" in page.text
                posted = await client.post(
                    path,
                    data={"action": "answer", "q0-options": ["q1_opt1"], "q0-text": ""},
                    headers={"Origin": BASE},
                )
            assert posted.status_code == 200, posted.text
            assert "Your answer was sent to the agent." in posted.text
            stored = clarion.storage.claims.load_bundle(bundle.pending_id)
            assert stored is not None
            (row,) = stored.rows
            assert row.resolved_by is not None
            assert row.resolved_by.surface is Surface.EMAIL
        finally:
            clarion.close()


async def test_with_authentication_on_a_userless_email_route_is_refused_naming_user_id(
    smtp: tuple[Sink, int],
) -> None:
    _, port = smtp
    clarion = build_clarion(_settings(port, auth_enabled=True))
    try:
        routing = clarion.notification_routes
        assert routing is not None
        spec = RouteSpec(workspace_id="", channel=parse_channel("email:ops@example.com"))
        with pytest.raises(InvalidArgument) as caught:
            await routing.add(Identity.internal(), spec)
        assert caught.value.field == "user_id"
        assert await routing.list(Identity.internal()) == ()
    finally:
        clarion.close()
