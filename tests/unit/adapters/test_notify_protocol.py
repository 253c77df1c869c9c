"""The NOTIFY protocol of the PostgreSQL live-delivery adapter: every message survives its
text form, messages too long for one notification are split and rejoined, and what a peer
cannot understand is ignored (rolling upgrades)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from clarion.adapters.postgres_notify import libpq_conninfo
from clarion.adapters.postgres_notify.protocol import (
    MAX_PAYLOAD,
    Bye,
    Cancel,
    CancelSession,
    Encoder,
    Envelope,
    Hello,
    Message,
    Offer,
    Ping,
    Published,
    Reassembler,
    Register,
    Reply,
    Settled,
    Snapshot,
    Unregister,
)
from clarion.adapters.postgres_notify.registry import RemoteEntries
from clarion.domain.model import ANSWERED, REJECTED, Answer, Resolution
from clarion.ports.events import Event
from tests.strategies import astral_text, identifiers, pending_ids, utc_datetimes

resolutions = st.builds(
    Resolution,
    pending_id=pending_ids(),
    status=st.sampled_from((ANSWERED, REJECTED)),
    answers=st.lists(
        st.builds(
            Answer,
            question_id=identifiers(),
            selected_options=st.lists(identifiers(), max_size=3).map(tuple),
            custom_text=astral_text(max_size=60),
        ),
        max_size=4,
    ).map(tuple),
    rejected=st.booleans(),
    reject_reason=astral_text(max_size=30),
    responded_at=utc_datetimes(),
    claimed=st.booleans(),
)

BASE = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)

EXAMPLES: list[Message] = [
    Register("p1", "s1"),
    Unregister("p1"),
    Snapshot((("p1", "s1"), ("p2", "s2"))),
    Hello(),
    Bye(),
    Ping("token"),
    Cancel("p1"),
    CancelSession("s1"),
    Reply("n1", True),
    Reply("n1", False),
    Settled("n1", True),
    Settled("n1", False, "finalize refused"),
    Published(Event("bundle.resolved", "t1", "s1", "p1", {"message_ids": ["m1"], "n": 2})),
]


def _round_trip(message: Message, sender: str = "abc123") -> list[Envelope]:
    reassembler = Reassembler()
    return [
        envelope
        for payload in Encoder(sender).encode(message)
        for envelope in reassembler.feed(payload)
    ]


@pytest.mark.parametrize("message", EXAMPLES, ids=lambda message: type(message).__name__)
def test_every_message_survives_its_text_form(message: Message) -> None:
    assert _round_trip(message) == [Envelope(sender="abc123", message=message)]


@settings(max_examples=50)
@given(resolution=resolutions, timeout=st.floats(0.001, 1e6))
def test_an_offer_carries_the_resolution_exactly(resolution: Resolution, timeout: float) -> None:
    offer = Offer("n1", resolution.pending_id, resolution, timeout)
    assert _round_trip(offer) == [Envelope(sender="abc123", message=offer)]


def test_a_message_too_long_for_one_notification_is_split_and_rejoined() -> None:
    """N8b: four answers of 2000 astral code points are ~100 kB of escaped JSON."""
    text = "\U0001f600" * 2000
    resolution = Resolution(
        pending_id="p1",
        status=ANSWERED,
        answers=tuple(Answer(question_id=f"q{i}", custom_text=text) for i in range(4)),
        rejected=False,
        reject_reason="",
        responded_at=datetime(2026, 1, 2, 3, 4, 5, 6, tzinfo=UTC),
        claimed=True,
    )
    offer = Offer("n1", "p1", resolution, 30.0)
    payloads = Encoder("abc123").encode(offer)
    assert len(payloads) > 1
    assert all(len(payload.encode()) <= MAX_PAYLOAD for payload in payloads)
    assert _round_trip(offer) == [Envelope(sender="abc123", message=offer)]


def test_a_split_message_missing_a_part_is_dropped_and_the_next_one_still_arrives() -> None:
    big = Settled("n1", False, "x" * (3 * MAX_PAYLOAD))
    payloads = Encoder("abc123").encode(big)
    reassembler = Reassembler()
    delivered = [e for payload in payloads[1:] for e in reassembler.feed(payload)]
    assert delivered == []
    follow_up = Encoder("abc123").encode(Hello())
    assert list(reassembler.feed(follow_up[0])) == [Envelope("abc123", Hello())]


def test_equal_messages_get_distinct_payloads() -> None:
    """PostgreSQL delivers identical payloads on one channel once per transaction."""
    encoder = Encoder("abc123")
    assert encoder.encode(Hello()) != encoder.encode(Hello())


def test_unknown_message_types_are_ignored_and_garbage_is_refused() -> None:
    reassembler = Reassembler()
    future = json.dumps({"t": "from_a_newer_version", "i": "abc123", "q": 1})
    assert list(reassembler.feed(future)) == []
    with pytest.raises(ValueError):  # noqa: PT011 - json's decode error is a ValueError
        list(reassembler.feed("not json"))
    with pytest.raises(ValueError):  # noqa: PT011
        list(reassembler.feed("[1, 2]"))


@pytest.mark.parametrize("status", ["pending", "expired", "", "ANSWERED"])
def test_an_offer_whose_resolution_is_not_a_terminal_outcome_is_refused(status: str) -> None:
    """#32: a peer's offer carries a ``ResolutionStatus``; anything else is not this protocol."""
    (payload,) = Encoder("abc123").encode(
        Offer("n1", "p1", Resolution("p1", ANSWERED, (), False, "", BASE, True), 1.0)
    )
    body = json.loads(payload)
    body["r"]["status"] = status
    with pytest.raises(ValueError, match="must be answered or rejected"):
        list(Reassembler().feed(json.dumps(body)))


@pytest.mark.parametrize(
    ("url", "conninfo"),
    [
        (
            "postgresql+psycopg://postgres@127.0.0.1:5432/db",
            "postgresql://postgres@127.0.0.1:5432/db",
        ),
        (
            "postgresql://u:p%40ss@h/db?sslmode=require",
            "postgresql://u:p%40ss@h/db?sslmode=require",
        ),
        ("postgresql+asyncpg://u@h/db", "postgresql://u@h/db"),
    ],
)
def test_database_urls_become_libpq_connection_strings(url: str, conninfo: str) -> None:
    assert libpq_conninfo(url) == conninfo


def test_live_delivery_over_notify_needs_postgresql() -> None:
    with pytest.raises(ValueError, match="PostgreSQL"):
        libpq_conninfo("sqlite:///./clarion.db")


def test_the_view_of_other_processes_forgets_what_they_no_longer_hold() -> None:
    view = RemoteEntries()
    view.add("a", "p1", "s1")
    view.add("b", "p1", "s1")
    view.add("b", "p2", "s2")
    assert (view.has("p1"), view.session_of("p2")) == (True, "s2")
    view.remove("a", "p1")
    assert view.has("p1")
    view.keep_only({"a"})
    assert not view.has("p1")
    assert not view.has("p2")
    view.replace("c", [("p3", "s3"), ("p4", "s3")])
    view.forget_session("s3")
    assert view.instances() == {"a", "c"}
    assert not view.has("p3")
    view.add("c", "p5", "s5")
    assert view.forget("p5")
    assert not view.forget("p5")
    assert view.session_of("p5") is None
