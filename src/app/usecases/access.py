"""Who may see a bundle or a session: the spec's steps 1–2 (M5, M5a, A5, A7–A9, "Permissions").

These run on a worker thread (they call synchronous ports; :func:`authorize_bundle` puts one
there) and raise :class:`NotFound` for every kind of "no": missing, foreign, or unresolvable —
one answer, so a denial discloses nothing (A3).
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.errors import NOT_FOUND_MESSAGE, NotFound, Resource
from clarion.domain.host import Session
from clarion.domain.listing import Visibility
from clarion.domain.model import Identity
from clarion.domain.rows import Bundle
from clarion.ports.authorizer import TaskAuthorizer, VisibilityAuthorizer
from clarion.ports.claims import ClaimRepository
from clarion.ports.host import HostRepository

AUTHORIZE_FAILED = "failed to authorize clarification request"
# A task id no task has. A bundle or session that does not exist is still authorized — against
# this id — so that refusing it does the same work as refusing a foreign one, and the two take
# the same time (no timing oracle: issue #14).
ABSENT_TASK_ID = "clarion:absent-task"

GroupsOf = Callable[[str], frozenset[str]]
"""The ids of the groups a user belongs to (:meth:`clarion.ports.approvals.GroupDirectory
.groups_of`)."""


@attrs.frozen
class Assignment:
    """Issue #33: who may decide a bundle with candidates. ``groups_of`` reads a user's groups
    (None: no groups are kept, so only named users are candidates); with ``asker_sees`` the
    identity that asked the bundle sees it too (it waits on its own request; it does not decide
    it — the resolver checks with ``asker_sees`` False)."""

    groups_of: GroupsOf | None = None
    asker_sees: bool = False


def check_assignment(bundle: Bundle, identity: Identity, assignment: Assignment) -> None:
    """Raise :class:`NotFound` when ``bundle`` names candidates and the scoped ``identity`` is
    none of them (directly or through a group): to anyone else an assigned request is
    indistinguishable from one that does not exist (issue #33). Unscoped callers (auth
    disabled, internal callers such as a deadline) pass."""
    candidates = bundle.candidates
    user_id = identity.user_id
    if not candidates.assigned or not identity.is_scoped or user_id is None:
        return
    asker = bundle.asker
    if assignment.asker_sees and asker is not None and asker.user_id == user_id:
        return
    groups: frozenset[str] = frozenset()
    if candidates.group_ids and assignment.groups_of is not None:
        groups = assignment.groups_of(user_id)
    if not candidates.admits(user_id, groups):
        raise NotFound(NOT_FOUND_MESSAGE)


def assigned_visibility(visibility: Visibility, identity: Identity) -> Visibility:
    """``visibility`` with the assignment filter for a scoped caller (issue #33): the stores
    then list a bundle with candidates only to its candidates."""
    if not identity.is_scoped or identity.user_id is None or visibility.unscoped:
        return visibility
    return visibility.assigned_to(identity.user_id)


def authorize_task_id(authorizer: TaskAuthorizer, identity: Identity, task_id: str) -> None:
    """Raise :class:`NotFound` unless ``identity`` may see ``task_id``.

    Unscoped callers see everything, even a bundle whose task cannot be resolved (A4, M5a); a
    scoped caller never sees one without a task (M5a).
    """
    if not identity.is_scoped:
        return
    if not task_id:
        raise NotFound(NOT_FOUND_MESSAGE)
    try:
        authorizer.authorize_task(identity, task_id)
    except NotFound:
        raise NotFound(NOT_FOUND_MESSAGE) from None


def load_authorized_bundle(
    claims: ClaimRepository, authorizer: TaskAuthorizer, identity: Identity, pending_id: str
) -> Bundle:
    """Steps 1–2: read the bundle's durable rows, resolve its task (M5), authorize (A8: the
    task comes from the durable rows, never from anything in memory or from the caller).

    With an authorizer that declares it decides by visibility
    (:class:`~clarion.ports.authorizer.VisibilityAuthorizer`, as the built-in
    :class:`~clarion.app.usecases.authorization.HostTaskAuthorizer` does) the store judges
    visibility inside the one read (:meth:`ClaimRepository.load_visible_bundle`): a foreign
    bundle reads zero rows, exactly like a fabricated id, so the two take the same time
    (issue #14) and the answer path needs one read here. Any other authorizer (a host's,
    which may know only a set of ids) is asked after the read, and a missing bundle is
    authorized too (:data:`ABSENT_TASK_ID`), so it costs about what a foreign one does: two
    reads, and a foreign bundle's rows are decoded."""
    if (
        identity.is_scoped
        and isinstance(authorizer, VisibilityAuthorizer)
        and authorizer.decides_by_visibility
    ):
        visibility = authorizer.visibility(identity)  # the owner rule: no read
        bundle = claims.load_visible_bundle(pending_id, visibility) if pending_id else None
        if bundle is None or not bundle.rows:
            raise NotFound(NOT_FOUND_MESSAGE)
        return bundle
    bundle = claims.load_bundle(pending_id) if pending_id else None
    if bundle is None or not bundle.rows:
        authorize_task_id(authorizer, identity, ABSENT_TASK_ID)
        raise NotFound(NOT_FOUND_MESSAGE)
    authorize_task_id(authorizer, identity, bundle.task_id)
    return bundle


def load_authorized_session(
    host: HostRepository, authorizer: TaskAuthorizer, identity: Identity, session_id: str
) -> Session:
    """The session, when it exists and its task is visible to ``identity`` (fixes §9.20). A
    missing session is authorized too (:data:`ABSENT_TASK_ID`), so it costs what a foreign
    one does."""
    session = host.get_session(session_id) if session_id else None
    if identity.is_scoped:
        try:
            authorizer.authorize_task(
                identity, session.task_id if session is not None else ABSENT_TASK_ID
            )
        except NotFound:
            raise NotFound(resource=Resource.SESSION) from None
    if session is None:
        raise NotFound(resource=Resource.SESSION)
    return session


async def authorize_bundle(
    run: Runner,
    claims: ClaimRepository,
    authorizer: TaskAuthorizer,
    identity: Identity,
    pending_id: str,
    assignment: Assignment | None = None,
) -> Bundle:
    """Steps 1–2 only (A7–A9), on a worker thread: the bundle, when ``identity`` may see it —
    and, with an ``assignment``, when it is one of the bundle's candidates (issue #33).

    Raises:
        NotFound: no durable rows, a foreign bundle, M5a for a scoped caller, or a caller
            who is not a candidate of an assigned bundle.
        ClaimError: the store failed (never reported as not-found).
    """

    def load() -> Bundle:
        bundle = load_authorized_bundle(claims, authorizer, identity, pending_id)
        if assignment is not None:
            check_assignment(bundle, identity, assignment)
        return bundle

    return await run.guarded(StoreFailure(AUTHORIZE_FAILED, pending_id=pending_id), load)
