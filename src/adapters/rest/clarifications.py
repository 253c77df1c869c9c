"""The clarification endpoints: the spec's REST surface (R10–R12, A1–A9) plus discovery.

=============================================  ============================================
``POST /api/v1/clarification/request``         create a bundle → ``{"pending_id"}`` (A6; the
                                               session must be visible, fixes §9.20)
``GET  /api/v1/clarification/pending``         the caller's pending bundles (L1–L16 shape)
``GET  /api/v1/clarification/resolved``        settled bundles, newest first, with who
                                               resolved them (issue #20; REST only)
``GET  /api/v1/clarification/{id}``            the live request (A7: authorize first)
``GET  /api/v1/clarification/{id}/wait``       block until answered; 504 on drain/timeout (A5a)
``POST /api/v1/clarification/{id}/respond``    answer or reject (R10, R11, R12)
``POST /api/v1/clarification/{id}/cancel``     operator cancel, authorized, never claimed (A9)
=============================================  ============================================

Every use case authorizes from the durable rows before it touches anything in memory, so a
foreign and a fabricated ``pending_id`` get the same bytes on all four ``{id}`` routes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clarion.adapters import wire
from clarion.adapters.disconnect import DISCONNECTED, disconnect_message, until_disconnected
from clarion.adapters.rest.auth import require_identity, resolving_surface
from clarion.adapters.rest.bodies import read_json, read_model
from clarion.adapters.rest.errors import failure
from clarion.adapters.rest.query import include_closed, page_parameters, query_value
from clarion.adapters.rest.routes import Endpoint
from clarion.adapters.wire import models
from clarion.adapters.wire.approvals import approval_summary_model
from clarion.adapters.wire.history import resolved_page_json
from clarion.adapters.wire.models import ApprovalSummary
from clarion.app.usecases.approvals import Approvals, HasQuestions
from clarion.app.usecases.ask import Asking
from clarion.app.usecases.listing import Listing
from clarion.app.usecases.live import LiveRequest, LiveRequests
from clarion.app.usecases.resolve import Resolver


def live_request_json(request: LiveRequest) -> dict[str, Any]:
    """Upstream's Request JSON (facts §2.1): ``context`` omitted when empty (A4: unchanged)."""
    return wire.unstructure(
        models.LiveRequest(
            pending_id=request.pending_id,
            session_id=request.session_id,
            task_id=request.task_id,
            questions=[
                models.LiveQuestion(
                    id=question.id,
                    title=question.title,
                    prompt=question.prompt,
                    options=wire.option_models(question.options),
                )
                for question in request.questions
            ],
            context=request.context,
            created_at=request.created_at,
        )
    )


def clarification_routes(
    *,
    resolver: Resolver,
    asking: Asking,
    requests: LiveRequests,
    listing: Listing,
    now: Callable[[], datetime],
    approvals: Approvals | None = None,
) -> dict[str, Endpoint]:
    """The clarification endpoints, by operation id (the route table orders their paths).
    With ``approvals`` an approval request's list item gains its ``approval`` object."""
    lists = _ListEndpoints(listing, now, approvals)
    bundles = _BundleEndpoints(resolver, asking, requests)
    return {
        "createClarification": bundles.create,
        "listPendingClarifications": lists.pending,
        "listResolvedClarifications": lists.resolved,
        "getClarification": bundles.get_request,
        "waitForClarification": bundles.wait,
        "respondToClarification": bundles.respond,
        "cancelClarification": bundles.cancel,
    }


@attrs.frozen
class _ListEndpoints:
    """The caller's pending and settled bundles, one page each."""

    listing: Listing
    now: Callable[[], datetime]
    approvals: Approvals | None

    async def _summaries(self, bundles: Sequence[HasQuestions]) -> dict[str, ApprovalSummary]:
        """Issue #33: the ``approval`` objects of the approval requests among ``bundles``."""
        if self.approvals is None:
            return {}
        views = await self.approvals.views_of(bundles)
        return {pending_id: approval_summary_model(view) for pending_id, view in views.items()}

    async def pending(self, request: Request) -> Response:
        cursor, limit = page_parameters(request)
        page = await self.listing.list_pending(
            require_identity(request),
            workspace_id=query_value(request, "workspace_id"),
            created_since=query_value(request, "created_since"),
            cursor=cursor,
            limit=limit,
        )
        summaries = await self._summaries(page.bundles)
        return JSONResponse(wire.list_json(page, self.now(), summaries))

    async def resolved(self, request: Request) -> Response:
        cursor, limit = page_parameters(request)
        page = await self.listing.list_resolved(
            require_identity(request),
            cursor=cursor,
            limit=limit,
            include_closed=include_closed(request),
        )
        return JSONResponse(resolved_page_json(page, await self._summaries(page.bundles)))


@attrs.frozen
class _BundleEndpoints:
    """One bundle: created, read, waited on, answered or cancelled."""

    resolver: Resolver
    asking: Asking
    requests: LiveRequests

    async def create(self, request: Request) -> Response:
        body = await read_model(request, models.CreateRequest)
        drafts = wire.parse_question_drafts(body.questions)
        pending_id = await self.asking.create(
            require_identity(request),
            body.session_id,
            drafts,
            body.context,
            task_id=body.task_id or None,
        )
        return JSONResponse(wire.unstructure(models.Created(pending_id)))

    async def get_request(self, request: Request) -> Response:
        live = await self.requests.get_request(
            require_identity(request), request.path_params["pending_id"]
        )
        return JSONResponse(live_request_json(live))

    async def wait(self, request: Request) -> Response:
        identity = require_identity(request)
        pending_id: str = request.path_params["pending_id"]
        # A client that leaves cancels its wait, which removes its waiter: an answer arriving
        # later takes the detached path at once instead of blocking on nobody (upstream §9.21).
        resolution = await until_disconnected(
            disconnect_message(request.receive), lambda: self.requests.wait(identity, pending_id)
        )
        if resolution is DISCONNECTED:
            return failure(504, f"clarification request wait abandoned: {pending_id}")
        return JSONResponse(wire.wait_response_json(resolution))

    async def respond(self, request: Request) -> Response:
        outcome = wire.parse_outcome(await read_json(request))
        resolution = await self.resolver.resolve(
            require_identity(request),
            request.path_params["pending_id"],
            outcome,
            surface=resolving_surface(request),
        )
        return JSONResponse(wire.respond_body(resolution))

    async def cancel(self, request: Request) -> Response:
        await self.requests.cancel(require_identity(request), request.path_params["pending_id"])
        return JSONResponse(wire.unstructure(models.Success(True)))
