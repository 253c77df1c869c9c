"""``list_pending_questions``: one query over durable rows (L1–L16)."""

from __future__ import annotations

from datetime import datetime

import attrs
import structlog

from clarion.app.usecases.access import assigned_visibility, authorize_task_id
from clarion.app.usecases.runner import Runner
from clarion.domain.cursor import decode_cursor, parse_timestamp
from clarion.domain.errors import NotFound
from clarion.domain.history import (
    HistoryEntry,
    ResolvedPage,
    ResolvedQuery,
    resolved_bundle_bytes,
)
from clarion.domain.listing import (
    MAX_LIMIT,
    ListedBundle,
    ListPage,
    ListQuery,
    bundle_order_key,
    clamp_limit,
    listed_bundle_bytes,
)
from clarion.domain.model import Identity
from clarion.domain.paging import DEFAULT_MAX_LIST_BYTES, budgeted_page
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository

log = structlog.get_logger(__name__)

LIST_FAILED = "failed to list pending clarifications"
HISTORY_FAILED = "failed to list resolved clarifications"


@attrs.define(kw_only=True)
class Listing:
    """Discovery of the active bundles a caller may see.

    Both lists are bounded in bytes as well as in bundles (issue #29 F8): a page stops before
    the bundle that would take its JSON past ``max_list_bytes`` (``CLARION_MAX_LIST_BYTES``;
    :func:`~clarion.domain.listing.listed_bundle_bytes`), always holding at least one, and its
    ``next_cursor`` continues from there — so ``limit`` is the most a page holds, and only an
    empty ``next_cursor`` means the end (L9). The store is read in small steps, so a page of
    large bundles never loads far more than it returns.
    """

    _claims: ClaimRepository = attrs.field(alias="claims")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _run: Runner = attrs.field(alias="runner")
    max_page_size: int = MAX_LIMIT
    max_list_bytes: int = DEFAULT_MAX_LIST_BYTES

    async def list_pending(
        self,
        identity: Identity,
        *,
        workspace_id: str = "",
        created_since: str = "",
        cursor: str = "",
        limit: int | None = None,
    ) -> ListPage:
        """A page of active bundles visible to ``identity``, oldest first (L6).

        ``workspace_id`` "" means "not supplied" (L7a.4); ``created_since`` is RFC 3339 (L8);
        ``cursor`` is a previous page's ``next_cursor`` (L9); ``limit`` is clamped (L10) to
        ``max_page_size``.

        Raises:
            InvalidArgument: ``created_since`` or ``cursor`` is unparseable; ``field`` names it
                (L13).
            ClaimError: the store failed.
        """
        since = parse_timestamp(created_since, argument="created_since") if created_since else None
        after = decode_cursor(cursor) if cursor else None
        return await self._run.guarded(
            LIST_FAILED,
            self._query,
            identity,
            workspace_id,
            since,
            after,
            clamp_limit(limit, self.max_page_size),
        )

    async def list_resolved(
        self,
        identity: Identity,
        *,
        cursor: str = "",
        limit: int | None = None,
        resolved_since: datetime | None = None,
        include_closed: bool = False,
    ) -> ResolvedPage:
        """A page of settled bundles visible to ``identity`` — the pending list's visibility
        (foreign ≡ absent) — newest resolution first, with outcome and who resolved (issue
        #20); with ``include_closed`` the bundles closed without an answer too, with their
        reason (issue #30). ``cursor`` and ``limit`` follow the pending list's rules (L9,
        L10, L13).

        Raises:
            InvalidArgument: ``cursor`` is unparseable (``field`` names it).
            ClaimError: the store failed.
        """
        before = decode_cursor(cursor) if cursor else None
        return await self._run.guarded(
            HISTORY_FAILED,
            self._resolved,
            identity,
            before,
            clamp_limit(limit, self.max_page_size),
            resolved_since,
            include_closed,
        )

    def _resolved(
        self,
        identity: Identity,
        before: tuple[datetime, str] | None,
        limit: int,
        resolved_since: datetime | None,
        include_closed: bool,
    ) -> ResolvedPage:
        visibility = assigned_visibility(self._authorizer.visibility(identity), identity)

        def read(count: int, last: HistoryEntry | None) -> tuple[tuple[HistoryEntry, ...], bool]:
            query = ResolvedQuery(
                visibility=visibility,
                limit=count,
                before=(last.resolved_at, last.pending_id) if last is not None else before,
                resolved_since=resolved_since,
                include_closed=include_closed,
            )
            page = self._claims.list_resolved_bundles(query)
            return page.bundles, page.has_more

        bundles, more = budgeted_page(
            read, limit=limit, max_bytes=self.max_list_bytes, size_of=resolved_bundle_bytes
        )
        return ResolvedPage(bundles=bundles, has_more=more)

    async def may_see_task(self, identity: Identity, task_id: str) -> bool:
        """Whether ``identity`` may see the task ``task_id`` (and so its bundles and events):
        the authorizer's answer, with every kind of "no" — missing, foreign, no task — as
        ``False``. Unscoped callers see everything.

        Raises:
            Exception: the authorizer itself failed (the caller decides how to fail closed).
        """
        if not identity.is_scoped:
            return True
        try:
            await self._run(authorize_task_id, self._authorizer, identity, task_id)
        except NotFound:
            return False
        return True

    def _query(
        self,
        identity: Identity,
        workspace_id: str,
        created_since: datetime | None,
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> ListPage:
        # L1a: the visible workspace set is resolved first and becomes a predicate of the
        # bundle query, so ``limit`` counts bundles returned, never rows examined.
        visibility = assigned_visibility(self._authorizer.visibility(identity), identity)

        def read(count: int, last: ListedBundle | None) -> tuple[tuple[ListedBundle, ...], bool]:
            query = ListQuery(
                visibility=visibility,
                limit=count,
                workspace_id=workspace_id,
                created_since=created_since,
                after=bundle_order_key(last) if last is not None else after,
            )
            page = self._claims.list_active_bundles(query)
            return page.bundles, page.has_more

        bundles, more = budgeted_page(
            read, limit=limit, max_bytes=self.max_list_bytes, size_of=listed_bundle_bytes
        )
        return ListPage(bundles=bundles, has_more=more)
