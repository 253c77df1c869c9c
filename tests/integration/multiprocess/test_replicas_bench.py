"""``benchmarks/replicas_bench.py --quick`` runs whole (issue #35): two replicas on a scratch
PostgreSQL database, agents of every kind parked and each woken by its answer from another
replica, with the event streams, the webhook and every figure the bench prints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.replicas_bench import KINDS, advised_poll_s, main, parked_share


def test_the_quick_run_wakes_every_agent_and_reports_every_figure(
    postgres_server_url: str, tmp_path: Path
) -> None:
    out = tmp_path / "figures.json"
    assert main(["--quick", "--admin-url", postgres_server_url, "--json", str(out)]) == 0
    figures = json.loads(out.read_text())
    sizes = figures["sizes"]
    assert figures["errors"] == []
    assert figures["answers"] == sizes["agents"] >= len(KINDS)
    assert figures["answers_per_s"] > 0
    # The parking's own notifications were delivered before anything was measured.
    assert figures["parking_notifications_left"] == 0
    assert figures["parking_notified_s"] >= 0
    # Then the planner statistics a deployment's autovacuum would have gathered by now.
    assert figures["settled_s"] > 0
    assert 0 < figures["wake_ms"]["p50"] <= figures["wake_ms"]["p99"]
    assert figures["task_wake_ms"]["p50"] > 0
    assert sizes["task_poll"] is None  # as each task advises
    assert figures["server_cpu_ms_per_answer"] > 0
    assert figures["database_cpu_ms_per_answer"] >= 0
    assert figures["client_cpu_ms_per_s"] > 0
    assert figures["cores_busy"]["window"] > 0
    assert figures["cores_busy"]["of"] >= 1
    assert len(figures["memory_kib_per_agent"]) == sizes["replicas"]
    assert figures["list_ms"]["load_samples"] >= 1
    assert figures["floor_updates_per_s"] > 0
    assert figures["streams_connected"] == sizes["streams"]
    assert figures["events_received"] > 0
    assert figures["webhooks_received"] > 0
    # The background the window carried: the emptied fleet's, and the share still parked.
    assert 0 < figures["parked_share"] < 1
    assert figures["emptied_cpu_ms_per_s"]["server"] > 0
    assert "server_cpu_ms_per_answer_carried" in figures
    assert "database_cpu_ms_per_answer_carried" in figures


@pytest.mark.parametrize(
    ("task", "seconds"),
    [
        ({"pollIntervalMs": 2000}, 2.0),
        ({"pollIntervalMs": 250.0}, 0.25),
        ({}, 1.0),
        ({"pollIntervalMs": 0}, 1.0),
        ({"pollIntervalMs": -5}, 1.0),
        ({"pollIntervalMs": True}, 1.0),
        ({"pollIntervalMs": "2000"}, 1.0),
    ],
)
def test_task_agents_poll_as_their_task_advises(task: dict[str, object], seconds: float) -> None:
    """The bench's task agents are well-behaved clients of the tasks extension: they poll at
    the ``pollIntervalMs`` the task advises (Clarion advises 2 s), 1 s when it advises none
    usable, unless ``--task-poll`` says otherwise."""
    assert advised_poll_s(task) == seconds


@pytest.mark.parametrize(
    ("woke", "share"),
    [
        ([], 0.0),  # no fleet
        ([10.0, 10.0], 0.0),  # everyone woke at the start
        ([20.0, 20.0], 1.0),  # nobody woke before the end
        ([15.0], 0.5),
        ([12.0, 18.0], 0.5),  # answered evenly over the window: half of it on average
        ([0.0], 1.0),  # never woke (0): counts to the end
        ([5.0, 25.0], 0.5),  # woke before the window (0) and after its end (capped at 1)
    ],
)
def test_the_parked_share_counts_each_agent_until_it_woke(woke: list[float], share: float) -> None:
    """The window [10, 20]: the background it carried shrinks as its agents wake (#35)."""
    assert parked_share(woke, 10.0, 20.0) == pytest.approx(share)


def test_an_empty_window_has_no_parked_share() -> None:
    assert parked_share([15.0], 10.0, 10.0) == 0.0
