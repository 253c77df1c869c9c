"""Issue #34, the use case: a resume carries the claim's receipt, which is the one made later
from the rows; no receipt while a claim is in flight; a receipt never stands between an
answer and its agent."""

from __future__ import annotations

import anyio
import pytest

from clarion.adapters.receipts import Ed25519KeyRing, Ed25519Verifier
from clarion.domain.errors import NotActive
from clarion.domain.receipts import PublicKey, parse_receipt
from clarion.domain.resolved_by import Surface
from tests.unit.app.world import ALICE, UNSCOPED, AppWorld, answer_all, drafts, make_world

pytestmark = pytest.mark.anyio
RING = Ed25519KeyRing.of([("unit-1", bytes(range(9, 41)))])


class BrokenSigner:
    """A signer whose key cannot be read (a key file gone unreadable, say)."""

    signing_kid = "broken"

    def sign(self, message: bytes) -> bytes:
        raise OSError("receipt key unreadable")

    def public_keys(self) -> tuple[PublicKey, ...]:
        return ()


@pytest.fixture(name="world")
def fixture_world() -> AppWorld:
    return make_world(receipt_signer=RING)


async def test_the_resume_carries_the_receipt_the_rows_give_later(world: AppWorld) -> None:
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(2), "why")
    await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(2, "opt2", text=" t "), surface=Surface.INBOX
    )
    [request] = world.dispatcher.requests
    assert request.receipt is not None
    receipts = world.services.receipts
    assert receipts is not None
    later = await receipts.for_request(ALICE, pending_id)
    assert later == request.receipt
    parsed = parse_receipt(later)
    Ed25519Verifier().verify(parsed, await receipts.public_keys())
    assert parsed.payload["resolved_by"]["surface"] == "inbox"
    assert await receipts.for_answer(pending_id) == later


async def test_no_receipt_while_the_claim_is_being_delivered(world: AppWorld) -> None:
    """A claim in flight may be rolled back (R7a): its outcome is not yet one to attest."""
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    world.dispatcher.mode = "hang"
    receipts = world.services.receipts
    assert receipts is not None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(
            lambda: world.services.resolver.resolve(
                UNSCOPED, pending_id, answer_all(1, "opt1"), surface=Surface.REST
            )
        )
        await world.dispatcher.started.wait()
        with pytest.raises(NotActive):
            await receipts.for_request(ALICE, pending_id)
        assert await receipts.for_answer(pending_id) is None
        world.dispatcher.release.set()
    receipt = await receipts.for_request(ALICE, pending_id)
    assert parse_receipt(receipt).payload["outcome"]["status"] == "answered"


async def test_a_signer_that_fails_never_keeps_the_answer_from_its_agent() -> None:
    world = make_world(receipt_signer=BrokenSigner())
    session = world.session()
    pending_id = await world.services.asking.create(ALICE, session.id, drafts(1), "")
    won = await world.services.resolver.resolve(
        ALICE, pending_id, answer_all(1, "opt1"), surface=Surface.REST
    )
    assert won.claimed is True
    [request] = world.dispatcher.requests
    assert request.receipt is None
    receipts = world.services.receipts
    assert receipts is not None
    assert await receipts.for_answer(pending_id) is None  # the asker's answer goes out bare
