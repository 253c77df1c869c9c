"""Receipts (issue #34): the signed record of a resolution, made from the stored claim.

Nothing is stored for a receipt: it is made from the bundle's durable rows whenever it is
asked for (:func:`clarion.domain.receipts.bundle_receipt_payload`), and Ed25519 signs
deterministically, so every surface — the asking agent's MCP result, the resume record,
``GET /api/v1/clarification/{id}/receipt``, ``clarion audit export`` — hands out the same
bytes for one resolution while the signing key stays the same.

A receipt exists once the claim has *settled* (its delivery confirmed, no row still marked
``response_delivery_pending``): a claim in flight may still be rolled back (R7a) and another
answer win, and a receipt must never attest an outcome that did not stand. The one exception is
the claim's own delivery (:meth:`Receipts.of_claim`): the resume record and the asking agent
receive the receipt of exactly what they are being delivered.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import attrs
import structlog

from clarion.app.usecases.access import authorize_bundle
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.errors import NotActive, failure_fields
from clarion.domain.history import is_settled
from clarion.domain.model import Answer, Identity
from clarion.domain.receipts import (
    PublicKey,
    ReceiptPayload,
    bundle_kind_and_digest,
    bundle_receipt_payload,
    signed_receipt,
)
from clarion.domain.resolved_by import ResolvedBy
from clarion.domain.rows import Bundle
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.receipts import ReceiptSigner

log = structlog.get_logger(__name__)

RECEIPT_FAILED = "failed to read clarification receipt"
NOT_RESOLVED = "clarification request has no receipt: it is not resolved"


def sign_receipt(signer: ReceiptSigner, payload: ReceiptPayload) -> dict[str, Any]:
    """``payload`` signed by ``signer``'s signing key, as every surface hands it out."""
    return signed_receipt(payload, signer.signing_kid, signer.sign(payload.signed_bytes()))


def settled_receipt(signer: ReceiptSigner, bundle: Bundle) -> dict[str, Any] | None:
    """The receipt of ``bundle``'s settled resolution; None while nobody won its claim or the
    winner's delivery is still in flight (see the module documentation)."""
    if not is_settled(bundle.rows):
        return None
    payload = bundle_receipt_payload(bundle)
    return sign_receipt(signer, payload) if payload is not None else None


@attrs.frozen
class Receipts:
    """Makes and publishes receipts; one instance shared by every surface."""

    _claims: ClaimRepository = attrs.field(alias="claims")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _run: Runner = attrs.field(alias="runner")
    _signer: ReceiptSigner = attrs.field(alias="signer")

    async def public_keys(self) -> tuple[PublicKey, ...]:
        """Every key a receipt may be signed with, the signing key first (on a worker
        thread: the first use may read or write the key file)."""
        return await self._run(self._signer.public_keys)

    def sign(self, payload: ReceiptPayload) -> dict[str, Any]:
        return sign_receipt(self._signer, payload)

    def of_bundle(self, bundle: Bundle) -> dict[str, Any] | None:
        """:func:`settled_receipt` with this service's signer."""
        return settled_receipt(self._signer, bundle)

    async def of_claim(
        self,
        bundle: Bundle,
        status: str,
        answers: tuple[Answer, ...],
        resolved_by: ResolvedBy,
        resolved_at: datetime,
    ) -> dict[str, Any]:
        """The receipt of a claim being delivered (the resolver's resume path): the values
        the claim just wrote, so it is the receipt :meth:`of_bundle` makes once it settles
        (signed on a worker thread, like every receipt)."""
        kind, digest = bundle_kind_and_digest(bundle)
        payload = ReceiptPayload(
            request_id=bundle.pending_id,
            kind=kind,
            asked_digest=digest,
            status=status,
            answers=answers,
            resolved_by=resolved_by,
            resolved_at=resolved_at,
        )
        return await self._run(self.sign, payload)

    async def for_request(self, identity: Identity, pending_id: str) -> dict[str, Any]:
        """``GET /api/v1/clarification/{id}/receipt``: authorized like every read (A7).

        Raises:
            NotFound: not visible to ``identity`` (same for foreign and fabricated ids, A3).
            NotActive: visible, but not resolved (or its delivery is still in flight).
            ClaimError: the store failed.
        """
        bundle = await authorize_bundle(
            self._run, self._claims, self._authorizer, identity, pending_id
        )
        receipt = await self._run(self.of_bundle, bundle)
        if receipt is None:
            raise NotActive(NOT_RESOLVED)
        return receipt

    async def for_answer(self, pending_id: str) -> dict[str, Any] | None:
        """The receipt handed to the asking agent with its answer (MCP ask result), read
        after the answer reached it. Never fails the answer: a store or signing failure, or a
        claim not yet settled, is logged and gives None (the agent can fetch it later)."""
        try:
            bundle = await self._run.guarded(
                StoreFailure(RECEIPT_FAILED, pending_id=pending_id),
                self._claims.load_bundle,
                pending_id,
            )
            receipt = await self._run(self.of_bundle, bundle) if bundle is not None else None
        except Exception as exc:  # noqa: BLE001 - the answer is delivered either way
            log.warning("receipt.failed", pending_id=pending_id, **failure_fields(exc))
            return None
        if receipt is None:
            log.info("receipt.not_ready", pending_id=pending_id)
        return receipt


__all__ = ["NOT_RESOLVED", "Receipts", "settled_receipt", "sign_receipt"]
