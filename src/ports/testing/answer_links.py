"""Contract suite for :class:`clarion.ports.answer_links.AnswerLinkStore`."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clarion.ports.answer_links import AnswerLinkStore, LinkUse
from clarion.ports.testing.racing import race

_AT = datetime(2026, 7, 1, 12, 0, 0, 123456, tzinfo=UTC)


def link_use(link_id: str, *, expires_in: timedelta = timedelta(days=7)) -> LinkUse:
    """A use of link ``link_id`` at a fixed instant."""
    return LinkUse(
        link_id=link_id,
        pending_id=f"pending-{link_id}",
        user_id="user-1",
        used_at=_AT,
        expires_at=_AT + expires_in,
    )


class AnswerLinkStoreContract:
    """Single use of answer links. Provide a ``store`` fixture (a fresh, empty store)."""

    def test_a_link_is_consumed_once(self, store: AnswerLinkStore) -> None:
        use = link_use("n1")
        assert store.find("n1") is None
        assert store.consume(use) is True
        assert store.consume(use) is False
        assert store.consume(link_use("n1", expires_in=timedelta(days=1))) is False
        assert store.find("n1") == use

    def test_links_are_independent(self, store: AnswerLinkStore) -> None:
        assert store.consume(link_use("n1"))
        assert store.consume(link_use("n2"))
        assert store.find("n3") is None

    def test_a_released_link_can_be_consumed_again(self, store: AnswerLinkStore) -> None:
        assert store.consume(link_use("n1"))
        assert store.release("n1") is True
        assert store.find("n1") is None
        assert store.release("n1") is False
        assert store.consume(link_use("n1")) is True

    def test_purge_deletes_only_expired_uses(self, store: AnswerLinkStore) -> None:
        store.consume(link_use("old", expires_in=timedelta(hours=1)))
        store.consume(link_use("new", expires_in=timedelta(days=2)))
        assert store.purge(_AT + timedelta(minutes=59)) == 0
        assert store.purge(_AT + timedelta(days=1)) == 1
        assert store.find("old") is None
        assert store.find("new") is not None

    def test_concurrent_consumers_have_one_winner(self, store: AnswerLinkStore) -> None:
        """Many threads consuming one link at once: exactly one is told it was unused."""
        results = race(8, lambda _racer: store.consume(link_use("race")))
        assert sorted(results) == [False] * 7 + [True]
