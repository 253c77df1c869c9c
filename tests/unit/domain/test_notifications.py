"""Routing values (issue #17): channels, deadline policies, events, backoff, deep links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from clarion.domain.errors import ValidationError
from clarion.domain.notifications import (
    ANSWERABLE,
    CANCELLED_EVENT,
    EXPIRED_EVENT,
    RECORDED_EVENTS,
    RESOLVED,
    ROUTE_EVENTS,
    Channel,
    backoff,
    deep_link,
    event_entry,
    event_key,
    parse_channel,
    parse_events,
    parse_on_deadline,
)


def test_channels_parse_into_kind_and_target() -> None:
    assert parse_channel(" Email:alice@example.com ") == Channel("email", "alice@example.com")
    assert (
        str(parse_channel("webhook:https://h.example/x?a=1")) == "webhook:https://h.example/x?a=1"
    )
    assert parse_channel("apprise:ntfys://ntfy.sh/t").target == "ntfys://ntfy.sh/t"


@pytest.mark.parametrize(
    "text",
    ["", "email:", "sms:123", "email:alice", "email:a b@example.com", "webhook:ftp://h/x"],
)
def test_a_bad_channel_is_refused_naming_the_field(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        parse_channel(text)
    assert caught.value.field == "channel"


def test_deadline_policies_are_keep_expire_or_an_explicit_default_option() -> None:
    assert parse_on_deadline("keep") == "keep"
    assert parse_on_deadline(" expire ") == "expire"
    assert parse_on_deadline("default: q1_opt2") == "default:q1_opt2"
    for bad in ("", "default:", "answer", "Keep"):
        with pytest.raises(ValidationError):
            parse_on_deadline(bad)


def test_events_default_to_all_and_keep_their_documented_order() -> None:
    assert parse_events([]) == ROUTE_EVENTS
    assert parse_events(["resolved", "answerable"]) == ("answerable", "resolved")
    with pytest.raises(ValidationError):
        parse_events(["answered"])


def test_backoff_doubles_from_its_base_up_to_its_cap() -> None:
    delays = [backoff(n, 5.0, 60.0) for n in range(1, 7)]
    assert delays == [timedelta(seconds=s) for s in (5, 10, 20, 40, 60, 60)]
    assert backoff(10_000, 5.0, 60.0) == timedelta(seconds=60)


def test_the_deep_link_is_the_inbox_with_the_pending_id_as_fragment() -> None:
    assert deep_link("https://c.example/", "p-1") == "https://c.example/#p-1"


def test_an_event_key_names_one_occurrence() -> None:
    """A bundle becomes answerable, expires or is cancelled once; it is resolved once per
    claim, told apart by the claim's time (whatever time zone it is given in)."""
    at = datetime(2026, 12, 4, 20, 15, 30, 123456, tzinfo=UTC)
    later = at + timedelta(microseconds=1)
    for event in (ANSWERABLE, EXPIRED_EVENT, CANCELLED_EVENT):
        assert event_key(event, "p-1", at) == event_key(event, "p-1", later) == f"{event}:p-1"
    assert event_key(RESOLVED, "p-1", at) == "resolved:p-1:20261204T201530.123456Z"
    assert event_key(RESOLVED, "p-1", at.astimezone(timezone(timedelta(hours=-5)))) == (
        event_key(RESOLVED, "p-1", at)
    )
    assert event_key(RESOLVED, "p-1", later) != event_key(RESOLVED, "p-1", at)
    entry = event_entry("e-1", "p-1", RESOLVED, at)
    assert (entry.due_at, entry.created_at) == (at, at)
    assert entry.idempotency_key == event_key(RESOLVED, "p-1", at)


_instants = st.datetimes(
    min_value=datetime(2000, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)
)


_pending_ids = st.text(min_size=1).filter(lambda text: ":" not in text)
_occurrences = st.tuples(st.sampled_from(RECORDED_EVENTS), _pending_ids, _instants)


@given(first=_occurrences, second=_occurrences)
def test_no_event_key_extends_another_occurrences_key(
    first: tuple[str, str, datetime], second: tuple[str, str, datetime]
) -> None:
    """The worker finds a delivery's origin event by the ``<origin key>:`` prefix its key
    starts with, so no occurrence's key may start with another's and a colon."""
    assert not event_key(*second).startswith(f"{event_key(*first)}:")
