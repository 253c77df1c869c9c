"""The resolved list's wire form (issue #20): one page of :class:`ResolvedBundle` and the
audit export's JSON Lines record, both built from the same models."""

from __future__ import annotations

from typing import Any

from clarion.adapters.wire import models, option_models, response_model, unstructure
from clarion.domain.history import ResolvedBundle, ResolvedPage
from clarion.domain.resolved_by import ResolvedBy


def resolver_model(resolved_by: ResolvedBy) -> models.Resolver:
    return models.Resolver(
        identity_id=resolved_by.identity_id,
        kind=resolved_by.kind.value,
        display_name=resolved_by.display_name,
        surface=resolved_by.surface.value,
    )


def resolved_bundle_model(bundle: ResolvedBundle) -> models.ResolvedBundle:
    return models.ResolvedBundle(
        pending_id=bundle.pending_id,
        task_id=bundle.task_id,
        session_id=bundle.session_id,
        created_at=bundle.created_at,
        context=bundle.context,
        questions=[
            models.ListedQuestion(
                question_id=question.question_id,
                title=question.title,
                prompt=question.prompt,
                status=question.status,
                options=option_models(question.options),
            )
            for question in bundle.questions
        ],
        status=bundle.resolution.status,  # type: ignore[arg-type]
        response=response_model(bundle.resolution),
        resolved_by=resolver_model(bundle.resolved_by),
        resolved_at=bundle.resolved_at,
    )


def resolved_bundle_json(bundle: ResolvedBundle) -> dict[str, Any]:
    """One resolved bundle as the list and the audit export (one JSON line each) write it."""
    return unstructure(resolved_bundle_model(bundle))


def resolved_page_json(page: ResolvedPage) -> dict[str, Any]:
    bundles = [resolved_bundle_model(bundle) for bundle in page.bundles]
    return unstructure(models.ResolvedPage(bundles, len(bundles), page.next_cursor))


__all__ = ["resolved_bundle_json", "resolved_page_json", "resolver_model"]
