"""Reading the durable truth when notifications may have been lost.

A process that could not hear for a while (its listening connection dropped) asks the claim
repository what became of the bundles it holds waiters for. The rows say everything needed:
whether a claim's delivery is still in flight (``response_delivery_pending``), finished (the
rows are answered or rejected and the marker is gone), or was rolled back (pending again).
"""

from __future__ import annotations

import enum

from clarion.app.usecases.runner import Runner
from clarion.domain.rows import Bundle
from clarion.ports.claims import ClaimRepository
from clarion.ports.threads import Offload


class Settlement(enum.Enum):
    """Where a bundle's claim stands, as its rows tell."""

    UNKNOWN = "unknown"  # no durable rows (not written yet, or gone)
    IN_FLIGHT = "in_flight"  # claimed; the winner's delivery has not finished
    SETTLED = "settled"  # claimed and delivered (finalized)
    OPEN = "open"  # not claimed, or the claim was rolled back


def settlement(bundle: Bundle | None) -> Settlement:
    if bundle is None:
        return Settlement.UNKNOWN
    if any(row.delivery_pending for row in bundle.rows):
        return Settlement.IN_FLIGHT
    if any(row.is_resolved for row in bundle.rows):
        return Settlement.SETTLED
    return Settlement.OPEN


class DurableReads:
    """The repository reads live delivery needs, run on worker threads (the ports are sync)."""

    def __init__(self, claims: ClaimRepository, offload: Offload | None) -> None:
        """``offload`` runs the reads (a Runner of its own when None)."""
        self._claims = claims
        self._run: Offload = offload if offload is not None else Runner()

    async def bundle(self, pending_id: str) -> Bundle | None:
        return await self._run(self._claims.load_bundle, pending_id)

    async def is_active(self, pending_id: str, session_id: str) -> bool:
        """Pending on the session's current turn (D4, without the session-state check)."""
        return pending_id in await self._run(self._claims.active_pending_ids, session_id)
