"""AnswerLinks on the composed in-memory service: issuing, key rotation, single use under
races, release when nothing was recorded, the synthetic recipient, closed bundles, purging."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import anyio
import attrs
import pytest

from clarion.app.root.compose import Clarion, build_clarion
from clarion.app.root.settings import Settings
from clarion.app.usecases.answer_links import (
    NOT_RECORDED,
    AnswerLinks,
    LinkClaims,
    LinkPage,
    LinkSigner,
    LinkState,
)
from clarion.domain.errors import InvalidOutcome
from clarion.domain.model import ANSWERED, Answer, Identity, Outcome
from clarion.domain.questions import OptionDraft, QuestionDraft
from clarion.domain.rows import ClarificationRow
from clarion.ports.answer_links import LinkUse
from clarion.ports.resume import ResumeRefused, ResumeRequest
from clarion.ports.testing import ManualClock

pytestmark = pytest.mark.anyio

KEY_A, KEY_B = bytes(range(32)), bytes(range(100, 132))
START = datetime(2026, 7, 1, 9, 0, tzinfo=UTC)
DRAFT = QuestionDraft(
    prompt="Which database?",
    options=(OptionDraft("SQLite", "embedded"), OptionDraft("PostgreSQL", "server")),
)


@attrs.define
class FlakyDispatcher:
    """Refuses the first ``refusals`` resumes, then accepts (the caller finalizes)."""

    refusals: int = 0
    accepted: list[str] = attrs.field(factory=list)

    async def dispatch(self, request: ResumeRequest) -> tuple[ClarificationRow, ...] | None:
        if self.refusals > 0:
            self.refusals -= 1
            raise ResumeRefused("not now")
        self.accepted.append(request.pending_id)
        return None


@attrs.define
class World:
    clarion: Clarion
    clock: ManualClock
    dispatcher: FlakyDispatcher
    alice: Identity
    session_id: str

    @property
    def links(self) -> AnswerLinks:
        return self.clarion.answer_links

    async def ask(self) -> str:
        return await self.clarion.services.asking.create(
            self.alice, self.session_id, [DRAFT], "context"
        )


def make_world(*, auth_enabled: bool = True) -> World:
    clock, dispatcher = ManualClock(START), FlakyDispatcher()
    settings = Settings(
        database_url="memory://", auth_enabled=auth_enabled, answer_link_keys=(KEY_A,)
    )
    clarion = build_clarion(settings, clock=clock, dispatcher=dispatcher)
    alice = clarion.authentication.create_user("alice")
    host = clarion.storage.host
    task = host.create_task("t", host.create_workspace("w", owner_id=alice.id).id)
    session, _ = host.create_session(task.id)
    return World(clarion, clock, dispatcher, Identity.user(alice.id), session.id)


@pytest.fixture(name="world")
def fixture_world() -> Iterator[World]:
    world = make_world()
    yield world
    world.clarion.close()


def choose(option: str) -> Outcome:
    return Outcome.answer(Answer(question_id="q1", selected_options=(option,)))


def token_of(link: str) -> str:
    return link.rsplit("/answer/", 1)[1]


def test_a_rotated_ring_verifies_old_links_and_signs_with_its_first_key() -> None:
    claims = LinkClaims("u1", False, "p1", START, "nonce")
    old = LinkSigner((KEY_A,)).sign(claims)
    rotated = LinkSigner((KEY_B, KEY_A))
    assert rotated.verify(old) == claims
    assert LinkSigner((KEY_B,)).verify(old) is None
    new = rotated.sign(claims)
    assert LinkSigner((KEY_B,)).verify(new) == claims
    assert LinkSigner((KEY_A,)).verify(new) is None


B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def other_spellings(token: str) -> list[str]:
    """The token with its signature's last character replaced by each character that decodes
    to the same bytes (a 32-byte signature leaves two bits of its last character unused)."""
    position = B64URL.index(token[-1])
    first = position - position % 4
    return [token[:-1] + B64URL[i] for i in range(first, first + 4) if i != position]


async def test_only_the_canonical_spelling_of_a_signature_verifies(world: World) -> None:
    """#29 S13: a link whose last signature character is changed to a base64 neighbour that
    decodes to the same bytes is not a valid link (one spelling per signature)."""
    pending_id = await world.ask()
    token = token_of(world.links.link_for(world.alice, pending_id))
    signer = LinkSigner((KEY_A,))
    assert signer.verify(token) is not None
    variants = other_spellings(token)
    assert len(variants) == 3
    signature = token.rpartition(".")[2]
    for variant in variants:
        lenient = base64.urlsafe_b64decode(variant.rpartition(".")[2] + "=")
        assert lenient == base64.urlsafe_b64decode(signature + "=")  # the same bytes
        assert signer.verify(variant) is None
        assert (await world.links.view(variant)).state is LinkState.INVALID


def test_a_ring_needs_long_keys() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        LinkSigner((b"short",))


def test_a_ring_refuses_a_degenerate_key() -> None:
    """#29: an all-zero key is refused however the signer is built (not only from settings)."""
    with pytest.raises(ValueError, match="key 2 is degenerate"):
        LinkSigner((KEY_A, bytes(32)))


def test_a_link_is_absolute_url_safe_and_unique(world: World) -> None:
    first = world.links.link_for(world.alice, "p1")
    second = world.links.link_for(world.alice, "p1")
    assert first.startswith("http://127.0.0.1:8765/answer/")
    assert first != second  # each carries its own nonce
    assert set(token_of(first)) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_."
    )


def test_a_link_needs_a_recipient_and_a_bundle(world: World) -> None:
    with pytest.raises(ValueError, match="user id"):
        world.links.link_for(Identity.internal(), "p1")
    with pytest.raises(ValueError, match="pending id"):
        world.links.link_for(world.alice, "")


async def test_one_link_posted_twice_at_once_answers_once(world: World) -> None:
    """Single use: of two submissions of one link racing, one is recorded and the other is
    told the link was used (with the winner's answer when it is already visible)."""
    pending_id = await world.ask()
    token = token_of(world.links.link_for(world.alice, pending_id))
    pages: list[LinkPage] = []

    async def submit(option: str) -> None:
        pages.append(await world.links.answer(token, choose(option)))

    async with anyio.create_task_group() as group:
        group.start_soon(submit, "q1_opt1")
        group.start_soon(submit, "q1_opt2")
    winner = next(page for page in pages if page.state is LinkState.RECORDED)
    loser = next(page for page in pages if page is not winner)
    assert loser.state in (LinkState.USED, LinkState.ANSWERED)
    assert loser.link_used
    assert world.dispatcher.accepted == [pending_id]
    again = await world.links.view(token)
    assert (again.state, again.link_used) == (LinkState.ANSWERED, True)
    assert again.resolution is not None
    assert winner.resolution is not None
    assert again.resolution.answers == winner.resolution.answers


async def test_two_links_racing_have_one_winner(world: World) -> None:
    """R2 through links: the loser's page carries the winner's answer, ``claimed`` False."""
    pending_id = await world.ask()
    tokens = [token_of(world.links.link_for(world.alice, pending_id)) for _ in range(2)]
    pages: list[LinkPage] = []

    async def submit(token: str, option: str) -> None:
        pages.append(await world.links.answer(token, choose(option)))

    async with anyio.create_task_group() as group:
        group.start_soon(submit, tokens[0], "q1_opt1")
        group.start_soon(submit, tokens[1], "q1_opt2")
    by_state = {page.state: page for page in pages}
    assert set(by_state) == {LinkState.RECORDED, LinkState.ANSWERED}
    won, lost = by_state[LinkState.RECORDED].resolution, by_state[LinkState.ANSWERED].resolution
    assert won is not None
    assert lost is not None
    assert (won.claimed, lost.claimed) == (True, False)
    assert lost.answers == won.answers
    assert not by_state[LinkState.ANSWERED].link_used


async def test_an_answer_not_recorded_releases_the_link(world: World) -> None:
    """R7a: the resume was refused, the bundle is answerable again — and so is the link."""
    pending_id = await world.ask()
    token = token_of(world.links.link_for(world.alice, pending_id))
    world.dispatcher.refusals = 1
    failed = await world.links.answer(token, choose("q1_opt1"))
    assert (failed.state, failed.message) == (LinkState.FAILED, NOT_RECORDED)
    assert (await world.links.view(token)).state is LinkState.OPEN
    recorded = await world.links.answer(token, choose("q1_opt2"))
    assert recorded.state is LinkState.RECORDED
    assert recorded.resolution is not None
    assert recorded.resolution.status == ANSWERED


async def test_an_invalid_outcome_does_not_consume_the_link(world: World) -> None:
    pending_id = await world.ask()
    token = token_of(world.links.link_for(world.alice, pending_id))
    with pytest.raises(InvalidOutcome) as raised:
        await world.links.answer(token, choose("nope"))
    assert raised.value.field == "answers[0].selected_options"
    assert (await world.links.view(token)).state is LinkState.OPEN


async def test_a_bundle_that_ended_unanswered_shows_closed(world: World) -> None:
    pending_id = await world.ask()
    token = token_of(world.links.link_for(world.alice, pending_id))
    await world.clarion.services.lifecycle.set_session_state(
        world.alice, world.session_id, "COMPLETED"
    )
    assert (await world.links.view(token)).state is LinkState.CLOSED
    late = await world.links.answer(token, choose("q1_opt1"))
    assert late.state is LinkState.CLOSED
    assert late.message == (  # #30: told why
        "This question was closed without an answer: the session ended. Nothing was recorded."
    )
    assert (await world.links.view(token)).state is LinkState.CLOSED  # released: nothing used


async def test_a_synthetic_recipient_only_while_authentication_is_off() -> None:
    """Without authentication the synthetic identity may get links; a service that
    authenticates refuses them (the same keys, the same bundle)."""
    open_world = make_world(auth_enabled=False)
    strict_world = make_world(auth_enabled=True)
    try:
        pending_id = await open_world.ask()
        link = open_world.links.link_for(Identity.synthetic_admin(), pending_id)
        assert (await open_world.links.view(token_of(link))).state is LinkState.OPEN
        strict_link = strict_world.links.link_for(Identity.synthetic_admin(), pending_id)
        page = await strict_world.links.view(token_of(strict_link))
        assert page.state is LinkState.UNAVAILABLE
    finally:
        open_world.clarion.close()
        strict_world.clarion.close()


async def test_an_operator_route_gets_links_only_while_authentication_is_off() -> None:
    """#29: an e-mail route that acts for no user (the internal caller) gets links for the
    synthetic identity while authentication is off — they answer — and none once it is on."""
    open_world = make_world(auth_enabled=False)
    try:
        pending_id = await open_world.ask()
        link = open_world.links.link_for(Identity.internal(), pending_id)
        assert (await open_world.links.view(token_of(link))).state is LinkState.OPEN
        page = await open_world.links.answer(token_of(link), choose("q1_opt1"))
        assert page.state is LinkState.RECORDED
    finally:
        open_world.clarion.close()


async def test_an_answer_purges_the_uses_of_expired_links(world: World) -> None:
    store = world.clarion.storage.answer_links
    assert store is not None
    old = LinkUse("old", "p0", "u0", START - timedelta(days=9), START - timedelta(days=2))
    assert store.consume(old)
    pending_id = await world.ask()
    token = token_of(world.links.link_for(world.alice, pending_id))
    assert (await world.links.answer(token, choose("q1_opt1"))).state is LinkState.RECORDED
    assert store.find("old") is None


async def test_an_agent_link_is_used_only_signed_in_as_its_asker_and_records_agent_client(
    world: World,
) -> None:
    """Issue #31 URL mode: the MCP spec forbids a pre-authenticated URL and requires the server
    to check who opens it. Nobody signed in is asked to sign in, another user gets what a
    question they may not see gets, and the asker's answer is the agent client's."""
    pending_id = await world.ask()
    link = world.links.agent_link_for(world.alice, pending_id, ttl=timedelta(minutes=5))
    token = token_of(link)
    bob = Identity.user(world.clarion.authentication.create_user("bob").id)
    assert (await world.links.view(token)).state is LinkState.SIGN_IN
    assert (await world.links.view(token, bob)).state is LinkState.UNAVAILABLE
    refused = await world.links.answer(token, choose(f"{pending_id}_unused"), bob)
    assert refused.state is LinkState.UNAVAILABLE
    assert (await world.links.view(token, world.alice)).state is LinkState.OPEN
    bundle = await world.clarion.services.resolver.authorize_bundle(world.alice, pending_id)
    option = bundle.questions[0].options[0].option_id
    page = await world.links.answer(token, choose(option), world.alice)
    assert page.state is LinkState.RECORDED
    bundle = await world.clarion.services.resolver.authorize_bundle(world.alice, pending_id)
    assert {row.resolved_by.surface.value for row in bundle.rows if row.resolved_by} == {
        "agent_client"
    }


async def test_an_agent_link_expires_with_its_own_lifetime_and_an_email_link_needs_no_sign_in(
    world: World,
) -> None:
    pending_id = await world.ask()
    agent = token_of(world.links.agent_link_for(world.alice, pending_id, ttl=timedelta(seconds=30)))
    email = token_of(world.links.link_for(world.alice, pending_id))
    assert (await world.links.view(email)).state is LinkState.OPEN
    world.clock.advance(timedelta(seconds=31))
    assert (await world.links.view(agent, world.alice)).state is LinkState.EXPIRED
    assert (await world.links.view(email)).state is LinkState.OPEN
    with pytest.raises(ValueError, match="lifetime must be positive"):
        world.links.agent_link_for(world.alice, pending_id, ttl=timedelta(0))


async def test_without_authentication_an_agent_link_opens_for_anyone() -> None:
    world = make_world(auth_enabled=False)
    try:
        pending_id = await world.ask()
        link = world.links.agent_link_for(Identity.synthetic_admin(), pending_id, ttl=timedelta(1))
        assert (await world.links.view(token_of(link))).state is LinkState.OPEN
    finally:
        world.clarion.close()
