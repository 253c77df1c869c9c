"""Issue #33's race over REST: concurrent votes — M of N with several voters, vetoes, repeats,
through ``/decision`` and the generic ``respond`` — on SQLite and PostgreSQL servers; every
request reaches its one terminal state exactly once (anomalies must be 0). The rules are
:func:`tests.integration.rest.approval_race.judge`; ``benchmarks/approval_race.py`` runs more
trials and prints the figures."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tests.integration.rest.approval_race import judge, run_trials, served_race

pytestmark = pytest.mark.server

TRIALS = 12


def test_concurrent_votes_on_sqlite_reach_one_decision(tmp_path: Path) -> None:
    with served_race(f"sqlite:///{tmp_path / 'race.db'}") as race:
        anyio.run(run_trials, race, TRIALS, 33)
    assert race.trials == TRIALS
    assert race.anomalies == []


def test_concurrent_votes_on_postgresql_reach_one_decision(postgres_database_url: str) -> None:
    with served_race(postgres_database_url) as race:
        anyio.run(run_trials, race, TRIALS, 34)
    assert race.trials == TRIALS
    assert race.anomalies == []


def test_the_judge_counts_a_vote_past_the_decision_and_a_double_voter() -> None:
    """The race's rules can fail: a view with a vote recorded after the veto, a voter twice."""
    vote = {"display_name": "", "comment": "", "surface": "rest", "at": None}
    view = {
        "votes": [
            {**vote, "voter": "a", "decision": "deny"},
            {**vote, "voter": "b", "decision": "approve"},
            {**vote, "voter": "b", "decision": "approve"},
        ],
        "required_approvals": 1,
        "decision": "deny",
        "decided_by": {"identity_id": "a"},
        "status": "denied",
    }
    problems = judge(view, [])
    assert any("twice" in problem for problem in problems)
    assert any("past the deciding one" in problem for problem in problems)
    assert any("not the last recorded voter" in problem for problem in problems)
    assert "0 winners" in problems
