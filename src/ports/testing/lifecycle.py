"""Contract suite for the lifecycle around the claim: finalize and restore (facts §4.6), expire,
cancel and detach (§4.2, §4.3, A9), the workflow guard (§4.10), the pending-action projection
(§4.11, T1) and startup reconciliation."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from clarion.domain.errors import NotFound
from clarion.domain.model import (
    ANSWERED,
    CANCELLED,
    EXPIRED,
    PENDING,
    REJECTED,
    RESUME,
    SessionState,
)
from clarion.ports.claims import ReconcileReport, ResumeRecord
from clarion.ports.testing.world import (
    ContractWorld,
    Replica,
    answers_for,
    claim,
    row_metadata,
    statuses,
)


class ClaimLifecycleContract:
    """Every state change of a bundle other than the claim. Provide a ``world`` fixture."""

    # -- finalize and restore ------------------------------------------------------------

    def test_finalize_clears_the_marker_on_exactly_the_claimed_rows_keeping_updated_at(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        won = claim(world, "p-1")
        world.clock.advance(timedelta(minutes=5))
        finalized = world.claims.finalize_delivery("p-1", ANSWERED, won.claimed_ids)
        assert finalized is not None
        assert sorted(row.id for row in finalized) == sorted(won.claimed_ids)
        for row in world.bundle("p-1").rows:
            assert row.status == ANSWERED
            assert not row.delivery_pending
            assert row.updated_at == won.responded_at
        assert world.claims.finalize_delivery("p-1", ANSWERED, won.claimed_ids) is None

    def test_finalize_refuses_a_different_terminal_status_or_row_set(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        won = claim(world, "p-1")
        assert world.claims.finalize_delivery("p-1", REJECTED, won.claimed_ids) is None
        assert world.claims.finalize_delivery("p-1", ANSWERED, won.claimed_ids[:1]) is None
        assert world.claims.finalize_delivery("p-1", ANSWERED, ()) is None
        assert all(row.delivery_pending for row in world.bundle("p-1").rows)

    def test_a_live_finalize_wakes_the_waiting_session_in_the_same_write(
        self, world: ContractWorld
    ) -> None:
        """R7a with facts §2.3: the delivery to a live asker and its session's return from
        WAITING_FOR_INPUT to RUNNING are one write."""
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        world.host.set_session_state(session.id, SessionState.WAITING_FOR_INPUT)
        won = claim(world, "p-1")
        world.clock.advance(timedelta(seconds=3))
        woken_at = world.clock.peek()
        live = world.claims.finalize_live_delivery("p-1", ANSWERED, won.claimed_ids)
        assert live is not None
        assert sorted(row.id for row in live.rows) == sorted(won.claimed_ids)
        assert all(not row.delivery_pending for row in world.bundle("p-1").rows)
        assert all(row.updated_at == won.responded_at for row in world.bundle("p-1").rows)
        assert live.session is not None
        assert live.session.state == SessionState.RUNNING
        assert live.session.updated_at == woken_at
        stored = world.host.get_session(session.id)
        assert stored is not None
        assert stored.state == SessionState.RUNNING
        assert stored.updated_at == live.session.updated_at

    def test_a_live_finalize_leaves_a_session_in_another_state_alone(
        self, world: ContractWorld
    ) -> None:
        for n, state in enumerate((SessionState.RUNNING, SessionState.COMPLETED)):
            session = world.session()
            world.ask(session.id, f"p-{n}")
            won = claim(world, f"p-{n}")
            world.host.set_session_state(session.id, state)
            before = world.host.get_session(session.id)
            live = world.claims.finalize_live_delivery(f"p-{n}", ANSWERED, won.claimed_ids)
            assert live is not None
            assert live.session is None
            assert not any(row.delivery_pending for row in world.bundle(f"p-{n}").rows)
            assert world.host.get_session(session.id) == before

    def test_a_refused_live_finalize_writes_nothing_not_even_the_session(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        world.host.set_session_state(session.id, SessionState.WAITING_FOR_INPUT)
        won = claim(world, "p-1")
        before = world.host.get_session(session.id)
        assert world.claims.finalize_live_delivery("p-1", REJECTED, won.claimed_ids) is None
        assert world.claims.finalize_live_delivery("p-1", ANSWERED, won.claimed_ids[:1]) is None
        assert world.claims.finalize_live_delivery("p-1", ANSWERED, ()) is None
        assert world.claims.finalize_live_delivery("", ANSWERED, won.claimed_ids) is None
        assert all(row.delivery_pending for row in world.bundle("p-1").rows)
        assert world.host.get_session(session.id) == before
        # and once finalized, a second live finalize is refused the same way
        assert world.claims.finalize_live_delivery("p-1", ANSWERED, won.claimed_ids)
        world.host.set_session_state(session.id, SessionState.WAITING_FOR_INPUT)
        waiting = world.host.get_session(session.id)
        assert world.claims.finalize_live_delivery("p-1", ANSWERED, won.claimed_ids) is None
        assert world.host.get_session(session.id) == waiting

    def test_restore_returns_a_claimed_bundle_to_pending_so_it_can_be_claimed_again(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        world.claims.detach_active_bundles(session.id)
        won = claim(world, "p-1")
        restored = world.claims.restore_active_bundle("p-1", ANSWERED, won.claimed_ids)
        assert restored is not None
        assert len(restored) == 2
        for row in world.bundle("p-1").rows:
            assert row.status == PENDING
            assert row.response is None
            assert not row.delivery_pending
            assert row.detached  # agent_disconnected is kept
        assert claim(world, "p-1").claimed

    def test_restore_refuses_wrong_status_empty_or_duplicate_ids_and_finalized_rows(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        won = claim(world, "p-1")
        ids = won.claimed_ids
        assert world.claims.restore_active_bundle("p-1", REJECTED, ids) is None
        assert world.claims.restore_active_bundle("p-1", ANSWERED, ()) is None
        assert world.claims.restore_active_bundle("p-1", ANSWERED, (ids[0], ids[0])) is None
        world.claims.finalize_delivery("p-1", ANSWERED, ids)
        assert world.claims.restore_active_bundle("p-1", ANSWERED, ids) is None
        assert statuses(world, "p-1") == [ANSWERED, ANSWERED]

    def test_restore_never_reactivates_a_superseded_or_terminal_session_bundle(
        self, world: ContractWorld
    ) -> None:
        superseded = world.session()
        world.ask(superseded.id, "old")
        old = claim(world, "old")
        world.host.start_turn(superseded.id)
        ended = world.session()
        world.ask(ended.id, "ended")
        gone = claim(world, "ended")
        world.host.set_session_state(ended.id, SessionState.COMPLETED)
        assert world.claims.restore_active_bundle("old", ANSWERED, old.claimed_ids) is None
        assert world.claims.restore_active_bundle("ended", ANSWERED, gone.claimed_ids) is None
        assert statuses(world, "old") == [ANSWERED]
        assert statuses(world, "ended") == [ANSWERED]

    # -- expire and detach ---------------------------------------------------------------

    def test_expire_marks_pending_current_rows_expired_and_detached_in_any_session_state(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1", question_id="q1", index=0, status=REJECTED))
        world.raw_row(session.id, row_metadata("p-1", question_id="q2", index=1, status=None))
        world.host.set_session_state(session.id, SessionState.CANCELLED)
        changed = world.claims.expire_active_bundle(session.id, "p-1")
        assert [row.question_id for row in changed] == ["q2"]
        rows = world.bundle("p-1").rows
        assert [row.status for row in rows] == [REJECTED, EXPIRED]
        assert rows[1].detached
        assert not rows[0].detached
        assert world.claims.expire_active_bundle(session.id, "p-1") == ()

    def test_expire_ignores_superseded_rows_and_other_sessions(self, world: ContractWorld) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        world.host.start_turn(session.id)
        assert world.claims.expire_active_bundle(session.id, "p-1") == ()
        other = world.session()
        world.ask(other.id, "p-2")
        assert world.claims.expire_active_bundle(session.id, "p-2") == ()
        assert statuses(world, "p-1") == [PENDING]
        assert statuses(world, "p-2") == [PENDING]

    def test_cancel_marks_pending_current_rows_cancelled_and_detached(
        self, world: ContractWorld
    ) -> None:
        """A9: like expiry but ``cancelled``; terminal siblings and other bundles untouched."""
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1", question_id="q1", index=0, status=ANSWERED))
        world.raw_row(session.id, row_metadata("p-1", question_id="q2", index=1))
        world.ask(session.id, "p-2")
        changed = world.claims.cancel_active_bundle(session.id, "p-1")
        assert [row.question_id for row in changed] == ["q2"]
        rows = world.bundle("p-1").rows
        assert [row.status for row in rows] == [ANSWERED, CANCELLED]
        assert rows[1].detached
        assert not rows[0].detached
        assert statuses(world, "p-2") == [PENDING]
        assert not world.claims.complete_active_bundle("p-1", REJECTED, None).claimed
        assert world.claims.cancel_active_bundle(session.id, "p-1") == ()

    def test_detach_marks_current_pending_rows_once_and_leaves_status_untouched(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        world.raw_row(session.id, row_metadata("legacy", status=None))
        changed = world.claims.detach_active_bundles(session.id)
        assert sorted(row.pending_id for row in changed) == ["legacy", "p-1", "p-1"]
        assert all(row.detached for row in world.bundle("p-1").rows)
        assert world.bundle("legacy").rows[0].status is None
        assert world.claims.detach_active_bundles(session.id) == ()

    def test_detach_skips_superseded_rows_and_rows_already_detached_by_a_truthy_string(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "old")
        world.host.start_turn(session.id)
        world.raw_row(session.id, row_metadata("flagged", agent_disconnected="true"))
        assert world.claims.detach_active_bundles(session.id) == ()
        assert not world.bundle("old").rows[0].detached

    # -- workflow guard, projection, reconciliation --------------------------------------

    def test_active_pending_ids_list_current_turn_bundles_in_creation_order(
        self, world: ContractWorld
    ) -> None:
        """The workflow guard ignores session state but not supersession (facts §1.6)."""
        session = world.session()
        world.ask(session.id, "stale")
        world.host.start_turn(session.id)
        world.ask(session.id, "zeta")
        world.ask(session.id, "alpha")
        world.raw_row(session.id, row_metadata("done", status=ANSWERED))
        assert world.claims.active_pending_ids(session.id) == ("zeta", "alpha")
        world.host.set_session_state(session.id, SessionState.FAILED)
        assert world.claims.session_has_active_bundle(session.id)
        idle = world.session()
        assert world.claims.active_pending_ids(idle.id) == ()
        assert not world.claims.session_has_active_bundle(idle.id)

    def test_pending_actions_name_sessions_blocked_on_an_active_bundle(
        self, world: ContractWorld
    ) -> None:
        """§4.11/T1: superseded, answered and terminal-session bundles project nothing."""
        blocked, superseded, answered, ended, idle = (world.session() for _ in range(5))
        for session in (blocked, superseded, answered, ended):
            world.ask(session.id, f"p-{session.id}")
        world.host.start_turn(superseded.id)
        claim(world, f"p-{answered.id}")
        world.host.set_session_state(ended.id, SessionState.COMPLETED)
        everyone = [s.id for s in (blocked, superseded, answered, ended, idle)] + ["ghost"]
        assert world.claims.pending_actions_for_sessions(everyone) == {blocked.id: "clarification"}
        assert world.claims.pending_actions_for_sessions([]) == {}

    def test_reconcile_finalizes_only_claims_whose_resume_record_exists_and_restores_the_rest(
        self, world: ContractWorld
    ) -> None:
        """Issue #13: a claim is settled by recovery only when the resume it implies exists;
        otherwise it is rolled back — answerable again when still active, merely unclaimed
        when its session ended or a newer turn (one without the resume) superseded it."""
        live, ended, superseded, resumed, delivered = (world.session() for _ in range(5))
        for session in (live, ended, superseded, resumed, delivered):
            world.ask(session.id, f"p-{session.id}")
            claim(world, f"p-{session.id}")
        world.host.set_session_state(ended.id, SessionState.COMPLETED)
        world.host.start_turn(superseded.id)
        # A resume record written before the marker was cleared (a pre-#13 outbox crash).
        world.host.append_message(
            resumed.id,
            turn_id=world.host.start_turn(resumed.id).id,
            content="resume",
            type=RESUME,
            metadata={"pending_id": f"p-{resumed.id}"},
        )
        won = world.bundle(f"p-{delivered.id}").rows
        world.claims.finalize_delivery(f"p-{delivered.id}", ANSWERED, [r.id for r in won])
        report = world.claims.reconcile_undelivered()
        rolled_back = sorted(f"p-{s.id}" for s in (live, ended, superseded))
        assert sorted(report.restored) == rolled_back
        assert report.finalized == (f"p-{resumed.id}",)
        for pending_id in rolled_back:
            [row] = world.bundle(pending_id).rows
            assert (row.status, row.response, row.delivery_pending) == (PENDING, None, False)
        [resumed_row] = world.bundle(f"p-{resumed.id}").rows
        assert resumed_row.status == ANSWERED
        assert resumed_row.response is not None
        assert not resumed_row.delivery_pending
        everyone = [s.id for s in (live, ended, superseded, resumed, delivered)]
        assert world.claims.pending_actions_for_sessions(everyone) == {live.id: "clarification"}
        assert claim(world, f"p-{live.id}").claimed
        assert world.claims.reconcile_undelivered() == ReconcileReport(restored=(f"p-{live.id}",))

    # -- the outbox's one transaction ---------------------------------------------------------

    def test_record_resume_writes_turn_message_and_finalize_together(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        clarification_turn = world.turn(session.id)
        won = claim(world, "p-1")
        resume = ResumeRecord(
            session_id=session.id, task_id=None, prompt="go on", metadata={"pending_id": "p-1"}
        )
        finalized = world.claims.record_resume("p-1", ANSWERED, won.claimed_ids, resume)
        assert finalized is not None
        assert sorted(row.id for row in finalized) == sorted(won.claimed_ids)
        for row in world.bundle("p-1").rows:
            assert (row.status, row.delivery_pending) == (ANSWERED, False)
            assert row.updated_at == won.responded_at
        turn = world.turn(session.id)
        assert turn.id != clarification_turn.id
        [message] = [m for m in world.host.list_messages(session.id) if m.type == RESUME]
        assert (message.turn_id, message.author_type, message.content) == (turn.id, "user", "go on")
        assert message.metadata["pending_id"] == "p-1"
        assert message.task_id == session.task_id
        assert world.claims.reconcile_undelivered() == ReconcileReport()

    def test_record_resume_writes_nothing_unless_it_holds_the_exact_claim(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        turn = world.turn(session.id)
        won = claim(world, "p-1")
        resume = ResumeRecord(
            session_id=session.id, task_id=None, prompt="go on", metadata={"pending_id": "p-1"}
        )
        assert world.claims.record_resume("p-1", REJECTED, won.claimed_ids, resume) is None
        assert world.claims.record_resume("p-1", ANSWERED, won.claimed_ids[:1], resume) is None
        missing = attrs.evolve(resume, session_id="missing")
        with pytest.raises(NotFound):
            world.claims.record_resume("p-1", ANSWERED, won.claimed_ids, missing)
        world.claims.restore_active_bundle("p-1", ANSWERED, won.claimed_ids)
        assert world.claims.record_resume("p-1", ANSWERED, won.claimed_ids, resume) is None
        assert world.turn(session.id).id == turn.id
        assert not [m for m in world.host.list_messages(session.id) if m.type == RESUME]
        assert statuses(world, "p-1") == [PENDING, PENDING]

    def test_reconcile_older_than_leaves_a_delivery_that_may_still_be_in_flight_alone(
        self, world: ContractWorld
    ) -> None:
        """A recovering replica must not undo another replica's delivery in progress."""
        session = world.session()
        world.ask(session.id, "p-fresh")
        claim(world, "p-fresh")
        claimed_at = world.bundle("p-fresh").rows[0].updated_at
        report = world.claims.reconcile_undelivered(claimed_at - timedelta(seconds=1))
        assert report == ReconcileReport()
        assert world.bundle("p-fresh").rows[0].delivery_pending
        report = world.claims.reconcile_undelivered(claimed_at)
        assert report.restored == ("p-fresh",)
        assert statuses(world, "p-fresh") == [PENDING]

    # -- issue #28: recovery by liveness lease ---------------------------------------------

    @staticmethod
    def _replica(world: ContractWorld) -> Replica:
        if world.replica is None:
            pytest.skip("this world starts no replicas (no ProcessLease)")
        return world.replica()

    def test_reconcile_rolls_back_at_once_a_delivery_whose_process_is_gone(
        self, world: ContractWorld
    ) -> None:
        """#28 item 4: a delivery claimed by a process whose lease is free is recovered at
        once, inside the grace period; one claimed by a live process waits for the grace."""
        recoverer, dead, alive = self._replica(world), self._replica(world), self._replica(world)
        session = world.session()
        world.ask(session.id, "p-dead", questions=2)
        world.ask(world.session().id, "p-alive")
        bundle = world.bundle("p-dead")
        dead.claims.complete_active_bundle("p-dead", ANSWERED, answers_for(bundle))
        alive.claims.complete_active_bundle(
            "p-alive", ANSWERED, answers_for(world.bundle("p-alive"))
        )
        claimed_at = world.bundle("p-dead").rows[0].updated_at
        grace = claimed_at - timedelta(seconds=120)
        assert recoverer.claims.reconcile_undelivered(grace) == ReconcileReport()
        dead.end()
        report = recoverer.claims.reconcile_undelivered(grace)
        assert report == ReconcileReport(restored=("p-dead",))
        assert statuses(world, "p-dead") == [PENDING, PENDING]
        assert not any(row.delivery_pending for row in world.bundle("p-dead").rows)
        assert world.claims.active_pending_ids(session.id) == ("p-dead",)
        assert world.bundle("p-alive").rows[0].delivery_pending
        late = world.bundle("p-alive").rows[0].updated_at
        assert recoverer.claims.reconcile_undelivered(late) == ReconcileReport(
            restored=("p-alive",)
        )

    def test_a_gone_process_whose_resume_record_exists_is_finalized_at_once(
        self, world: ContractWorld
    ) -> None:
        """#28 item 4: recovery at once finalizes (not restores) a dead process's delivery that
        already has its resume record."""
        recoverer, dead = self._replica(world), self._replica(world)
        session = world.session()
        world.ask(session.id, "p-1")
        dead.claims.complete_active_bundle("p-1", ANSWERED, answers_for(world.bundle("p-1")))
        world.raw_row(
            session.id, {"pending_id": "p-1"}, turn_id=world.turn(session.id).id, type=RESUME
        )
        dead.end()
        claimed_at = world.bundle("p-1").rows[0].updated_at
        report = recoverer.claims.reconcile_undelivered(claimed_at - timedelta(seconds=120))
        assert report == ReconcileReport(finalized=("p-1",))
        assert statuses(world, "p-1") == [ANSWERED]
        assert not world.bundle("p-1").rows[0].delivery_pending

    def test_a_delivery_whose_process_was_not_recorded_keeps_the_grace(
        self, world: ContractWorld
    ) -> None:
        """#28 item 4: a claim made without a lease (older rows, SQLite) names no process, so
        recovery never takes it for a dead one; nor does a repository without a lease judge
        anyone's process."""
        recoverer, dead = self._replica(world), self._replica(world)
        world.ask(world.session().id, "p-unrecorded")
        world.ask(world.session().id, "p-dead")
        claim(world, "p-unrecorded")  # world.claims holds no lease
        dead.claims.complete_active_bundle("p-dead", ANSWERED, answers_for(world.bundle("p-dead")))
        dead.end()
        claimed_at = world.bundle("p-unrecorded").rows[0].updated_at
        grace = claimed_at - timedelta(seconds=120)
        assert world.claims.reconcile_undelivered(grace) == ReconcileReport()
        assert recoverer.claims.reconcile_undelivered(grace) == ReconcileReport(
            restored=("p-dead",)
        )
        assert world.bundle("p-unrecorded").rows[0].delivery_pending

    def test_a_finished_delivery_forgets_its_process(self, world: ContractWorld) -> None:
        """#28 item 4: the process leaves with the marker — a bundle restored, claimed again
        without a lease and its first process gone, is not recovered early."""
        recoverer, first = self._replica(world), self._replica(world)
        world.ask(world.session().id, "p-1")
        won = first.claims.complete_active_bundle("p-1", ANSWERED, answers_for(world.bundle("p-1")))
        assert world.claims.restore_active_bundle("p-1", ANSWERED, won.claimed_ids) is not None
        claim(world, "p-1")  # no lease: no process recorded
        first.end()
        claimed_at = world.bundle("p-1").rows[0].updated_at
        report = recoverer.claims.reconcile_undelivered(claimed_at - timedelta(seconds=120))
        assert report == ReconcileReport()
        assert world.bundle("p-1").rows[0].delivery_pending
