"""A composed Clarion service served by uvicorn next to the fake Slack Web API (issue #18):
authentication on, Slack configured (bot token, signing secret, the fake's API URL), a fast
notification worker, three linked Slack users and routes to a channel and a direct message.
Interactions are signed here with the test signing secret, exactly as Slack signs them."""

from __future__ import annotations

import json
import time
import urllib.parse
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx2
from slack_sdk.signature import SignatureVerifier

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.domain.notifications import RouteSpec, parse_channel
from clarion.domain.resolved_by import ResolvedBy
from clarion.ports.notifications import NotificationStore
from tests.integration.rest.harness import ok, questions
from tests.integration.slack.fake_slack import TOKEN, FakeSlack, Message
from tests.sockets import serving

SECRET = "test-signing-secret"
PUBLIC_URL = "https://clarion.example"
INTERACTIONS = "/integrations/slack/interactions"
SLACK_IDS = {"alice": "UALICE", "bob": "UBOB", "carol": "UCAROL"}


@attrs.define
class Person:
    name: str
    user_id: str
    slack_id: str
    headers: dict[str, str]


@attrs.define
class SlackWorld:
    clarion: Clarion
    fake: FakeSlack
    url: str
    http: httpx2.AsyncClient
    people: dict[str, Person]
    shared_task: str
    private_task: str
    clicks: int = 0

    @property
    def store(self) -> NotificationStore:
        assert self.clarion.storage.notifications is not None
        return self.clarion.storage.notifications

    async def session(self, task_id: str | None = None) -> str:
        task = task_id or self.shared_task
        alice = self.people["alice"].headers
        created = await self.http.post(f"/api/v1/tasks/{task}/sessions", json={}, headers=alice)
        session_id = ok(created, 201)["id"]
        assert isinstance(session_id, str)
        return session_id

    async def ask(self, count: int = 1, *, task_id: str | None = None, options: int = 2) -> str:
        session_id = await self.session(task_id)
        body = {
            "session_id": session_id,
            "context": "Deploying <the> release & more",
            "questions": questions(count, options=options),
        }
        created = await self.http.post(
            "/api/v1/clarification/request", json=body, headers=self.people["alice"].headers
        )
        pending_id = ok(created)["pending_id"]
        assert isinstance(pending_id, str)
        return pending_id

    def messages_of(self, pending_id: str) -> list[Message]:
        recorded = {
            (m.channel_id, m.message_id) for m in self.store.posted_for(pending_id, "slack")
        }
        return [m for m in self.fake.posted() if (m.channel, m.ts) in recorded]

    async def posted(self, pending_id: str, count: int) -> list[Message]:
        """Wait until the worker posted (and recorded) ``count`` messages for the bundle."""
        await self.fake.wait_for(
            lambda: len(self.messages_of(pending_id)) >= count, f"{count} messages posted"
        )
        return self.messages_of(pending_id)

    def signed(
        self, payload: dict[str, Any], *, timestamp: int | None = None, secret: str = SECRET
    ) -> tuple[bytes, dict[str, str]]:
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        signature = SignatureVerifier(secret).generate_signature(timestamp=stamp, body=body)
        assert signature is not None
        return body, {
            "Content-Type": "application/x-www-form-urlencoded",
            "X-Slack-Request-Timestamp": stamp,
            "X-Slack-Signature": signature,
        }

    async def send(self, body: bytes, headers: dict[str, str]) -> httpx2.Response:
        return await self.http.post(INTERACTIONS, content=body, headers=headers)

    def click_payload(
        self, slack_id: str, message: Message, action_id: str
    ) -> tuple[dict[str, Any], str]:
        """A ``block_actions`` payload for the button ``action_id`` of ``message``, as Slack
        sends it; returns it and the name of its ``response_url``."""
        button = next(
            element
            for block in message.blocks
            if block.get("type") == "actions"
            for element in block["elements"]
            if element.get("action_id") == action_id
        )
        self.clicks += 1
        name = f"click{self.clicks}"
        payload = {
            "type": "block_actions",
            "user": {"id": slack_id, "name": slack_id.lower()},
            "team": {"id": "T0001"},
            "trigger_id": f"trigger-{self.clicks}",
            "response_url": self.fake.response_url(name),
            "channel": {"id": message.channel},
            "container": {
                "type": "message",
                "channel_id": message.channel,
                "message_ts": message.ts,
            },
            "message": {"ts": message.ts},
            "actions": [
                {
                    "type": "button",
                    "action_id": action_id,
                    "block_id": "b",
                    "value": button.get("value", ""),
                    "action_ts": str(time.time()),
                }
            ],
        }
        return payload, name

    async def click(self, slack_id: str, message: Message, action_id: str) -> str:
        """Click and return the ``response_url`` name the result is posted to."""
        payload, name = self.click_payload(slack_id, message, action_id)
        response = await self.send(*self.signed(payload))
        assert response.status_code == 200, response.text
        return name

    async def reply(self, name: str) -> str:
        await self.fake.wait_for(lambda: bool(self.fake.responses(name)), f"reply {name}")
        (body,) = self.fake.responses(name)
        assert body["response_type"] == "ephemeral"
        text = body["text"]
        assert isinstance(text, str)
        return text

    def submission(
        self, slack_id: str, view: dict[str, Any], values: dict[str, Any]
    ) -> dict[str, Any]:
        return {
            "type": "view_submission",
            "user": {"id": slack_id},
            "team": {"id": "T0001"},
            "view": {
                "id": "V1",
                "callback_id": view["callback_id"],
                "private_metadata": view["private_metadata"],
                "state": {"values": values},
            },
        }

    def resolved_by(self, pending_id: str) -> ResolvedBy | None:
        bundle = self.clarion.storage.claims.load_bundle(pending_id)
        assert bundle is not None
        return next((row.resolved_by for row in bundle.rows if row.resolved_by), None)

    def stored(self, pending_id: str) -> object:
        bundle = self.clarion.storage.claims.load_bundle(pending_id)
        assert bundle is not None
        return bundle.rows


def final_header(message: Message) -> str:
    header = message.blocks[0]
    assert header["type"] == "header"
    text = header["text"]["text"]
    assert isinstance(text, str)
    return text


def has_buttons(message: Message) -> bool:
    return any(block.get("type") == "actions" for block in message.blocks)


def text_of(message: Message) -> str:
    return json.dumps(message.blocks, ensure_ascii=False)


@asynccontextmanager
async def slack_world(
    database_url: str, fake: FakeSlack, *, auth_enabled: bool = True
) -> AsyncIterator[SlackWorld]:
    settings = Settings(
        database_url=database_url,
        auth_enabled=auth_enabled,
        public_url=PUBLIC_URL,
        live_delivery="memory",
        notify_poll_s=0.05,
        slack_bot_token=TOKEN,
        slack_signing_secret=SECRET,
        slack_api_url=fake.api_url(),
    )
    clarion = build_clarion(settings)
    clarion.upgrade()
    try:
        auth = clarion.authentication
        store = clarion.storage.notifications
        assert store is not None
        people = {}
        for name, slack_id in SLACK_IDS.items():
            user = auth.create_user(name)
            token = auth.issue_token(user.id).token
            store.link_chat_user("slack", slack_id, user.id)
            people[name] = Person(name, user.id, slack_id, {"Authorization": f"Bearer {token}"})
        host = clarion.storage.host
        shared = host.create_workspace("shared", owner_id="")
        private = host.create_workspace("alice's", owner_id=people["alice"].user_id)
        shared_task = host.create_task("shared", shared.id)
        private_task = host.create_task("private", private.id)
        for workspace, channel in (
            (shared.id, "slack:#clarion"),
            (shared.id, "slack:@UBOB"),
            (private.id, "slack:#private"),
        ):
            store.add_route(
                RouteSpec(workspace_id=workspace, channel=parse_channel(channel)), created_by="t"
            )
        async with serving(clarion.asgi_app) as url:
            timeout = httpx2.Timeout(30, read=120)
            async with httpx2.AsyncClient(base_url=url, timeout=timeout) as http:
                yield SlackWorld(
                    clarion=clarion,
                    fake=fake,
                    url=url,
                    http=http,
                    people=people,
                    shared_task=shared_task.id,
                    private_task=private_task.id,
                )
    finally:
        clarion.close()
