"""Contract suite for :class:`clarion.ports.ClaimRepository`: bundle creation and reads, and the
claim itself (upstream facts §4.5; spec D2, D4, M5, P1, R1, R2, R2b, L12), composed with the
lifecycle and list suites into :class:`ClaimRepositoryContract`."""

from __future__ import annotations

from datetime import timedelta

import attrs
import pytest

from clarion.domain.errors import ClaimError, NotFound
from clarion.domain.listing import Visibility
from clarion.domain.model import (
    ANSWERED,
    EXPIRED,
    PENDING,
    REJECTED,
    Answer,
    SessionState,
)
from clarion.domain.replay import replay_winner
from clarion.domain.rows import ASKED_BY_ASK, ASKED_BY_REQUEST, Asker, Bundle, question_json
from clarion.ports.claims import ClaimResult
from clarion.ports.testing.history import (
    ClosedHistoryContract,
    PendingSummaryContract,
    ResolvedListContract,
)
from clarion.ports.testing.lifecycle import ClaimLifecycleContract
from clarion.ports.testing.listing import ListActiveBundlesContract
from clarion.ports.testing.racing import race
from clarion.ports.testing.resolved import ResolvedByContract
from clarion.ports.testing.world import (
    ContractWorld,
    answers_for,
    claim,
    row_metadata,
    sample_questions,
    statuses,
)

RACERS = 8
RACE_ROUNDS = 4


def racer_answers(bundle: Bundle, racer: int) -> dict[str, Answer]:
    """Each racer submits a different answer, so the replay shows who won."""
    return answers_for(bundle, 1 + racer % 2, f"racer {racer}")


def race_claims(world: ContractWorld, bundle: Bundle, racers: int) -> list[ClaimResult]:
    """Start ``racers`` threads at one barrier, each claiming ``bundle`` once."""
    return race(
        racers,
        lambda racer: world.claims.complete_active_bundle(
            bundle.pending_id, ANSWERED, racer_answers(bundle, racer)
        ),
    )


class ClaimTransitionsContract:
    """Creating, reading and claiming bundles. Subclass and provide a ``world`` fixture."""

    # -- create and load -----------------------------------------------------------------

    def test_create_bundle_writes_one_pending_row_per_question_on_the_current_turn(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        bundle = world.ask(session.id, "p-1", questions=3, context="ctx")
        loaded = world.bundle("p-1")
        assert loaded == bundle
        assert [row.question_id for row in loaded.rows] == ["q1", "q2", "q3"]
        assert loaded.questions == sample_questions(3)
        assert {row.turn_id for row in loaded.rows} == {world.turn(session.id).id}
        assert all(row.status == PENDING and not row.detached for row in loaded.rows)
        assert loaded.session_id == session.id
        assert loaded.task_id == session.task_id
        assert loaded.context == "ctx"
        assert all(row.created_at.tzinfo is not None for row in loaded.rows)

    def test_create_bundle_in_a_missing_session_raises_not_found(
        self, world: ContractWorld
    ) -> None:
        with pytest.raises(NotFound):
            world.claims.create_bundle(
                pending_id="p-1",
                session_id="no-such-session",
                task_id="t",
                questions=sample_questions(1),
                context="",
            )

    def test_create_bundle_stores_its_asker_on_every_row_and_transitions_keep_it(
        self, world: ContractWorld
    ) -> None:
        """Issue #13: who asked is durable, so every replica reads it from the store."""
        session = world.session()
        alice = Asker(user_id="alice", via=ASKED_BY_REQUEST)
        world.ask(session.id, "asked", questions=2, asker=alice)
        world.ask(session.id, "by-ask", asker=Asker(user_id="bob", via=ASKED_BY_ASK))
        world.ask(session.id, "unknown")
        loaded = world.bundle("asked")
        assert loaded.asker == alice
        assert [row.asker for row in loaded.rows] == [alice, alice]
        assert world.bundle("by-ask").asker == Asker(user_id="bob", via=ASKED_BY_ASK)
        assert world.bundle("unknown").asker is None
        assert claim(world, "asked").claimed
        assert world.bundle("asked").asker == alice
        world.claims.detach_active_bundles(session.id)
        assert world.bundle("by-ask").asker == Asker(user_id="bob", via=ASKED_BY_ASK)

    def test_count_active_asked_counts_one_askers_active_bundles_up_to_the_limit(
        self, world: ContractWorld
    ) -> None:
        """Issue #14: the per-identity limit counts the active bundles that identity asked
        (anyone's with ``None``), bundles not rows, and stops at ``limit``."""
        alice = Asker(user_id="alice", via=ASKED_BY_REQUEST)
        session = world.session()
        world.ask(session.id, "a1", questions=3, asker=alice)
        world.ask(session.id, "a2", asker=Asker(user_id="alice", via=ASKED_BY_ASK))
        world.ask(session.id, "b1", asker=Asker(user_id="bob", via=ASKED_BY_REQUEST))
        world.ask(session.id, "legacy")
        world.ask(session.id, "answered", asker=alice)
        assert claim(world, "answered").claimed
        superseded = world.session()
        world.ask(superseded.id, "old", asker=alice)
        world.host.start_turn(superseded.id)
        ended = world.session()
        world.ask(ended.id, "ended", asker=alice)
        world.host.set_session_state(ended.id, SessionState.COMPLETED)
        assert world.claims.count_active_asked("alice", 10) == 2
        assert world.claims.count_active_asked("alice", 2) == 2
        assert world.claims.count_active_asked("alice", 1) == 1
        assert world.claims.count_active_asked("alice", 0) == 0
        assert world.claims.count_active_asked("bob", 10) == 1
        assert world.claims.count_active_asked("carol", 10) == 0
        assert world.claims.count_active_asked(None, 10) == 4
        assert world.claims.count_active_asked(None, 3) == 3
        world.claims.expire_active_bundle(session.id, "a1")
        assert world.claims.count_active_asked("alice", 10) == 1

    def test_count_active_in_session_counts_what_active_pending_ids_lists_up_to_the_limit(
        self, world: ContractWorld
    ) -> None:
        """Issue #15: the per-session limit is a bounded count of the session's active
        bundles (the workflow-guard reading: no session-state check), bundles not rows."""
        session = world.session()
        world.ask(session.id, "s1", questions=3)
        world.ask(session.id, "s2")
        world.ask(session.id, "answered")
        assert claim(world, "answered").claimed
        world.ask(world.session().id, "elsewhere")
        assert world.claims.count_active_in_session(session.id, 10) == 2
        assert world.claims.count_active_in_session(session.id, 2) == 2
        assert world.claims.count_active_in_session(session.id, 1) == 1
        assert world.claims.count_active_in_session(session.id, 0) == 0
        assert world.claims.count_active_in_session("no-such-session", 10) == 0
        world.host.set_session_state(session.id, SessionState.COMPLETED)
        assert world.claims.count_active_in_session(session.id, 10) == len(
            world.claims.active_pending_ids(session.id)
        )
        world.claims.expire_active_bundle(session.id, "s1")
        assert world.claims.count_active_in_session(session.id, 10) == 1
        world.host.start_turn(session.id)
        assert world.claims.count_active_in_session(session.id, 10) == 0

    def test_active_limit_reached_agrees_with_the_two_counts(self, world: ContractWorld) -> None:
        """Issues #14, #15: create's limits in one call, exactly the bounded counts' verdicts —
        also where rows outnumber bundles (three questions), rows lie on a superseded turn or
        an ended session, and for the identity alone (``session_id`` None)."""
        alice = Asker(user_id="alice", via=ASKED_BY_REQUEST)
        session = world.session()
        world.ask(session.id, "a1", questions=3, asker=alice)
        world.ask(session.id, "b1", questions=3, asker=Asker(user_id="bob", via=ASKED_BY_ASK))
        superseded = world.session()
        world.ask(superseded.id, "old", questions=2, asker=alice)
        world.host.start_turn(superseded.id)
        ended = world.session()
        world.ask(ended.id, "ended", questions=2, asker=alice)
        world.host.set_session_state(ended.id, SessionState.COMPLETED)
        reached = world.claims.active_limit_reached
        for session_id in (session.id, superseded.id, ended.id, "no-such-session", None):
            for asker_id in ("alice", "bob", "carol", None):
                for per_session in (0, 1, 2, 3, 4):
                    for per_identity in (0, 1, 2, 3, 4):
                        expected: str | None = None
                        if session_id is not None and (
                            world.claims.count_active_in_session(session_id, per_session)
                            >= per_session
                        ):
                            expected = "session"
                        elif world.claims.count_active_asked(asker_id, per_identity) >= (
                            per_identity
                        ):
                            expected = "identity"
                        found = reached(session_id, per_session, asker_id, per_identity)
                        assert found == expected, (session_id, asker_id, per_session, per_identity)
        # Six rows but two bundles in the session; alice's other rows are not active.
        assert reached(session.id, 3, "alice", 2) is None
        assert reached(session.id, 2, None, 2) == "session"
        assert reached(None, 2, None, 2) == "identity"  # a1, b1 (old and ended are not active)
        assert reached(None, 2, None, 3) is None

    def test_find_active_duplicate_finds_the_first_active_bundle_with_equal_questions(
        self, world: ContractWorld
    ) -> None:
        """Facts §2.7: prompts and options compared, ids and titles ignored; creation order."""
        session = world.session()
        world.ask(session.id, "one", questions=1)
        world.ask(session.id, "two", questions=2)
        world.ask(session.id, "again", questions=2)
        renamed = tuple(attrs.evolve(q, id=f"x{q.id}", title="other") for q in sample_questions(2))
        assert world.claims.find_active_duplicate(session.id, renamed) == "two"
        assert world.claims.find_active_duplicate(session.id, sample_questions(1)) == "one"
        assert world.claims.find_active_duplicate(session.id, sample_questions(3)) is None
        assert world.claims.find_active_duplicate(world.session().id, sample_questions(1)) is None

    def test_find_active_duplicate_skips_bundles_that_are_no_longer_active(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "answered", questions=1)
        assert claim(world, "answered").claimed
        assert world.claims.find_active_duplicate(session.id, sample_questions(1)) is None
        world.ask(session.id, "superseded", questions=1)
        world.host.start_turn(session.id)
        assert world.claims.find_active_duplicate(session.id, sample_questions(1)) is None
        world.ask(session.id, "current", questions=1)
        assert world.claims.find_active_duplicate(session.id, sample_questions(1)) == "current"

    def test_find_active_duplicate_reads_a_bundle_grown_by_appended_rows(
        self, world: ContractWorld
    ) -> None:
        """A row appended later (legacy writers) changes the bundle's question set."""
        session = world.session()
        world.ask(session.id, "grown", questions=1)
        second = question_json(sample_questions(2)[1])
        world.raw_row(session.id, row_metadata("grown", question_id="q2", index=1, question=second))
        assert world.claims.find_active_duplicate(session.id, sample_questions(1)) is None
        assert world.claims.find_active_duplicate(session.id, sample_questions(2)) == "grown"

    def test_load_bundle_of_an_unknown_pending_id_is_none(self, world: ContractWorld) -> None:
        assert world.claims.load_bundle("nope") is None

    def test_lookups_by_pending_id_see_clarification_rows_only(self, world: ContractWorld) -> None:
        """Upstream §9.17: a permission row sharing the namespace is not a bundle."""
        session = world.session()
        world.raw_row(session.id, {"pending_id": "perm-1"}, type="permission_request")
        assert world.claims.load_bundle("perm-1") is None

    def test_load_bundle_orders_rows_by_question_index_then_created_at_then_id(
        self, world: ContractWorld
    ) -> None:
        """D2 is total even with duplicate or missing ``question_index``."""
        session = world.session()
        late = world.raw_row(session.id, row_metadata("p-1", question_id="a", index=1))
        first = world.raw_row(session.id, row_metadata("p-1", question_id="b", index=None))
        second = world.raw_row(session.id, row_metadata("p-1", question_id="c", index=0))
        assert [row.id for row in world.bundle("p-1").rows] == [first.id, second.id, late.id]

    def test_load_bundle_resolves_an_empty_row_task_id_from_the_session(
        self, world: ContractWorld
    ) -> None:
        """M5: legacy rows carry task_id ""; the session's task id is the answer."""
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1"), task_id="")
        bundle = world.bundle("p-1")
        assert bundle.rows[0].task_id == ""
        assert bundle.task_id == session.task_id

    # -- the read of one bundle for a caller (issue #14) ------------------------------------

    def test_load_visible_bundle_follows_the_lists_visibility(self, world: ContractWorld) -> None:
        """L1c, M5a, A5a: own, unowned, empty and dangling workspaces are visible; a foreign
        workspace, a missing task and an unknown id all read as None; unscoped sees all."""
        mine, theirs = world.workspace("mine", "me"), world.workspace("theirs", "them")
        unowned = world.workspace("unowned", "")
        world.bundle_in_new_session("mine", workspace_id=mine.id)
        world.bundle_in_new_session("theirs", workspace_id=theirs.id)
        world.bundle_in_new_session("unowned", workspace_id=unowned.id)
        world.bundle_in_new_session("empty-ws")
        world.bundle_in_new_session("dangling", workspace_id="no-such-workspace")
        session = world.session(workspace_id=mine.id)
        world.ask(session.id, "no-task", task_id="no-such-task")
        everything = ("mine", "theirs", "unowned", "empty-ws", "dangling", "no-task")
        for visibility, seen in (
            (Visibility.owned_by("me"), {"mine", "unowned", "empty-ws", "dangling"}),
            (Visibility.only({mine.id}), {"mine", "empty-ws", "dangling"}),
            (Visibility.only(frozenset()), {"empty-ws", "dangling"}),
            (Visibility.everything(), set(everything)),
        ):
            for pending_id in (*everything, "never-created", ""):
                found = world.claims.load_visible_bundle(pending_id, visibility)
                if pending_id in seen:
                    assert found == world.claims.load_bundle(pending_id), (visibility, pending_id)
                else:
                    assert found is None, (visibility, pending_id)

    def test_load_visible_bundle_judges_the_task_m5_resolves(self, world: ContractWorld) -> None:
        """M5: legacy rows without a task id are judged by the session's task; a malformed
        bundle spread over two sessions by its D2-first row's session, wherever its other rows
        lie and whichever row was written first."""
        mine, theirs = world.workspace("mine", "me"), world.workspace("theirs", "them")
        own, foreign = world.session(workspace_id=mine.id), world.session(workspace_id=theirs.id)
        me = Visibility.owned_by("me")
        world.raw_row(own.id, row_metadata("legacy-mine"), task_id="")
        world.raw_row(foreign.id, row_metadata("legacy-theirs"), task_id="")
        assert world.claims.load_visible_bundle("legacy-mine", me) == world.bundle("legacy-mine")
        assert world.claims.load_visible_bundle("legacy-theirs", me) is None
        for pending_id, first, second in (
            ("split-mine", own, foreign),
            ("split-theirs", foreign, own),
        ):
            world.raw_row(second.id, row_metadata(pending_id, question_id="b", index=1), task_id="")
            world.raw_row(first.id, row_metadata(pending_id, question_id="a", index=0), task_id="")
        assert world.bundle("split-mine").task_id == own.task_id
        assert world.claims.load_visible_bundle("split-mine", me) == world.bundle("split-mine")
        assert world.bundle("split-theirs").task_id == foreign.task_id
        assert world.claims.load_visible_bundle("split-theirs", me) is None

    # -- the claim -----------------------------------------------------------------------

    def test_an_answer_claims_every_pending_row_and_stores_each_response(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        bundle = world.ask(session.id, "p-1", questions=2)
        responses = answers_for(bundle, option=2, text="because")
        result = world.claims.complete_active_bundle("p-1", ANSWERED, responses)
        assert result.claimed
        assert sorted(result.claimed_ids) == sorted(row.id for row in bundle.rows)
        after = world.bundle("p-1")
        for row in after.rows:
            assert row.status == ANSWERED
            assert row.response == responses[row.question_id]
            assert row.delivery_pending
            assert row.updated_at == result.responded_at
        assert {row.id: row for row in result.rows} == {row.id: row for row in after.rows}

    def test_a_rejection_claims_without_writing_any_response(self, world: ContractWorld) -> None:
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        result = world.claims.complete_active_bundle("p-1", REJECTED, None)
        assert result.claimed
        assert all(
            row.status == REJECTED and row.response is None for row in world.bundle("p-1").rows
        )

    def test_a_second_claim_loses_and_writes_nothing(self, world: ContractWorld) -> None:
        """R1/R2: exactly one claim; the loser changes nothing."""
        session = world.session()
        world.ask(session.id, "p-1", questions=2)
        assert claim(world, "p-1").claimed
        before = world.bundle("p-1")
        lost = world.claims.complete_active_bundle("p-1", REJECTED, None)
        assert lost == ClaimResult(claimed=False)
        assert lost.responded_at is None
        assert lost.claimed_ids == ()
        assert world.bundle("p-1") == before

    def test_the_claim_refuses_a_terminal_status_other_than_answered_or_rejected(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        with pytest.raises(ValueError, match="terminal"):
            world.claims.complete_active_bundle("p-1", "cancelled", None)
        assert statuses(world, "p-1") == [PENDING]

    def test_an_unknown_pending_id_never_claims(self, world: ContractWorld) -> None:
        assert not world.claims.complete_active_bundle("nope", REJECTED, None).claimed

    def test_a_superseded_bundle_never_claims(self, world: ContractWorld) -> None:
        """D4 conjunct 2: a newer turn supersedes without any write (facts §4.4)."""
        session = world.session()
        world.ask(session.id, "p-1")
        world.host.start_turn(session.id)
        assert not claim(world, "p-1").claimed
        assert statuses(world, "p-1") == [PENDING]

    def test_a_bundle_of_a_terminal_session_never_claims(self, world: ContractWorld) -> None:
        """D4 conjunct 3, for each terminal state."""
        for index, state in enumerate(sorted(SessionState.TERMINAL)):
            session = world.session()
            world.ask(session.id, f"p-{index}")
            world.host.set_session_state(session.id, state)
            assert not claim(world, f"p-{index}").claimed, state
            assert statuses(world, f"p-{index}") == [PENDING]

    def test_an_expired_bundle_never_claims(self, world: ContractWorld) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        world.claims.expire_active_bundle(session.id, "p-1")
        assert not claim(world, "p-1").claimed
        assert statuses(world, "p-1") == [EXPIRED]

    def test_malformed_bundles_never_claim(self, world: ContractWorld) -> None:
        """The malformed guard: one pending id across turns, sessions or message types."""
        one = world.session()
        world.raw_row(one.id, row_metadata("turns", question_id="q1"))
        world.host.start_turn(one.id)
        world.raw_row(one.id, row_metadata("turns", question_id="q2"))
        other = world.session(one.task_id)
        world.raw_row(one.id, row_metadata("sessions", question_id="q1"))
        world.raw_row(other.id, row_metadata("sessions", question_id="q2"))
        world.raw_row(one.id, row_metadata("types"))
        world.raw_row(one.id, {"pending_id": "types"}, type="permission_request")
        for pending_id in ("turns", "sessions", "types"):
            assert not world.claims.complete_active_bundle(pending_id, REJECTED, None).claimed
            assert all(row.is_pending for row in world.bundle(pending_id).rows), pending_id

    def test_a_mixed_legacy_bundle_claims_only_its_pending_rows(self, world: ContractWorld) -> None:
        """Facts §4.5, L12: terminal siblings are left exactly as they were."""
        session = world.session()
        done = world.raw_row(
            session.id,
            row_metadata(
                "p-1",
                question_id="q1",
                index=0,
                status=ANSWERED,
                response={"question_id": "q1", "selected_options": ["q1_opt2"]},
            ),
        )
        world.raw_row(session.id, row_metadata("p-1", question_id="q2", index=1))
        world.raw_row(session.id, row_metadata("p-1", question_id="q3", index=2, status=None))
        before = world.bundle("p-1").rows[0]
        responses = {qid: Answer(question_id=qid, custom_text="x") for qid in ("q1", "q2", "q3")}
        result = world.claims.complete_active_bundle("p-1", ANSWERED, responses)
        assert result.claimed
        assert done.id not in result.claimed_ids
        assert len(result.claimed_ids) == 2
        rows = world.bundle("p-1").rows
        assert rows[0] == before
        assert [row.status for row in rows] == [ANSWERED, ANSWERED, ANSWERED]
        assert rows[1].response == responses["q2"]
        assert rows[2].response == responses["q3"]

    def test_a_bundle_whose_only_row_has_an_unknown_status_never_claims(
        self, world: ContractWorld
    ) -> None:
        """D3: an unrecognized status is not pending."""
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1", status="responding-ish"))
        assert not world.claims.complete_active_bundle("p-1", REJECTED, None).claimed

    def test_a_detached_bundle_still_claims(self, world: ContractWorld) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        world.claims.detach_active_bundles(session.id)
        assert claim(world, "p-1").claimed

    def test_claiming_a_row_without_a_question_id_raises_and_writes_nothing(
        self, world: ContractWorld
    ) -> None:
        """R4a: the claim aborts as a whole (L16 keeps such bundles out of reach)."""
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1", question_id="q1", index=0))
        world.raw_row(
            session.id, row_metadata("p-1", question_id=None, question={"prompt": "?"}, index=1)
        )
        with pytest.raises(ClaimError):
            world.claims.complete_active_bundle("p-1", REJECTED, None)
        assert statuses(world, "p-1") == [PENDING, PENDING]

    def test_an_answer_missing_a_response_for_a_claimed_question_raises_and_writes_nothing(
        self, world: ContractWorld
    ) -> None:
        session = world.session()
        bundle = world.ask(session.id, "p-1", questions=2)
        partial = {"q1": answers_for(bundle)["q1"]}
        with pytest.raises(ClaimError):
            world.claims.complete_active_bundle("p-1", ANSWERED, partial)
        assert statuses(world, "p-1") == [PENDING, PENDING]

    def test_a_nested_only_question_id_is_claimed_under_that_id(self, world: ContractWorld) -> None:
        """Fixes upstream §9.13: the claim reads question ids like every other reader."""
        session = world.session()
        world.raw_row(session.id, row_metadata("p-1", question_id=None, question={"id": "nested"}))
        answer = Answer(question_id="nested", custom_text="ok")
        assert world.claims.complete_active_bundle("p-1", ANSWERED, {"nested": answer}).claimed
        assert world.bundle("p-1").rows[0].response == answer

    def test_the_claim_stamps_rows_with_the_repository_clock(self, world: ContractWorld) -> None:
        session = world.session()
        world.ask(session.id, "p-1")
        start = world.clock.peek() + timedelta(hours=1)
        world.clock.set(start)
        result = claim(world, "p-1")
        assert result.responded_at is not None
        assert start <= result.responded_at < start + timedelta(seconds=1)
        assert result.responded_at.tzinfo is not None
        assert result.responded_at.utcoffset() == timedelta(0)
        assert result.responded_at == result.rows[0].updated_at

    def test_a_loser_replays_the_winner_with_the_same_responded_at(
        self, world: ContractWorld
    ) -> None:
        """R2b and upstream §9.18: one timestamp for winner and loser."""
        session = world.session()
        bundle = world.ask(session.id, "p-1", questions=2)
        won = world.claims.complete_active_bundle("p-1", ANSWERED, answers_for(bundle, 2, "w"))
        assert not claim(world, "p-1", option=1).claimed
        replay = replay_winner("p-1", world.bundle("p-1").rows)
        assert replay is not None
        assert replay.status == ANSWERED
        assert replay.responded_at == won.responded_at
        assert replay.answers == tuple(answers_for(bundle, 2, "w").values())

    def test_exactly_one_of_many_concurrent_claims_wins(self, world: ContractWorld) -> None:
        """R1: N racers per round; one ``claimed=True``; every loser replays the winner."""
        for round_number in range(RACE_ROUNDS):
            pending_id = f"race-{round_number}"
            bundle = world.bundle_in_new_session(pending_id, questions=2)
            results = race_claims(world, bundle, RACERS)
            winners = [racer for racer, result in enumerate(results) if result.claimed]
            assert len(winners) == 1, results
            winner = results[winners[0]]
            replay = replay_winner(pending_id, world.bundle(pending_id).rows)
            assert replay is not None
            assert replay.responded_at == winner.responded_at
            assert replay.answers == tuple(racer_answers(bundle, winners[0]).values())

    def test_the_claim_is_recorded_in_message_metadata_with_no_resolutions_store(
        self, world: ContractWorld
    ) -> None:
        """P1: no ``clarification_resolutions`` store; the transcript carries the outcome."""
        names = {name.lower() for name in world.storage_names()}
        assert names, "storage_names() must name the implementation's stores"
        assert "clarification_resolutions" not in names
        session = world.session()
        world.ask(session.id, "p-1")
        claim(world, "p-1")
        (message,) = world.host.list_messages(session.id)
        assert message.metadata["status"] == ANSWERED
        assert message.metadata["response"]["selected_options"] == ["q1_opt1"]


class ClaimRepositoryContract(
    ClaimTransitionsContract,
    ClaimLifecycleContract,
    ListActiveBundlesContract,
    ResolvedByContract,
    ResolvedListContract,
    ClosedHistoryContract,
    PendingSummaryContract,
):
    """The whole :class:`clarion.ports.ClaimRepository` contract: the claim, the lifecycle
    around it, the list query, the record of who resolved, and the resolved list with its
    closed bundles."""


__all__ = ["ClaimRepositoryContract", "ClaimTransitionsContract", "race_claims"]
