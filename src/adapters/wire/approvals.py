"""Approvals' wire form (issue #33): the view every surface returns (REST and the MCP tools
alike), a decision's result, standing approvals, groups, and the additive ``approval`` object
of pending-list and history items."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from clarion.adapters.wire import models
from clarion.adapters.wire.convert import unstructure
from clarion.adapters.wire.history import resolver_model
from clarion.app.usecases.approvals import ApprovalView, CandidateNames, DecisionReply
from clarion.domain.approvals import Action, Decision, StandingApproval, Vote
from clarion.domain.resolved_by import ResolvedBy


def decision_name(decision: Decision) -> Literal["approve", "deny"]:
    return "approve" if decision is Decision.APPROVE else "deny"


def action_model(action: Action) -> models.ActionModel:
    return models.ActionModel(name=action.name, arguments=dict(action.arguments))


def candidates_model(candidates: CandidateNames) -> models.CandidatesModel:
    return models.CandidatesModel(users=list(candidates.users), groups=list(candidates.groups))


def vote_model(vote: Vote) -> models.VoteModel:
    return models.VoteModel(
        voter=vote.voter_id,
        display_name=vote.display_name,
        decision=decision_name(vote.decision),
        comment=vote.comment,
        surface=vote.surface.value,
        at=vote.at,
    )


def decided_by_model(by: ResolvedBy) -> models.DecidedBy:
    """Who decided (as the history names a resolver) and when."""
    return models.DecidedBy(**attrs.asdict(resolver_model(by), recurse=False), at=by.at)


def approval_view_model(view: ApprovalView) -> models.ApprovalView:
    return models.ApprovalView(
        pending_id=view.pending_id,
        status=view.status,
        **attrs.asdict(approval_summary_model(view), recurse=False),
        votes=[vote_model(vote) for vote in view.votes],
        decision=decision_name(view.decision) if view.decision is not None else None,
        comment=view.comment,
        decided_by=decided_by_model(view.decided_by) if view.decided_by is not None else None,
        decided_at=view.decided_at,
        standing_approval_id=view.standing_id,
        closed_reason=view.closed_reason,
        task_id=view.task_id,
        session_id=view.session_id,
        created_at=view.created_at,
    )


def approval_view_json(view: ApprovalView) -> dict[str, Any]:
    """The view JSON (docs/rest-api.md "Approvals"): REST's body and the MCP tools' result."""
    return unstructure(approval_view_model(view))


def approval_summary_model(view: ApprovalView) -> models.ApprovalSummary:
    """The ``approval`` object a pending-list or history item of an approval request gains."""
    terms = view.terms
    return models.ApprovalSummary(
        action=action_model(terms.action),
        action_digest=view.record.action_digest,
        reason=terms.reason,
        required_approvals=terms.required_approvals,
        approvals=view.approvals,
        candidates=candidates_model(view.candidates),
    )


def standing_model(standing: StandingApproval, *, active: bool) -> models.StandingApprovalModel:
    return models.StandingApprovalModel(
        id=standing.id,
        workspace_id=standing.workspace_id,
        action_name=standing.action_name,
        constraints={name: c.to_json() for name, c in standing.constraints.items()},
        granted_by_id=standing.granted_by_id,
        granted_by_name=standing.granted_by_name,
        granted_at=standing.granted_at,
        expires_at=standing.expires_at,
        source_pending_id=standing.source_pending_id,
        revoked_at=standing.revoked_at,
        revoked_by_id=standing.revoked_by_id,
        active=active,
    )


def decision_result_json(reply: DecisionReply) -> dict[str, Any]:
    """``POST /approvals/{id}/decision``'s body (and the MCP decide tool's result)."""
    standing = reply.standing
    return unstructure(
        models.DecisionResult(
            approval=approval_view_model(reply.approval),
            vote=vote_model(reply.vote) if reply.vote is not None else None,
            counted=reply.counted,
            standing_approval=standing_model(standing, active=True) if standing else None,
        )
    )


__all__ = [
    "approval_summary_model",
    "approval_view_json",
    "approval_view_model",
    "decision_result_json",
    "standing_model",
    "vote_model",
]
