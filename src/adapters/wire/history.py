"""The resolved list's wire form (issue #20): one page of :class:`ResolvedBundle` (and, issue
#30, :class:`ClosedBundle`) and the audit export's JSON Lines record, both built from the same
models."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from clarion.adapters.wire import (
    listed_question_models,
    models,
    response_model,
    unstructure,
    with_approvals,
)
from clarion.domain.history import ClosedBundle, HistoryEntry, ResolvedBundle, ResolvedPage
from clarion.domain.resolved_by import ResolvedBy


def resolver_model(resolved_by: ResolvedBy) -> models.Resolver:
    return models.Resolver(
        identity_id=resolved_by.identity_id,
        kind=resolved_by.kind.value,
        display_name=resolved_by.display_name,
        surface=resolved_by.surface.value,
    )


def _asked(bundle: HistoryEntry) -> dict[str, Any]:
    """What was asked, where and when: the fields every history entry opens with."""
    return {
        "pending_id": bundle.pending_id,
        "task_id": bundle.task_id,
        "session_id": bundle.session_id,
        "created_at": bundle.created_at,
        "context": bundle.context,
        "questions": listed_question_models(bundle.questions),
    }


def closed_bundle_model(bundle: ClosedBundle) -> models.ClosedBundle:
    return models.ClosedBundle(
        **_asked(bundle),
        status="closed",
        closed_reason=bundle.reason,
        closed_at=bundle.closed_at,
        response=None,
        resolved_by=None,
        resolved_at=bundle.closed_at,
    )


def history_model(bundle: HistoryEntry) -> models.ResolvedBundle | models.ClosedBundle:
    if isinstance(bundle, ClosedBundle):
        return closed_bundle_model(bundle)
    return resolved_bundle_model(bundle)


def resolved_bundle_model(bundle: ResolvedBundle) -> models.ResolvedBundle:
    return models.ResolvedBundle(
        **_asked(bundle),
        status=bundle.resolution.status,
        response=response_model(bundle.resolution),
        resolved_by=resolver_model(bundle.resolved_by),
        resolved_at=bundle.resolved_at,
    )


def resolved_bundle_json(bundle: HistoryEntry) -> dict[str, Any]:
    """One history entry as the list and the audit export (one JSON line each) write it."""
    return unstructure(history_model(bundle))


def resolved_page_json(
    page: ResolvedPage, approvals: Mapping[str, models.ApprovalSummary] | None = None
) -> dict[str, Any]:
    """One page of the history; an approval request's entry gains its ``approval`` summary
    (issue #33, by pending id)."""
    bundles = with_approvals([history_model(bundle) for bundle in page.bundles], approvals)
    return unstructure(models.ResolvedPage(bundles, len(bundles), page.next_cursor))


__all__ = ["history_model", "resolved_bundle_json", "resolved_page_json", "resolver_model"]
