"""Contract suite for :class:`clarion.ports.asks.AskRecords` (issue #28)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clarion.domain.asks import AskRecord, AskState, retry_key
from clarion.ports.asks import AskRecords
from clarion.ports.testing.racing import race

_AT = datetime(2026, 7, 1, 12, 0, 0, 123456, tzinfo=UTC)
KEYED = retry_key("idem-1", {})
BY_ARGUMENTS = retry_key("", {"questions": [1]})


def ask_record(
    ask_id: str,
    *,
    owner: str = "alice\ncred",
    scope: str = "agent",
    key: str = BY_ARGUMENTS,
    minutes: int = 0,
    as_task: bool = False,
) -> AskRecord:
    """An open record created ``minutes`` after a fixed instant."""
    return AskRecord(
        id=ask_id,
        owner=owner,
        scope=scope,
        retry_key=key,
        pending_id=f"pending-{ask_id}",
        session_id=f"session-{ask_id}",
        created_at=_AT + timedelta(minutes=minutes),
        as_task=as_task,
    )


class AskRecordsContract:
    """Agent asks. Provide a ``records`` fixture (a fresh, empty store)."""

    def test_a_reserved_record_reads_back_unchanged(self, records: AskRecords) -> None:
        record = ask_record("a1", as_task=True)
        assert records.reserve(record) == record
        assert records.get("a1") == record
        assert records.get("a2") is None
        assert records.find(record.owner, record.scope, record.retry_key) == record

    def test_an_open_key_is_held_by_one_record(self, records: AskRecords) -> None:
        """A second reservation of an open key returns the first record and stores nothing."""
        first = records.reserve(ask_record("a1"))
        assert records.reserve(ask_record("a2", minutes=1)) == first
        assert records.get("a2") is None

    def test_keys_are_per_owner_and_scope(self, records: AskRecords) -> None:
        records.reserve(ask_record("a1"))
        assert records.reserve(ask_record("a2", owner="bob\ncred")).id == "a2"
        assert records.reserve(ask_record("a3", scope="session:s1")).id == "a3"
        assert records.find("carol\ncred", "agent", BY_ARGUMENTS) is None

    def test_move_is_a_compare_and_set(self, records: AskRecords) -> None:
        records.reserve(ask_record("a1"))
        assert records.move("a1", (AskState.OPEN,), AskState.RETURNED) is True
        assert records.move("a1", (AskState.OPEN,), AskState.RETURNED) is False
        assert records.move("missing", (AskState.OPEN,), AskState.CANCELLED) is False
        stored = records.get("a1")
        assert stored is not None
        assert stored.state is AskState.RETURNED
        assert records.move("a1", (AskState.OPEN, AskState.RETURNED), AskState.CANCELLED)

    def test_returned_marks_the_record_and_counts_the_owners_other_open_asks(
        self, records: AskRecords
    ) -> None:
        records.reserve(ask_record("mine", key=retry_key("", {"n": 1})))
        assert records.returned("mine") == 0
        assert records.returned("mine") is None  # not open any more
        assert records.returned("missing") is None
        records.reserve(ask_record("a", key=retry_key("", {"n": 2})))
        records.reserve(ask_record("b", key=retry_key("", {"n": 3})))
        records.reserve(ask_record("task", key=retry_key("", {"n": 4}), as_task=True))
        records.reserve(ask_record("elsewhere", key=retry_key("", {"n": 5}), scope="x"))
        assert records.returned("a") == 1  # b; not the task, not another scope
        stored = records.get("a")
        assert stored is not None
        assert stored.state is AskState.RETURNED

    def test_a_returned_key_is_free_again_unless_it_is_an_idempotency_key(
        self, records: AskRecords
    ) -> None:
        records.reserve(ask_record("a1"))
        records.move("a1", (AskState.OPEN,), AskState.RETURNED)
        assert records.find("alice\ncred", "agent", BY_ARGUMENTS) is None
        assert records.reserve(ask_record("a2", minutes=1)).id == "a2"
        records.reserve(ask_record("k1", key=KEYED))
        records.move("k1", (AskState.OPEN,), AskState.RETURNED)
        found = records.find("alice\ncred", "agent", KEYED)
        assert found is not None
        assert (found.id, found.keyed) == ("k1", True)

    def test_waiting_lists_open_asks_not_made_as_tasks_oldest_first(
        self, records: AskRecords
    ) -> None:
        records.reserve(ask_record("late", key=retry_key("", {"n": 2}), minutes=2))
        records.reserve(ask_record("early", key=retry_key("", {"n": 1}), minutes=1))
        records.reserve(ask_record("task", key=retry_key("", {"n": 3}), as_task=True))
        records.reserve(ask_record("done", key=retry_key("", {"n": 4})))
        records.move("done", (AskState.OPEN,), AskState.RETURNED)
        records.reserve(ask_record("other", key=retry_key("", {"n": 5}), owner="bob\nx"))
        waiting = records.waiting("alice\ncred", "agent", 10)
        assert [record.id for record in waiting] == ["early", "late"]
        assert [record.id for record in records.waiting("alice\ncred", "agent", 1)] == ["early"]

    def test_concurrent_reservations_of_one_key_find_one_record(self, records: AskRecords) -> None:
        """Eight threads reserve one key at once: every one gets the same record back."""
        held = race(8, lambda index: records.reserve(ask_record(f"r{index}")).id)
        assert len(set(held)) == 1
        assert len(held) == 8
