"""``benchmarks/waiters_bench.py`` runs whole at a small size (issue #35's one-node wake): every
parked ask is answered and woken, closed loop and open loop, on each store, and the figures it
prints are the ones it measured."""

from __future__ import annotations

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Engine

import benchmarks.waiters_bench as waiters_bench
from benchmarks.waiters_bench import main
from clarion.adapters.sql.schema import messages


@pytest.mark.parametrize("store", ["memory", "sqlite"])
def test_closed_loop_times_every_parked_ask(store: str) -> None:
    (figures,) = main(["--asks", "40", "--answerers", "4", "--only", store])
    assert figures.timed == 40
    assert 0 < figures.p50_ms <= figures.p99_ms
    assert figures.answers_per_s > 0
    assert figures.kib_per_ask > 0


def test_open_loop_times_only_the_offered_answers_and_wakes_the_rest() -> None:
    # The asks beyond --answered are answered afterwards, unmeasured: the run returns at all
    # only if every parked agent woke.
    (figures,) = main(["--asks", "30", "--only", "sqlite", "--rate", "200", "--answered", "12"])
    assert figures.timed == 12
    assert 0 < figures.p50_ms <= figures.p99_ms


def test_postgresql_runs_with_live_delivery(postgres_server_url: str) -> None:
    flags = ["--asks", "30", "--only", "postgresql", "--rate", "100", "--answered", "10"]
    (figures,) = main([*flags, "--postgres-url", postgres_server_url])
    assert figures.name == "postgresql"
    assert figures.timed == 10


@pytest.mark.parametrize(("flags", "settled"), [([], 1), (["--stale-statistics"], 0)])
def test_the_database_is_settled_between_parking_and_answering(
    monkeypatch: pytest.MonkeyPatch, flags: list[str], settled: int
) -> None:
    """As a live database would be (planner statistics, a checkpointed WAL), unless asked
    not to; the parked asks are all in the database by then."""
    parked_then: list[int] = []

    def settle(engine: Engine) -> None:
        with engine.connect() as connection:
            parked_then.append(
                connection.execute(sa.select(sa.func.count()).select_from(messages)).scalar_one()
            )

    monkeypatch.setattr(waiters_bench, "settle", settle)
    (figures,) = main(
        ["--asks", "12", "--only", "sqlite", "--rate", "200", "--answered", "6", *flags]
    )
    assert parked_then == [12] * settled
    assert figures.timed == 6


def test_bad_flags_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--rate", "-1"])
    assert "--rate must be at least 0" in capsys.readouterr().err
