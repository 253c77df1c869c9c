"""#28: a retried ask reads its bundle's progress in one snapshot.

Found while building #31's recorded ``input_required`` rounds on PostgreSQL: ``attach`` read the
bundle, then — in a second read — the session's active bundles. A REST answer claimed between
the two made a bundle that was being answered look closed, so the retry ended with
``WAIT_ENDED`` instead of the answer. These tests put the claim exactly there.
"""

from __future__ import annotations

from typing import Any

import pytest

from clarion.adapters.memory import InMemoryClaimRepository
from clarion.adapters.memory.asks import InMemoryAskRecords
from clarion.app.usecases.agent_asks import AgentAsks, Asker, session_scope
from clarion.domain.asks import AskRecord
from clarion.domain.model import ANSWERED, Answer
from clarion.ports.claims import ClaimRepository

from .world import ALICE, AppWorld, drafts, make_world

pytestmark = pytest.mark.anyio

_READS = ("load_bundle", "reread_bundle", "load_visible_bundle", "active_pending_ids")


class ClaimAfterFirstRead:
    """The in-memory repository; right after the first read of the bundle's state, someone
    else claims the bundle (and, with ``deliver``, finishes its delivery)."""

    def __init__(self, inner: InMemoryClaimRepository, *, deliver: bool) -> None:
        self.inner = inner
        self.deliver = deliver
        self.armed = ""

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name not in _READS:
            return attribute

        def read(*args: Any, **kwargs: Any) -> Any:
            result = attribute(*args, **kwargs)
            if self.armed:
                pending_id, self.armed = self.armed, ""
                self._claim(pending_id)
            return result

        return read

    def _claim(self, pending_id: str) -> None:
        won = self.inner.complete_active_bundle(
            pending_id,
            ANSWERED,
            {"q1": Answer(question_id="q1", selected_options=("q1_opt1",))},
        )
        assert won.claimed
        if self.deliver:
            assert self.inner.finalize_delivery(pending_id, ANSWERED, won.claimed_ids)


async def _offered(
    world: AppWorld, claims: ClaimAfterFirstRead
) -> tuple[AgentAsks, Asker, AskRecord]:
    typed: ClaimRepository = claims
    services = world.services_over(typed, ask_records=InMemoryAskRecords())
    asks = services.agent_asks
    assert asks is not None
    session = world.session()
    asker = Asker.of(ALICE, "token", session_scope(session.id))
    record = await asks.offer(asker, "key", session.id, drafts(1), "")
    return asks, asker, record


@pytest.mark.parametrize("deliver", [True, False], ids=["delivered", "claim-in-flight"])
async def test_a_claim_between_reads_never_makes_an_answered_ask_look_closed(
    deliver: bool,
) -> None:
    world = make_world()
    claims = ClaimAfterFirstRead(world.memory_claims, deliver=deliver)
    asks, asker, record = await _offered(world, claims)
    claims.armed = record.pending_id

    status = await asks.status(asker, record.id)

    assert status.progress.value != "ended", "the bundle being answered was reported closed"
    if deliver:  # the replay reaches the retry
        answered = await asks.attach(asker, record, progress_interval=60)
        assert answered.result.pending_id == record.pending_id
        assert not answered.result.rejected
        assert answered.result.answers["q1"].selected_options == ("q1_opt1",)
