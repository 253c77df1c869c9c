"""The event stream encodes each event once for all its streams (issue #35) and still sends
every stream exactly the frame of the event it got."""

from __future__ import annotations

import pytest

from clarion.adapters.rest import events as events_module
from clarion.adapters.rest.events import RecentFrames, event_frame
from clarion.ports.events import Event


def _event(number: int) -> Event:
    return Event(
        kind="bundle.resolved",
        task_id="t1",
        session_id="s1",
        pending_id=f"p{number}",
        data={"message_ids": [f"m{number}"], "statuses": ["answered"]},
    )


def test_one_event_sent_on_many_streams_is_encoded_once(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[Event] = []

    def counting(event: Event) -> bytes:
        encoded.append(event)
        return event_frame(event)

    monkeypatch.setattr(events_module, "event_frame", counting)
    frames = RecentFrames()
    first, second = _event(1), _event(2)
    sent = [frames.frame(event) for _ in range(30) for event in (first, second)]
    assert encoded == [first, second]
    assert sent[:2] == [event_frame(first), event_frame(second)]
    assert set(sent) == {event_frame(first), event_frame(second)}


def test_an_equal_event_published_again_is_encoded_again_and_old_ones_are_forgotten() -> None:
    frames = RecentFrames(size=2)
    first = _event(1)
    assert frames.frame(first) == event_frame(first)
    again = _event(1)  # a new publish of the same content: its own object
    assert frames.frame(again) == event_frame(again)
    for number in range(2, 6):
        assert frames.frame(_event(number)) == event_frame(_event(number))
    assert frames.frame(first) == event_frame(first)
    assert len(frames._recent) <= 2
