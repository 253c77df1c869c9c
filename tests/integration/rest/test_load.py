"""A short, bounded run of ``benchmarks/load_bench.py``'s mix against a served application:
listing, answering, waiting and event streams at once never produce a 5xx (issue #14)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.load_bench import run_load
from tests.integration.mcp.harness import McpWorld, serving


@pytest.mark.anyio
async def test_a_mixed_load_gets_no_server_error_and_every_wait_its_answer(
    tmp_path: Path,
) -> None:
    world = McpWorld.build(f"sqlite:///{tmp_path / 'clarion.db'}", auth_enabled=False)
    async with serving(world) as served:
        tally = await run_load(served.base_url, clients=24, seconds=3)
    print(f"\nstatuses {dict(tally.statuses)}, by role {dict(tally.by_role)}")
    assert sum(tally.statuses.values()) > 0
    assert tally.server_errors == 0
    assert tally.transport_errors == 0
    assert tally.wrong_answers == 0
    assert set(tally.statuses) <= {200, 429}
