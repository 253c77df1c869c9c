"""Signed single-use answer links end to end (issue #17, the e-mail bullet), on SQLite and
PostgreSQL: the composed service issues a link, a GET shows the page and changes nothing, the
form's POST answers through the one resolver and a blocked REST wait receives that answer in
the same call (R7); a second recipient's link then shows the winner (R2). Tampered, foreign,
expired, reused links, a recipient who cannot see the workspace and a deactivated one all end
on a page that says so, and nothing changes."""

from __future__ import annotations

import base64
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import attrs
import httpx2
import pytest
import structlog

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.app.usecases.answer_links import AnswerLinks, LinkSigner
from clarion.domain.model import Identity
from clarion.ports.testing import ManualClock
from tests.integration.rest.harness import LOCAL_URL, SignallingWaiters, ok, questions

pytestmark = pytest.mark.anyio

KEY = bytes(range(32))
OTHER_KEY = bytes(range(1, 33))
START = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
FORM = {"Origin": LOCAL_URL}


@pytest.fixture(
    name="database_url",
    params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)],
)
def fixture_database_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'clarion.db'}"
    else:
        make: Callable[[], str] = request.getfixturevalue("make_postgres_database")
        yield make()


@attrs.define
class World:
    clarion: Clarion
    clock: ManualClock
    waiters: SignallingWaiters
    client: httpx2.AsyncClient
    alice: Identity
    alice_headers: dict[str, str]
    bob: Identity
    carol: Identity
    shared_session: str
    private_session: str

    @property
    def links(self) -> AnswerLinks:
        return self.clarion.answer_links

    async def ask(self, session_id: str, count: int = 2, **extra: Any) -> str:
        body = {"session_id": session_id, "questions": questions(count), **extra}
        created = ok(
            await self.client.post(
                "/api/v1/clarification/request", json=body, headers=self.alice_headers
            )
        )
        pending_id = created["pending_id"]
        assert isinstance(pending_id, str)
        return pending_id

    def stored(self, pending_id: str) -> object:
        """Everything the store holds about the bundle (to show a request changed nothing)."""
        bundle = self.clarion.storage.claims.load_bundle(pending_id)
        assert bundle is not None
        return bundle.rows


@pytest.fixture(name="world")
async def fixture_world(database_url: str) -> AsyncIterator[World]:
    clock = ManualClock(START)
    waiters = SignallingWaiters()
    settings = Settings(
        database_url=database_url,
        auth_enabled=True,
        answer_link_keys=(KEY,),
        answer_link_ttl_s=3600.0,
    )
    clarion = build_clarion(settings, clock=clock, waiters=waiters)
    clarion.upgrade()
    try:
        auth = clarion.authentication
        alice, bob, carol = (auth.create_user(name) for name in ("alice", "bob", "carol"))
        headers = {"Authorization": f"Bearer {auth.issue_token(alice.id).token}"}
        host = clarion.storage.host
        shared = host.create_task("shared", host.create_workspace("shared", owner_id="").id)
        private = host.create_task("private", host.create_workspace("mine", owner_id=alice.id).id)
        transport = httpx2.ASGITransport(app=clarion.asgi_app)
        async with httpx2.AsyncClient(transport=transport, base_url=LOCAL_URL) as client:
            sessions = [
                ok(
                    await client.post(
                        f"/api/v1/tasks/{task.id}/sessions", json={}, headers=headers
                    ),
                    201,
                )["id"]
                for task in (shared, private)
            ]
            yield World(
                clarion=clarion,
                clock=clock,
                waiters=waiters,
                client=client,
                alice=Identity.user(alice.id),
                alice_headers=headers,
                bob=Identity.user(bob.id),
                carol=Identity.user(carol.id),
                shared_session=sessions[0],
                private_session=sessions[1],
            )
    finally:
        clarion.close()


def path_of(link: str) -> str:
    assert link.startswith(f"{LOCAL_URL}/answer/"), link
    return link.removeprefix(LOCAL_URL)


def answer_form(*, option: int = 1, text: str = "", count: int = 2) -> dict[str, Any]:
    form: dict[str, Any] = {"action": "answer"}
    for i in range(count):
        form[f"q{i}_options"] = [f"q{i + 1}_opt{option}"]
        form[f"q{i}_text"] = text
    return form


def page_text(response: httpx2.Response) -> str:
    """The page's visible text, tags removed and whitespace collapsed."""
    return " ".join(re.sub(r"<[^>]+>", " ", response.text).split())


def resigned_payload(token: str, **changes: Any) -> str:
    """``token`` with fields of its payload changed but its old signature kept (tampering)."""
    payload, _, signature = token.partition(".")
    body = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    body.update(changes)
    raw = json.dumps(body, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode() + "." + signature


async def test_a_link_answers_a_blocked_wait_and_a_second_link_shows_the_winner(
    world: World,
) -> None:
    """R7, R2: GET changes nothing; the POST answers the agent blocked on ``/wait`` in that
    same call; the second recipient's link then shows the winner, and posting it loses."""
    pending_id = await world.ask(world.shared_session)
    alice_link = path_of(world.links.link_for(world.alice, pending_id))
    bob_link = path_of(world.links.link_for(world.bob, pending_id))
    before = world.stored(pending_id)

    shown = await world.client.get(alice_link)
    assert shown.status_code == 200
    assert shown.headers["content-type"].startswith("text/html")
    assert '<form class="answer-form" method="post"' in shown.text
    assert 'type="checkbox"' in shown.text
    assert 'name="q0_options"' in shown.text
    assert "Skip these questions instead" in shown.text
    assert "<script" not in shown.text
    assert world.stored(pending_id) == before  # a mail scanner's GET answers nothing
    head = await world.client.head(alice_link)
    assert head.status_code == 200
    assert world.stored(pending_id) == before

    waited: dict[str, Any] = {}

    async def agent() -> None:
        response = await world.client.get(
            f"/api/v1/clarification/{pending_id}/wait", headers=world.alice_headers
        )
        waited.update(ok(response))

    async with anyio.create_task_group() as group:
        group.start_soon(agent)
        await world.waiters.entered(pending_id).wait()
        posted = await world.client.post(
            alice_link, data=answer_form(option=2, text="  go  "), headers=FORM
        )
    assert posted.status_code == 200, posted.text
    assert "Your answer was sent to the agent." in page_text(posted)
    assert "Choice 2" in page_text(posted)
    assert waited["pending_id"] == pending_id
    assert "rejected" not in waited
    assert [a["selected_options"] for a in waited["answers"]] == [["q1_opt2"], ["q2_opt2"]]
    assert [a["custom_text"] for a in waited["answers"]] == ["go", "go"]

    bob_page = await world.client.get(bob_link)
    assert bob_page.status_code == 200
    assert "Already answered. This was recorded:" in page_text(bob_page)
    assert "Choice 2" in page_text(bob_page)
    assert "<form" not in bob_page.text
    after = world.stored(pending_id)
    lost = await world.client.post(bob_link, data=answer_form(option=1), headers=FORM)
    assert "Already answered: someone else answered first." in page_text(lost)
    assert "Choice 2" in page_text(lost)
    assert "Choice 1" not in page_text(lost)
    assert world.stored(pending_id) == after

    reused = await world.client.post(alice_link, data=answer_form(option=1), headers=FORM)
    assert "This answer link has already been used." in page_text(reused)
    assert world.stored(pending_id) == after


async def test_tampered_foreign_and_expired_links_change_nothing(world: World) -> None:
    """A flipped byte, another pending id, another recipient, another key ring, expiry."""
    pending_id = await world.ask(world.shared_session)
    other_id = await world.ask(world.shared_session, count=1)
    link = path_of(world.links.link_for(world.alice, pending_id))
    token = link.removeprefix("/answer/")
    flipped = token[:10] + ("A" if token[10] != "A" else "B") + token[11:]
    foreign_signer = LinkSigner((OTHER_KEY,))
    claims = LinkSigner((KEY,)).verify(token)  # the service's ring, to re-sign with another
    assert claims is not None
    before = (world.stored(pending_id), world.stored(other_id))
    bad_tokens = [
        flipped,
        token[:-1],
        token + "x",
        "nonsense",
        resigned_payload(token, p=other_id),
        resigned_payload(token, u=world.bob.user_id),
        resigned_payload(token, e=2**40),
        foreign_signer.sign(claims),
    ]
    for bad in bad_tokens:
        for response in (
            await world.client.get(f"/answer/{bad}"),
            await world.client.post(f"/answer/{bad}", data=answer_form(), headers=FORM),
        ):
            assert response.status_code == 404, bad
            assert "This is not a valid answer link." in page_text(response)
    assert (world.stored(pending_id), world.stored(other_id)) == before

    world.clock.advance(timedelta(hours=1))
    for response in (
        await world.client.get(link),
        await world.client.post(link, data=answer_form(), headers=FORM),
    ):
        assert response.status_code == 410
        assert "This answer link has expired." in page_text(response)
    assert (world.stored(pending_id), world.stored(other_id)) == before


async def test_a_recipient_who_cannot_see_or_is_deactivated_changes_nothing(world: World) -> None:
    """A5: the recipient is re-checked at use — lost visibility or a deactivated user get the
    same safe page, and the bundle stays pending for everyone else."""
    private_id = await world.ask(world.private_session)
    carol_link = path_of(world.links.link_for(world.carol, private_id))
    shared_id = await world.ask(world.shared_session)
    bob_link = path_of(world.links.link_for(world.bob, shared_id))
    assert (await world.client.get(bob_link)).status_code == 200
    assert world.clarion.authentication.deactivate_user(str(world.bob.user_id))
    before = (world.stored(private_id), world.stored(shared_id))
    for link in (carol_link, bob_link):
        for response in (
            await world.client.get(link),
            await world.client.post(link, data=answer_form(), headers=FORM),
        ):
            assert response.status_code == 404
            assert "no longer available to you" in page_text(response)
    assert (world.stored(private_id), world.stored(shared_id)) == before
    alice_link = path_of(world.links.link_for(world.alice, private_id))
    assert (await world.client.get(alice_link)).status_code == 200


async def test_validation_errors_re_render_the_form_and_keep_the_link(world: World) -> None:
    """N6–N8b: nothing chosen, an unknown option, text over 2000 characters → the form again
    with the message next to the field; the link still answers afterwards."""
    pending_id = await world.ask(world.shared_session)
    link = path_of(world.links.link_for(world.alice, pending_id))
    before = world.stored(pending_id)

    empty = await world.client.post(
        link, data={"action": "answer", "q0_text": " ", "q1_text": ""}, headers=FORM
    )
    assert empty.status_code == 400
    assert "Choose an option or write an answer first" in page_text(empty)

    unknown = answer_form()
    unknown["q1_options"] = ["made-up"]
    refused = await world.client.post(link, data=unknown, headers=FORM)
    assert refused.status_code == 400
    assert re.search(r'id="q1-msg"><bdi>answer 2 references unknown option_id', refused.text)
    assert 'value="q1_opt1" checked' in refused.text  # what the person chose is kept

    too_long = answer_form(text="x" * 2001)
    long_page = await world.client.post(link, data=too_long, headers=FORM)
    assert long_page.status_code == 400
    assert re.search(
        r'id="q0-msg"><bdi>At most 2,000 characters, please \(this has 2,001\)', long_page.text
    )
    assert 'aria-invalid="true"' in long_page.text

    long_reason = await world.client.post(
        link, data={"action": "skip", "reason": "y" * 2001}, headers=FORM
    )
    assert long_reason.status_code == 400
    assert re.search(r'id="reason-msg"><bdi>At most 2,000 characters, please', long_reason.text)
    assert world.stored(pending_id) == before

    skipped = await world.client.post(
        link, data={"action": "skip", "reason": "not mine"}, headers=FORM
    )
    assert skipped.status_code == 200
    assert "You skipped this question." in page_text(skipped)
    assert "not mine" in page_text(skipped)
    assert world.stored(pending_id) != before


async def test_the_page_still_reads_its_earlier_field_names(world: World) -> None:
    """#32: the form model names the fields ``q0_options``/``q0_text``; a script written
    against the page's earlier ``q0-options``/``q0-text`` still answers."""
    pending_id = await world.ask(world.shared_session)
    link = path_of(world.links.link_for(world.alice, pending_id))
    legacy = {"action": "answer", "q0-options": ["q1_opt2"], "q1-text": "mine"}
    answered = await world.client.post(link, data=legacy, headers=FORM)
    assert answered.status_code == 200, answered.text
    assert "Your answer was sent to the agent." in page_text(answered)
    assert "mine" in page_text(answered)


async def test_agent_text_is_escaped_and_isolated(world: World) -> None:
    """#14: markup and direction controls an agent wrote stay inert text in isolates."""
    evil = '<script>alert("x")</script>\u202eevil'
    body = {
        "session_id": world.shared_session,
        "questions": [
            {
                "id": "q1",
                "prompt": evil,
                "options": [
                    {"label": evil, "description": evil},
                    {"label": "fine", "description": "plain"},
                ],
            }
        ],
        "context": evil,
    }
    created = ok(
        await world.client.post(
            "/api/v1/clarification/request", json=body, headers=world.alice_headers
        )
    )
    link = path_of(world.links.link_for(world.alice, created["pending_id"]))
    page = await world.client.get(link)
    assert "<script>" not in page.text
    escaped = "<bdi>&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;\u202eevil</bdi>"
    # The context, the prompt, the option's label and its description.
    assert page.text.count(escaped) == 4
    assert page.headers["content-security-policy"].startswith("default-src 'none'")
    assert page.headers["referrer-policy"] == "no-referrer"
    assert page.headers["cache-control"] == "no-store"


async def test_the_gate_takes_forms_on_the_answer_route_only(world: World) -> None:
    """#14's JSON-only rule keeps covering the API; the answer route takes a form only, and
    a cross-site form is still refused by the Origin check."""
    pending_id = await world.ask(world.shared_session)
    link = path_of(world.links.link_for(world.alice, pending_id))
    before = world.stored(pending_id)
    as_json = await world.client.post(link, json={"action": "answer"}, headers=FORM)
    assert as_json.status_code == 415
    assert "application/x-www-form-urlencoded" in as_json.json()["error"]
    cross_site = await world.client.post(
        link, data=answer_form(), headers={"Origin": "https://evil.example"}
    )
    assert cross_site.status_code == 403
    form_on_api = await world.client.post(
        f"/api/v1/clarification/{pending_id}/respond",
        data={"rejected": "true"},
        headers=world.alice_headers,
    )
    assert form_on_api.status_code == 415
    assert world.stored(pending_id) == before
    # A browser that also holds an inbox session cookie is not asked for a CSRF token here:
    # the route reads no cookie at all.
    world.client.cookies.set("clarion_session", "clarion_ses_00000000_" + "x" * 43)
    answered = await world.client.post(link, data=answer_form(), headers=FORM)
    assert answered.status_code == 200, answered.text
    assert "Your answer was sent to the agent." in page_text(answered)


async def test_the_page_sends_no_referrer_and_its_form_still_posts_with_a_null_origin(
    world: World,
) -> None:
    """#29 S5: ``Referrer-Policy: no-referrer`` keeps the token-bearing URL out of every
    ``Referer``; a browser then posts the form with ``Origin: null``, which the gate accepts
    on this route unless ``Sec-Fetch-Site`` says another site sent it."""
    pending_id = await world.ask(world.shared_session)
    link = path_of(world.links.link_for(world.alice, pending_id))
    page = await world.client.get(link)
    assert page.headers["referrer-policy"] == "no-referrer"
    assert '<meta name="referrer" content="no-referrer">' in page.text
    before = world.stored(pending_id)
    for site in ("cross-site", "same-site"):
        refused = await world.client.post(
            link, data=answer_form(), headers={"Origin": "null", "Sec-Fetch-Site": site}
        )
        assert refused.status_code == 403
    refused_api = await world.client.post(
        f"/api/v1/clarification/{pending_id}/respond",
        json={"rejected": True},
        headers={**world.alice_headers, "Origin": "null", "Sec-Fetch-Site": "same-origin"},
    )
    assert refused_api.status_code == 403  # only the form route takes a null origin
    assert world.stored(pending_id) == before
    answered = await world.client.post(
        link, data=answer_form(), headers={"Origin": "null", "Sec-Fetch-Site": "same-origin"}
    )
    assert answered.status_code == 200, answered.text
    assert "Your answer was sent to the agent." in page_text(answered)


async def test_no_log_line_carries_the_link_token(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#29 S5: the request log names the route template and a short hash of the token, never
    the token, on every visit (a mail scanner's GET included) and on the answer."""
    from clarion.adapters.rest import request_log

    capture = structlog.testing.LogCapture()
    logger = structlog.wrap_logger(None, processors=[capture], wrapper_class=structlog.BoundLogger)
    monkeypatch.setattr(request_log, "log", logger)
    pending_id = await world.ask(world.shared_session)
    link = path_of(world.links.link_for(world.alice, pending_id))
    token = link.removeprefix("/answer/")
    await world.client.get(link)
    await world.client.post(link, data=answer_form(), headers=FORM)
    await world.client.get(link + "/trailing")  # a mangled link matches no route
    entries = [entry for entry in capture.entries if entry["event"] == "http_request"][1:]
    assert len(entries) == 3  # after the ask's own request
    assert [entry["route"] for entry in entries] == [
        "/answer/{token}",
        "/answer/{token}",
        "unmatched",
    ]
    hashed = entries[0]["path"]
    assert re.fullmatch(r"/answer/h:[0-9a-f]{12}", hashed)
    assert entries[1]["path"] == hashed  # one link, one hash: visits can be told apart
    assert entries[2]["path"] == hashed + "/trailing"
    signature = token.rpartition(".")[2]
    for text in (token, signature, token[:40]):
        assert text not in repr(capture.entries)


async def test_nul_in_the_form_is_a_400_naming_the_field_on_every_database(world: World) -> None:
    """#29: a NUL character in the form's free text or skip reason (PostgreSQL's text cannot
    hold one) is refused as invalid — the form again, the message next to the field — never a
    store failure; nothing is recorded and the link still answers."""
    pending_id = await world.ask(world.shared_session)
    link = path_of(world.links.link_for(world.alice, pending_id))
    before = world.stored(pending_id)
    text = await world.client.post(link, data=answer_form(text="bad\x00text"), headers=FORM)
    assert text.status_code == 400, text.text
    assert re.search(r'id="q0-msg"><bdi>answer 1 custom_text may not contain NUL', text.text)
    reason = await world.client.post(
        link, data={"action": "skip", "reason": "no\x00"}, headers=FORM
    )
    assert reason.status_code == 400, reason.text
    assert re.search(r'id="reason-msg"><bdi>reason may not contain NUL', reason.text)
    assert world.stored(pending_id) == before
    answered = await world.client.post(link, data=answer_form(text="fine"), headers=FORM)
    assert answered.status_code == 200, answered.text
