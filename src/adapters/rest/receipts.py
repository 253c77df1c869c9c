"""Receipts over REST (issue #34, docs/receipts.md).

=============================================  ============================================
``GET /api/v1/clarification/{id}/receipt``     the signed receipt of a settled bundle
                                               (authorized like ``GET /{id}``: 404 when not
                                               visible, 409 while not resolved)
``GET /.well-known/clarion-receipt-keys``      the published verification keys (public)
=============================================  ============================================

``GET /{id}/wait`` keeps its pinned body (A4) and points at the receipt with a
``Link: <receipt>; rel="receipt"`` header instead (relative to the wait's own URL).
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clarion.adapters.rest.auth import require_identity
from clarion.adapters.rest.routes import Endpoint
from clarion.app.usecases.receipts import Receipts
from clarion.domain.errors import NotFound
from clarion.domain.receipts import keys_json


def receipt_routes(receipts: Receipts | None) -> dict[str, Endpoint]:
    """The receipt endpoints, by operation id (404 when the service signs no receipts)."""

    def _receipts() -> Receipts:
        if receipts is None:
            raise NotFound("receipts are not available")
        return receipts

    async def receipt(request: Request) -> Response:
        pending_id: str = request.path_params["pending_id"]
        signed = await _receipts().for_request(require_identity(request), pending_id)
        return JSONResponse(signed)

    async def keys(request: Request) -> Response:
        return JSONResponse(keys_json(await _receipts().public_keys()))

    return {"getClarificationReceipt": receipt, "receiptKeys": keys}


__all__ = ["receipt_routes"]
