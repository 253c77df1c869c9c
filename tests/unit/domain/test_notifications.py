"""Routing values (issue #17): channels, deadline policies, events, backoff, deep links."""

from __future__ import annotations

from datetime import timedelta

import pytest

from clarion.domain.errors import ValidationError
from clarion.domain.notifications import (
    ROUTE_EVENTS,
    Channel,
    backoff,
    deep_link,
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
