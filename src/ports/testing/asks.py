"""Contract suite for :class:`clarion.ports.asks.AskRecords` (issue #28)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from clarion.domain.asks import AskRecord, AskState, retry_key
from clarion.domain.model import ANSWERED, SessionState
from clarion.ports.asks import AskRecords
from clarion.ports.testing.racing import race
from clarion.ports.testing.world import ContractWorld, answers_for

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
    pending_id: str = "",
) -> AskRecord:
    """An open record created ``minutes`` after a fixed instant, on the bundle
    ``pending_id`` (by default one that does not exist)."""
    return AskRecord(
        id=ask_id,
        owner=owner,
        scope=scope,
        retry_key=key,
        pending_id=pending_id or f"pending-{ask_id}",
        session_id=f"session-{ask_id}",
        created_at=_AT + timedelta(minutes=minutes),
        as_task=as_task,
    )


def asked(records: AskRecords, ask_id: str, pending_id: str, minutes: int) -> None:
    """An open ask of the default owner and scope on the bundle ``pending_id``."""
    records.reserve(
        ask_record(
            ask_id, key=retry_key("", {"ask": ask_id}), minutes=minutes, pending_id=pending_id
        )
    )


def listed(records: AskRecords, limit: int = 10) -> list[str]:
    """The ids :meth:`AskRecords.returned` lists when an ask ``mine`` of the default owner and
    scope is returned (``mine`` is open again afterwards, for the next look)."""
    if records.get("mine") is None:
        records.reserve(ask_record("mine", key=retry_key("", {"ask": "mine"}), minutes=-1))
    earlier = records.returned("mine", limit)
    assert earlier is not None
    assert records.move("mine", (AskState.RETURNED,), AskState.OPEN)
    return [record.id for record in earlier]


def claimed(world: ContractWorld, pending_id: str) -> tuple[str, ...]:
    """Claim ``pending_id`` (answered, option 1) and leave its delivery in flight."""
    result = world.claims.complete_active_bundle(
        pending_id, ANSWERED, answers_for(world.bundle(pending_id))
    )
    assert result.claimed
    return result.claimed_ids


def settled_bundles(world: ContractWorld) -> list[str]:
    """Bundles whose asks no longer wait, each named as its pending id: answered (then
    superseded: the answer stands), cancelled, expired, superseded, on a session that ended
    (no expiry written), and one that does not exist."""
    answered = world.bundle_in_new_session("answered")
    finished = world.claims.finalize_delivery("answered", ANSWERED, claimed(world, "answered"))
    assert finished
    world.host.start_turn(answered.session_id)
    cancelled = world.bundle_in_new_session("cancelled")
    assert world.claims.cancel_active_bundle(cancelled.session_id, "cancelled")
    expired = world.bundle_in_new_session("expired")
    assert world.claims.expire_active_bundle(expired.session_id, "expired")
    superseded = world.bundle_in_new_session("superseded", questions=2)
    world.host.start_turn(superseded.session_id)
    ended = world.bundle_in_new_session("ended")
    assert world.host.set_session_state(ended.session_id, SessionState.FAILED)
    return ["answered", "cancelled", "expired", "superseded", "ended", "gone"]


def waiting_bundles(world: ContractWorld) -> list[str]:
    """Bundles whose asks still wait: pending (two questions), being delivered (the claim may
    yet be restored) and detached from its session."""
    world.bundle_in_new_session("pending", questions=2)
    world.bundle_in_new_session("delivering")
    claimed(world, "delivering")
    detached = world.bundle_in_new_session("detached")
    assert world.claims.detach_active_bundles(detached.session_id)
    return ["pending", "delivering", "detached"]


class AskRecordsContract:
    """Agent asks. Provide a ``records`` fixture (a fresh, empty store) and a ``world``
    fixture whose claim repository keeps its bundles where ``records`` looks for them."""

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

    def test_returned_marks_the_record_and_lists_the_owners_other_open_asks(
        self, records: AskRecords
    ) -> None:
        records.reserve(ask_record("mine", key=retry_key("", {"n": 1})))
        assert records.returned("mine", 10) == ()
        assert records.returned("mine", 10) is None  # not open any more
        assert records.returned("missing", 10) is None
        records.reserve(ask_record("a", key=retry_key("", {"n": 2})))
        b = records.reserve(ask_record("b", key=retry_key("", {"n": 3})))
        records.reserve(ask_record("task", key=retry_key("", {"n": 4}), as_task=True))
        records.reserve(ask_record("elsewhere", key=retry_key("", {"n": 5}), scope="x"))
        assert records.returned("a", 10) == (b,)  # not the task, not another scope
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

    def test_returned_lists_open_asks_not_made_as_tasks_oldest_first(
        self, records: AskRecords
    ) -> None:
        """Their bundles do not exist (gone): none of them waits any more."""
        records.reserve(ask_record("late", key=retry_key("", {"n": 2}), minutes=2))
        records.reserve(ask_record("early", key=retry_key("", {"n": 1}), minutes=1))
        records.reserve(ask_record("task", key=retry_key("", {"n": 3}), as_task=True))
        records.reserve(ask_record("done", key=retry_key("", {"n": 4})))
        records.move("done", (AskState.OPEN,), AskState.RETURNED)
        records.reserve(ask_record("other", key=retry_key("", {"n": 5}), owner="bob\nx"))
        assert listed(records) == ["early", "late"]
        assert listed(records, 1) == ["early"]

    def test_returned_lists_every_ask_whose_bundle_no_longer_waits(
        self, world: ContractWorld, records: AskRecords
    ) -> None:
        names = settled_bundles(world)
        for minutes, name in enumerate(names):
            asked(records, name, name, minutes)
        assert listed(records) == names

    def test_returned_leaves_out_asks_whose_bundle_still_waits(
        self, world: ContractWorld, records: AskRecords
    ) -> None:
        names = waiting_bundles(world)
        world.bundle_in_new_session("later")
        for minutes, name in enumerate([*names, "later"]):
            asked(records, name, name, minutes)
        assert listed(records) == []
        world.claims.finalize_delivery("later", ANSWERED, claimed(world, "later"))
        assert listed(records) == ["later"]

    def test_probe_says_an_ask_waits_only_while_its_bundle_surely_waits(
        self, world: ContractWorld, records: AskRecords
    ) -> None:
        """``probe`` reads the record ``get`` reads; ``waits`` is True for the bundles
        ``returned`` leaves out and False for every one it lists."""
        waiting, settled = waiting_bundles(world), settled_bundles(world)
        for minutes, name in enumerate(waiting + settled):
            asked(records, name, name, minutes)
        records.move("pending", (AskState.OPEN,), AskState.CANCELLED)  # the record's own state
        for name in waiting + settled:
            probe = records.probe(name)
            assert probe is not None
            assert probe.record == records.get(name)
            assert probe.waits is (name in waiting), name
        assert records.probe("unknown") is None

    def test_returned_looks_at_the_oldest_asks_up_to_its_limit(
        self, world: ContractWorld, records: AskRecords
    ) -> None:
        """The limit bounds the asks looked at (the oldest first), not the asks listed."""
        for name in ("w1", "s1", "w2", "s2", "s3"):
            world.bundle_in_new_session(name)
        for name in ("s1", "s2", "s3"):
            world.claims.finalize_delivery(name, ANSWERED, claimed(world, name))
        for minutes, name in enumerate(["w1", "s1", "w2", "s2", "s3"]):
            asked(records, name, name, minutes)
        assert listed(records, 4) == ["s1", "s2"]
        assert listed(records, 1) == []
        assert listed(records) == ["s1", "s2", "s3"]

    def test_concurrent_reservations_of_one_key_find_one_record(self, records: AskRecords) -> None:
        """Eight threads reserve one key at once: every one gets the same record back."""
        held = race(8, lambda index: records.reserve(ask_record(f"r{index}")).id)
        assert len(set(held)) == 1
        assert len(held) == 8
