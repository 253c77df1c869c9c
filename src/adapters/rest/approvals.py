"""Approvals over REST (issue #33): requests, decisions, standing approvals and groups.

==================================================  =========================================
``POST   /api/v1/approvals/request``                ask permission for one exact action →
                                                    201 view (200, ``approved``, when a
                                                    standing approval matched)
``GET    /api/v1/approvals``                        the caller's approval requests,
                                                    ``status=pending`` (default) or ``decided``
``GET    /api/v1/approvals/{id}``                   one request's view
``GET    /api/v1/approvals/{id}/wait``              the view once decided, or as it stands
                                                    after ``timeout`` seconds
``POST   /api/v1/approvals/{id}/decision``          vote: quorum, veto, once per person
``GET    /api/v1/standing-approvals``               standing approvals of visible workspaces
``POST   /api/v1/standing-approvals/{id}/revoke``   revoke one
``GET|POST /api/v1/groups``                         groups (administrators only)
``DELETE /api/v1/groups/{name}``                    delete a group
``PUT|DELETE /api/v1/groups/{name}/members/{user}`` add or remove a member
==================================================  =========================================

A request the caller may not see — a foreign one, or one assigned to others — is the same 404
as a missing one, on every ``{id}`` route.
"""

from __future__ import annotations

import math
from typing import Any, Final

import attrs
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from clarion.adapters import wire
from clarion.adapters.rest.auth import require_identity, resolving_surface
from clarion.adapters.rest.bodies import read_model
from clarion.adapters.rest.query import page_parameters, query_value
from clarion.adapters.rest.routes import Endpoint
from clarion.adapters.wire import approvals as approval_wire
from clarion.adapters.wire import models
from clarion.app.usecases.approvals import Approvals, ApprovalView, Groups
from clarion.app.usecases.listing import Listing
from clarion.domain.approvals import ApprovalTerms, Decision, Group, parse_action
from clarion.domain.errors import InvalidArgument

DEFAULT_WAIT_S: Final = 30.0


def approval_routes(
    *, approvals: Approvals, groups: Groups, listing: Listing, max_wait_s: float
) -> dict[str, Endpoint]:
    """The approval, standing-approval and group endpoints, by operation id."""
    requests = _ApprovalEndpoints(approvals, listing, max_wait_s)
    admin = _GroupEndpoints(groups)
    return {
        "createApproval": requests.create,
        "listApprovals": requests.list_approvals,
        "getApproval": requests.get_approval,
        "waitForApproval": requests.wait,
        "decideApproval": requests.decide,
        "listStandingApprovals": requests.list_standing,
        "revokeStandingApproval": requests.revoke_standing,
        "listGroups": admin.list_groups,
        "createGroup": admin.create,
        "deleteGroup": admin.delete,
        "addGroupMember": admin.add_member,
        "removeGroupMember": admin.remove_member,
    }


def _view(view: ApprovalView, status_code: int = 200) -> JSONResponse:
    return JSONResponse(approval_wire.approval_view_json(view), status_code=status_code)


def _timeout(request: Request, maximum: float) -> float:
    """``timeout``: seconds, 0 up to ``maximum`` (the ask timeout); default 30."""
    raw = query_value(request, "timeout")
    if not raw:
        return min(DEFAULT_WAIT_S, maximum)
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or not 0 <= seconds <= maximum:
        raise InvalidArgument(
            f"timeout: must be a number of seconds from 0 to {maximum:g}", field="timeout"
        )
    return seconds


@attrs.frozen
class _ApprovalEndpoints:
    approvals: Approvals
    listing: Listing
    max_wait_s: float

    async def create(self, request: Request) -> Response:
        body = await read_model(request, models.ApprovalRequestIn)
        terms = ApprovalTerms(
            action=parse_action(body.action.name, body.action.arguments),
            reason=body.reason,
            required_approvals=body.required_approvals,
        )
        candidates = await self.approvals.candidates_named(
            body.candidates.users, body.candidates.groups
        )
        view = await self.approvals.create(
            require_identity(request),
            session_id=body.session_id,
            terms=terms,
            candidates=candidates,
            task_id=body.task_id or None,
        )
        return _view(view, 200 if view.status == "approved" else 201)

    async def list_approvals(self, request: Request) -> Response:
        status = query_value(request, "status", "pending")
        if status not in ("pending", "decided"):
            raise InvalidArgument("status: must be pending or decided", field="status")
        identity = require_identity(request)
        cursor, limit = page_parameters(request)
        if status == "pending":
            pending = await self.listing.list_pending(identity, cursor=cursor, limit=limit)
            bundles: tuple[Any, ...] = pending.bundles
            next_cursor = pending.next_cursor
        else:
            resolved = await self.listing.list_resolved(identity, cursor=cursor, limit=limit)
            bundles, next_cursor = resolved.bundles, resolved.next_cursor
        views = await self.approvals.views_of(bundles)
        items = [
            approval_wire.approval_view_model(views[bundle.pending_id])
            for bundle in bundles
            if bundle.pending_id in views
        ]
        page = models.ApprovalList(approvals=items, count=len(items), next_cursor=next_cursor)
        return JSONResponse(wire.unstructure(page))

    async def get_approval(self, request: Request) -> Response:
        view = await self.approvals.view(
            require_identity(request), request.path_params["pending_id"]
        )
        return _view(view)

    async def wait(self, request: Request) -> Response:
        timeout = _timeout(request, self.max_wait_s)
        view = await self.approvals.wait(
            require_identity(request), request.path_params["pending_id"], timeout
        )
        return _view(view)

    async def decide(self, request: Request) -> Response:
        body = await read_model(request, models.DecisionIn)
        reply = await self.approvals.decide(
            require_identity(request),
            request.path_params["pending_id"],
            Decision(body.decision),
            body.comment,
            surface=resolving_surface(request),
            allow_for_minutes=body.allow_for_minutes,
            constraints=body.constraints,
        )
        return JSONResponse(approval_wire.decision_result_json(reply))

    async def list_standing(self, request: Request) -> Response:
        include = query_value(request, "include")
        if include not in ("", "inactive"):
            raise InvalidArgument("include: must be inactive", field="include")
        identity = require_identity(request)
        found = await self.approvals.list_standing(identity, include_inactive=bool(include))
        now = self.approvals.now()
        items = [approval_wire.standing_model(s, active=s.active(now)) for s in found]
        body = models.StandingApprovalList(standing_approvals=items, total=len(items))
        return JSONResponse(wire.unstructure(body))

    async def revoke_standing(self, request: Request) -> Response:
        revoked = await self.approvals.revoke_standing(
            require_identity(request), request.path_params["standing_id"]
        )
        return JSONResponse(wire.unstructure(approval_wire.standing_model(revoked, active=False)))


@attrs.frozen
class _GroupEndpoints:
    groups: Groups

    async def _group_json(self, group: Group) -> dict[str, Any]:
        members = await self.groups.member_names(group)
        return wire.unstructure(_group_model(group, members))

    async def list_groups(self, request: Request) -> Response:
        found = await self.groups.list(require_identity(request))
        items = [_group_model(group, await self.groups.member_names(group)) for group in found]
        return JSONResponse(wire.unstructure(models.GroupList(groups=items, total=len(items))))

    async def create(self, request: Request) -> Response:
        body = await read_model(request, models.GroupIn)
        group = await self.groups.create(require_identity(request), body.name)
        return JSONResponse(await self._group_json(group), status_code=201)

    async def delete(self, request: Request) -> Response:
        await self.groups.delete(require_identity(request), request.path_params["name"])
        return JSONResponse(wire.unstructure(models.Success(True)))

    async def add_member(self, request: Request) -> Response:
        group = await self.groups.add_member(
            require_identity(request), request.path_params["name"], request.path_params["user"]
        )
        return JSONResponse(await self._group_json(group))

    async def remove_member(self, request: Request) -> Response:
        group = await self.groups.remove_member(
            require_identity(request), request.path_params["name"], request.path_params["user"]
        )
        return JSONResponse(await self._group_json(group))


def _group_model(group: Group, members: tuple[str, ...]) -> models.GroupModel:
    return models.GroupModel(
        id=group.id, name=group.name, created_at=group.created_at, members=list(members)
    )
