"""Approvals (issue #33): an agent asks permission for one exact action; candidates decide.

An approval request IS a bundle (its one question is
:func:`~clarion.domain.approvals.approval_question`), so creating it and the agent's blocking
wait are :class:`~clarion.app.usecases.ask.Asking`'s, with the terms and candidates passed
through as :class:`~clarion.app.usecases.ask.BundleExtras`; every vote goes through the one
:class:`~clarion.app.usecases.resolve.Resolver` (quorum, veto, exactly-once claim, delivery).

What this module adds:

- *standing approvals*, checked when a request is made (in the task's workspace): a match
  still creates the bundle — so it is on record — and decides it at once through the same
  claim, recorded as decided by the standing approval (``Resolver.decide_at_once``); the agent
  gets ``approved`` with ``standing_id`` in its own reply. A standing approval is granted by an
  approving vote that is recorded with ``allow_for_minutes``.
- :class:`ApprovalView`: what every surface shows and returns, read from the durable rows,
  the extras and the votes.
- :class:`Groups`: the groups assignments name, managed by administrators only.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Literal, Protocol

import anyio
import attrs
import structlog

from clarion.app.usecases.access import (
    Assignment,
    GroupsOf,
    authorize_bundle,
    load_authorized_session,
)
from clarion.app.usecases.ask import (
    PROGRESS_INTERVAL_S,
    Alongside,
    Asking,
    BundleExtras,
    OnBundle,
    ProgressCallback,
)
from clarion.app.usecases.live import LiveRequests
from clarion.app.usecases.resolve import Resolver
from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.approvals import (
    APPROVAL_QUESTION_ID,
    APPROVE,
    DENY,
    NO_CANDIDATES,
    ApprovalRecord,
    ApprovalTerms,
    Candidates,
    Constraint,
    Decision,
    Group,
    StandingApproval,
    Vote,
    approvals_count,
    check_group_name,
    parse_constraints,
    standing_duration,
    validate_terms,
)
from clarion.domain.errors import (
    NOT_FOUND_MESSAGE,
    InvalidArgument,
    NotFound,
    Resource,
    ValidationError,
)
from clarion.domain.host import User
from clarion.domain.listing import task_visible
from clarion.domain.model import Answer, Identity, Option
from clarion.domain.replay import replay_winner
from clarion.domain.resolved_by import IdentityKind, ResolvedBy, Surface
from clarion.domain.rows import Bundle
from clarion.ports.approvals import GroupDirectory, StandingApprovals
from clarion.ports.authorizer import TaskAuthorizer
from clarion.ports.claims import ClaimRepository, VoteResult
from clarion.ports.host import HostRepository
from clarion.ports.system import Clock, IdGenerator
from clarion.ports.waiters import WaitEnd, WaitEnded

log = structlog.get_logger(__name__)

APPROVALS_FAILED = "failed to read or write approvals"
GROUPS_FAILED = "failed to read or write groups"
WAIT_INTERVAL_S = 1.0  # how often a wait that is not the asker's re-reads the request

Status = Literal["pending", "approved", "denied", "closed"]


class ListedQuestionLike(Protocol):
    @property
    def question_id(self) -> str: ...

    @property
    def options(self) -> tuple[Option, ...]: ...


class HasQuestions(Protocol):
    """A listed or history bundle (:class:`~clarion.domain.listing.ListedBundle`, the history
    entries)."""

    @property
    def pending_id(self) -> str: ...

    @property
    def questions(self) -> tuple[ListedQuestionLike, ...]: ...


def _looks_like_approval(bundle: HasQuestions) -> bool:
    if len(bundle.questions) != 1:
        return False
    (question,) = bundle.questions
    options = tuple(option.option_id for option in question.options)
    return question.question_id == APPROVAL_QUESTION_ID and options == (APPROVE, DENY)


class UserRoster(Protocol):
    """The users candidates and voters are named from (a
    :class:`~clarion.ports.tokens.TokenStore` is one)."""

    def get_user(self, user_id: str) -> User | None: ...

    def list_users(self) -> tuple[User, ...]: ...


@attrs.frozen
class CandidateNames:
    """An assignment for display: user and group names (an id when its name is unknown)."""

    users: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


@attrs.frozen
class ApprovalView:
    """An approval request as every surface shows and returns it (issue #33)."""

    pending_id: str
    status: Status
    record: ApprovalRecord
    candidates: CandidateNames
    votes: tuple[Vote, ...]
    decision: Decision | None
    comment: str
    decided_by: ResolvedBy | None
    decided_at: datetime | None
    task_id: str
    session_id: str
    created_at: datetime
    closed_reason: str = ""

    @property
    def terms(self) -> ApprovalTerms:
        return self.record.terms

    @property
    def approvals(self) -> int:
        """Distinct approving voters so far."""
        return approvals_count(self.votes)

    @property
    def standing_id(self) -> str | None:
        """The standing approval that decided the request at once, if one did."""
        if self.record.standing_id is not None:
            return self.record.standing_id
        by = self.decided_by
        if by is not None and by.kind is IdentityKind.STANDING_APPROVAL:
            return by.identity_id
        return None


@attrs.frozen
class DecisionReply:
    """What a decision returns: the request as it now stands, the caller's vote as stored
    (their first on a repeat; None when nothing was recorded — the request was decided or
    closed before), whether this call counted, and the standing approval it granted."""

    approval: ApprovalView
    vote: Vote | None
    counted: bool
    standing: StandingApproval | None = None


@attrs.define(kw_only=True)
class Approvals:
    """Request, wait on, read and decide approval requests; list and revoke standing
    approvals. One instance, shared by every surface (N2)."""

    _claims: ClaimRepository = attrs.field(alias="claims")
    _host: HostRepository = attrs.field(alias="host")
    _authorizer: TaskAuthorizer = attrs.field(alias="authorizer")
    _run: Runner = attrs.field(alias="runner")
    _asking: Asking = attrs.field(alias="asking")
    _requests: LiveRequests = attrs.field(alias="requests")
    _resolver: Resolver = attrs.field(alias="resolver")
    _clock: Clock = attrs.field(alias="clock")
    _ids: IdGenerator = attrs.field(alias="ids")
    _groups: GroupDirectory | None = attrs.field(default=None, alias="groups")
    _standing: StandingApprovals | None = attrs.field(default=None, alias="standing")
    _users: UserRoster | None = attrs.field(default=None, alias="users")
    _wait_interval: float = attrs.field(default=WAIT_INTERVAL_S, alias="wait_interval")

    def now(self) -> datetime:
        """The clock standing approvals are judged by (``active``)."""
        return self._clock.now()

    # -- asking ------------------------------------------------------------------------------

    async def request(
        self,
        identity: Identity,
        *,
        session_id: str,
        terms: ApprovalTerms,
        candidates: Candidates = NO_CANDIDATES,
        task_id: str | None = None,
        on_progress: ProgressCallback | None = None,
        progress_interval: float = PROGRESS_INTERVAL_S,
        alongside: Alongside | None = None,
        on_bundle: OnBundle | None = None,
    ) -> ApprovalView:
        """The agent's blocking request (MCP): a standing approval that matches decides at
        once; otherwise the ask waits like ``ask_user_question`` until the request is decided
        (``on_progress`` every ``progress_interval`` seconds, ``alongside`` and ``on_bundle``
        as :meth:`Asking.ask` takes them; ``task_id``, when given, must be the session's).

        Raises:
            ValidationError: the terms or candidates do not fit (the field is named).
            NotFound, NotActive, LimitExceeded, ClaimError: as :meth:`Asking.ask`.
            WaitEnded: the wait ended undecided; the request stays open (resume path).
        """
        if task_id:
            await self._check_task(identity, session_id, task_id)
        hit = await self._standing_hit(identity, session_id, terms, candidates, task_id)
        if hit is not None:
            return hit
        extras = BundleExtras(approval=terms, candidates=candidates)
        result = await self._asking.ask(
            identity,
            session_id,
            (),
            "",
            on_progress=on_progress,
            progress_interval=progress_interval,
            alongside=alongside,
            on_bundle=on_bundle,
            extras=extras,
        )
        return await self._read_view(result.pending_id)

    async def _check_task(self, identity: Identity, session_id: str, task_id: str) -> None:
        """The blocking ask takes no task id of its own: check it against the (authorized)
        session as a create does."""
        session = await self._run.guarded(
            APPROVALS_FAILED,
            load_authorized_session,
            self._host,
            self._authorizer,
            identity,
            session_id,
        )
        if session.task_id != task_id:
            raise InvalidArgument("task_id does not match the session's task", field="task_id")

    async def create(
        self,
        identity: Identity,
        *,
        session_id: str,
        terms: ApprovalTerms,
        candidates: Candidates = NO_CANDIDATES,
        task_id: str | None = None,
    ) -> ApprovalView:
        """The non-blocking request (REST): the view at once — ``approved`` already when a
        standing approval matched — then :meth:`wait`.

        Raises:
            as :meth:`request`, without ``WaitEnded``.
        """
        hit = await self._standing_hit(identity, session_id, terms, candidates, task_id)
        if hit is not None:
            return hit
        pending_id = await self._create(identity, session_id, terms, candidates, task_id)
        return await self._read_view(pending_id)

    async def _create(
        self,
        identity: Identity,
        session_id: str,
        terms: ApprovalTerms,
        candidates: Candidates,
        task_id: str | None,
    ) -> str:
        extras = BundleExtras(approval=terms, candidates=candidates)
        return await self._asking.create(
            identity, session_id, (), "", task_id=task_id, extras=extras
        )

    async def _standing_hit(
        self,
        identity: Identity,
        session_id: str,
        terms: ApprovalTerms,
        candidates: Candidates,
        task_id: str | None,
    ) -> ApprovalView | None:
        """Validate the request; when a standing approval of the session's workspace matches
        its action, create the request and decide it at once (None when none matches)."""
        validate_terms(terms, candidates)
        if self._standing is None:
            return None
        standing = await self._run.guarded(APPROVALS_FAILED, self._find_standing, session_id, terms)
        if standing is None:
            return None
        pending_id = await self._create(identity, session_id, terms, candidates, task_id)
        bundle = await self._run.guarded(
            StoreFailure(APPROVALS_FAILED, pending_id=pending_id),
            self._claims.load_bundle,
            pending_id,
        )
        if bundle is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        await self._resolver.decide_at_once(bundle, standing)
        log.info("approval.standing_hit", pending_id=pending_id, standing_id=standing.id)
        return await self._read_view(pending_id)

    def _find_standing(self, session_id: str, terms: ApprovalTerms) -> StandingApproval | None:
        """A standing approval of the session's task's workspace matching the action (the
        session is authorized again by the create that follows)."""
        assert self._standing is not None
        session = self._host.get_session(session_id) if session_id else None
        task = self._host.get_task(session.task_id) if session is not None else None
        if task is None:
            return None
        return self._standing.find_match(task.workspace_id, terms.action, self._clock.now())

    # -- reading and waiting -----------------------------------------------------------------

    async def view(self, identity: Identity, pending_id: str) -> ApprovalView:
        """The approval request, when ``identity`` may see it: a candidate, its asker, or
        anyone who sees the task when it names no candidates.

        Raises:
            NotFound: unknown, foreign, not an approval, or not for this caller.
            ClaimError: the store failed.
        """
        await self._authorized(identity, pending_id)
        return await self._read_view(pending_id)

    async def wait(self, identity: Identity, pending_id: str, timeout: float) -> ApprovalView:
        """The request once it is decided or closed, or as it stands after ``timeout``
        seconds (status still ``pending``). The asker's wait takes a decision live, as an
        agent's REST wait does; anyone else's re-reads the request.

        Raises:
            NotFound, ClaimError: as :meth:`view`.
        """
        bundle = await self._authorized(identity, pending_id)
        current = await self._read_view(pending_id)
        if current.status != "pending" or timeout <= 0:
            return current
        asker = bundle.asker
        if asker is not None and asker.user_id == (identity.user_id or ""):
            started = anyio.current_time()
            try:
                await self._requests.wait(identity, pending_id, timeout)
                return await self._read_view(pending_id)
            except WaitEnded as exc:
                if exc.reason is not WaitEnd.NOT_FOUND:  # timed out, cancelled, failed
                    return await self._read_view(pending_id)
            # No live entry here (another process created it, or a restart): watch the rows.
            timeout -= anyio.current_time() - started
        with anyio.move_on_after(timeout):
            while current.status == "pending":
                await anyio.sleep(self._wait_interval)
                current = await self._read_view(pending_id)
        return current

    async def _authorized(self, identity: Identity, pending_id: str) -> Bundle:
        bundle = await authorize_bundle(
            self._run,
            self._claims,
            self._authorizer,
            identity,
            pending_id,
            Assignment(groups_of=self._groups_of(), asker_sees=True),
        )
        if bundle.approval is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        return bundle

    def _groups_of(self) -> GroupsOf | None:
        return self._groups.groups_of if self._groups is not None else None

    async def _read_view(self, pending_id: str) -> ApprovalView:
        return await self._run.guarded(
            StoreFailure(APPROVALS_FAILED, pending_id=pending_id), self.read_view, pending_id
        )

    def read_view(self, pending_id: str) -> ApprovalView:
        """The view from the store, on a worker thread, without authorization (for callers
        that authorized already, such as a surface rendering a bundle it listed).

        Raises:
            NotFound: no such approval request.
        """
        reread = self._claims.reread_bundle(pending_id)
        bundle = reread.bundle
        if bundle is None or not bundle.rows or bundle.approval is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        votes = self._claims.approval_votes(pending_id)
        closed = reread.closed
        return approval_view(
            bundle, votes, self._candidate_names(bundle.candidates), closed[0] if closed else ""
        )

    async def views_of(self, bundles: Iterable[HasQuestions]) -> dict[str, ApprovalView]:
        """The views of the approval requests among ``bundles`` (a page a caller was already
        allowed to list), by pending id — for the additive ``approval`` object of list and
        history items. Only a bundle shaped like an approval (its one question the approval
        question) is read."""
        wanted = [bundle.pending_id for bundle in bundles if _looks_like_approval(bundle)]
        if not wanted:
            return {}

        def read() -> dict[str, ApprovalView]:
            found: dict[str, ApprovalView] = {}
            for pending_id in wanted:
                with contextlib.suppress(NotFound):  # a question that merely looks alike
                    found[pending_id] = self.read_view(pending_id)
            return found

        return await self._run.guarded(APPROVALS_FAILED, read)

    def _candidate_names(self, candidates: Candidates) -> CandidateNames:
        users = tuple(self._user_name(user_id) for user_id in candidates.user_ids)
        groups: tuple[str, ...] = candidates.group_ids
        if candidates.group_ids and self._groups is not None:
            names = {group.id: group.name for group in self._groups.list_groups()}
            groups = tuple(names.get(group_id, group_id) for group_id in candidates.group_ids)
        return CandidateNames(users=users, groups=groups)

    def _user_name(self, user_id: str) -> str:
        user = self._users.get_user(user_id) if self._users is not None else None
        return user.name if user is not None else user_id

    # -- deciding ----------------------------------------------------------------------------

    async def decide(
        self,
        identity: Identity,
        pending_id: str,
        decision: Decision,
        comment: str = "",
        *,
        surface: Surface,
        allow_for_minutes: int | None = None,
        constraints: Mapping[str, object] | None = None,
    ) -> DecisionReply:
        """Vote on the request (quorum, veto, once per person: the resolver's rule). With
        ``allow_for_minutes`` an approving vote that counts also grants a standing approval
        of the same action in the task's workspace, its arguments bound by ``constraints``
        (the rest must equal this action's).

        Raises:
            NotFound: not visible, not an approval, or the caller is not a candidate.
            ValidationError: ``allow_for_minutes``/``constraints`` do not fit (or come with a
                deny), or the comment is too long.
            NotActive: the request closed without a decision.
            ClaimError, DeliveryError: as :meth:`Resolver.resolve`.
        """
        bundle = await self._resolver.authorize_bundle(identity, pending_id)
        if bundle.approval is None:
            raise NotFound(NOT_FOUND_MESSAGE)
        grant = self._standing_terms(bundle.approval, decision, allow_for_minutes, constraints)
        outcome = await self._resolver.vote(
            identity, pending_id, decision, comment, surface=surface
        )
        standing = None
        if grant is not None and outcome.result.counted:
            standing = await self._grant(identity, bundle, *grant)
        view = await self._read_view(pending_id)
        return _reply(view, outcome.result, standing)

    def _standing_terms(
        self,
        record: ApprovalRecord,
        decision: Decision,
        allow_for_minutes: int | None,
        constraints: Mapping[str, object] | None,
    ) -> tuple[int, Mapping[str, Constraint]] | None:
        """Checked before the vote, so a bad grant never leaves a vote behind."""
        if allow_for_minutes is None:
            if constraints is not None:
                raise ValidationError(
                    "constraints need allow_for_minutes", field="standing.constraints"
                )
            return None
        if decision is not Decision.APPROVE:
            raise ValidationError(
                "allow_for_minutes comes with approve only", field="allow_for_minutes"
            )
        if self._standing is None:
            raise ValidationError(
                "standing approvals are not available with this storage",
                field="allow_for_minutes",
            )
        standing_duration(allow_for_minutes)
        return allow_for_minutes, parse_constraints(constraints, record.terms.action)

    async def _grant(
        self,
        identity: Identity,
        bundle: Bundle,
        minutes: int,
        constraints: Mapping[str, Constraint],
    ) -> StandingApproval:
        assert self._standing is not None
        standing = self._standing

        def grant() -> StandingApproval:
            task = self._host.get_task(bundle.task_id)
            now = self._clock.now()
            return standing.grant(
                StandingApproval(
                    id=self._ids.new_id(),
                    workspace_id=task.workspace_id if task is not None else "",
                    action_name=bundle.approval.terms.action.name if bundle.approval else "",
                    constraints=constraints,
                    granted_by_id=identity.user_id or "",
                    granted_by_name=identity.display_name or identity.user_id or "",
                    granted_at=now,
                    expires_at=now + standing_duration(minutes),
                    source_pending_id=bundle.pending_id,
                )
            )

        granted = await self._run.guarded(APPROVALS_FAILED, grant)
        log.info("approval.standing_granted", standing_id=granted.id, pending_id=bundle.pending_id)
        return granted

    # -- standing approvals ------------------------------------------------------------------

    async def list_standing(
        self, identity: Identity, *, include_inactive: bool = False
    ) -> tuple[StandingApproval, ...]:
        """The standing approvals of the workspaces ``identity`` sees, newest grant first."""
        if self._standing is None:
            return ()

        def read() -> tuple[StandingApproval, ...]:
            return self._visible_standing(identity, include_inactive, self._clock.now())

        return await self._run.guarded(APPROVALS_FAILED, read)

    async def revoke_standing(self, identity: Identity, standing_id: str) -> StandingApproval:
        """Revoke a standing approval of a workspace ``identity`` sees (a repeat keeps the
        first revocation).

        Raises:
            NotFound: unknown, or in a workspace the caller does not see.
        """
        if self._standing is None:
            raise NotFound(resource=Resource.STANDING_APPROVAL)
        standing = self._standing

        def revoke() -> StandingApproval | None:
            now = self._clock.now()
            found = self._visible_standing(identity, True, now)
            if not any(item.id == standing_id for item in found):
                return None
            return standing.revoke(standing_id, identity.user_id or "", now)

        revoked = await self._run.guarded(APPROVALS_FAILED, revoke)
        if revoked is None:
            raise NotFound(resource=Resource.STANDING_APPROVAL)
        log.info("approval.standing_revoked", standing_id=standing_id)
        return revoked

    def _visible_standing(
        self, identity: Identity, include_inactive: bool, now: datetime
    ) -> tuple[StandingApproval, ...]:
        """The standing approvals granted on tasks ``identity`` sees (L1c, the list's own rule:
        a task without a workspace, or in one that no longer exists, is seen by everyone)."""
        assert self._standing is not None
        found = self._standing.list_standing(None, include_inactive=include_inactive, now=now)
        if not identity.is_scoped:
            return found
        visibility = self._authorizer.visibility(identity)
        owners = {workspace.id: workspace.owner_id for workspace in self._host.list_workspaces()}
        return tuple(
            item
            for item in found
            if task_visible(
                visibility,
                item.workspace_id,
                item.workspace_id in owners,
                owners.get(item.workspace_id, ""),
            )
        )

    # -- assignment by name ------------------------------------------------------------------

    async def candidates_named(self, users: Sequence[str], groups: Sequence[str]) -> Candidates:
        """The candidates named by user names (or ids) and group names, as a request gives
        them.

        Raises:
            ValidationError: an unknown or ambiguous name; ``field`` is
                ``candidates.users[i]`` or ``candidates.groups[i]``.
        """
        if not users and not groups:
            return Candidates()
        return await self._run.guarded(APPROVALS_FAILED, self._named, users, groups)

    def _named(self, users: Sequence[str], groups: Sequence[str]) -> Candidates:
        everyone = self._users.list_users() if self._users is not None and users else ()
        user_ids = [_user_id(everyone, name, index) for index, name in enumerate(users)]
        group_ids: list[str] = []
        for index, name in enumerate(groups):
            group = self._groups.group_by_name(name) if self._groups is not None else None
            if group is None:
                raise ValidationError(
                    f"candidates.groups[{index}]: no group named {name!r}",
                    field=f"candidates.groups[{index}]",
                )
            group_ids.append(group.id)
        return Candidates(user_ids=tuple(user_ids), group_ids=tuple(group_ids))


def _user_id(everyone: Sequence[User], name: str, index: int) -> str:
    field = f"candidates.users[{index}]"
    by_id = [user for user in everyone if user.id == name and user.active]
    named = by_id or [user for user in everyone if user.name == name and user.active]
    if not named:
        raise ValidationError(f"{field}: no active user named {name!r}", field=field)
    if len(named) > 1:
        raise ValidationError(
            f"{field}: {len(named)} users are named {name!r}; give the user id", field=field
        )
    return named[0].id


def approval_view(
    bundle: Bundle, votes: Sequence[Vote], candidates: CandidateNames, closed_reason: str = ""
) -> ApprovalView:
    """The view of an approval bundle as read (``bundle.approval`` must be set)."""
    record = bundle.approval
    assert record is not None
    winner = replay_winner(bundle.pending_id, bundle.rows)
    decision = bundle.decision
    comment = ""
    decided_by: ResolvedBy | None = None
    if winner is not None:
        comment = winner.reject_reason if winner.rejected else _comment(winner.answers)
        decided_by = next((row.resolved_by for row in bundle.rows if row.resolved_by), None)
    status: Status = "pending"
    if decision is not None:
        status = "approved" if decision is Decision.APPROVE else "denied"
    elif closed_reason:
        status = "closed"
    return ApprovalView(
        pending_id=bundle.pending_id,
        status=status,
        record=record,
        candidates=candidates,
        votes=tuple(votes),
        decision=decision,
        comment=comment,
        decided_by=decided_by,
        decided_at=winner.responded_at if winner is not None else None,
        task_id=bundle.task_id,
        session_id=bundle.session_id,
        created_at=bundle.created_at,
        closed_reason=closed_reason,
    )


def _comment(answers: Sequence[Answer]) -> str:
    return next((answer.custom_text for answer in answers if answer.custom_text), "")


def _reply(
    view: ApprovalView, result: VoteResult, standing: StandingApproval | None
) -> DecisionReply:
    return DecisionReply(approval=view, vote=result.vote, counted=result.counted, standing=standing)


# -- groups ----------------------------------------------------------------------------------


@attrs.define(kw_only=True)
class Groups:
    """The groups assignments name (issue #33): administrators (or the unscoped CLI operator)
    manage them; to anyone else every group is not found."""

    _groups: GroupDirectory | None = attrs.field(alias="groups")
    _users: UserRoster | None = attrs.field(default=None, alias="users")
    _run: Runner = attrs.field(alias="runner")

    def _directory(self, identity: Identity) -> GroupDirectory:
        if self._groups is None or (identity.is_scoped and not identity.is_admin):
            raise NotFound(resource=Resource.GROUP)
        return self._groups

    async def create(self, identity: Identity, name: str) -> Group:
        directory = self._directory(identity)
        return await self._run.guarded(
            GROUPS_FAILED, directory.create_group, check_group_name(name)
        )

    async def delete(self, identity: Identity, name: str) -> None:
        """Raises ``NotFound`` for an unknown group."""
        if not await self._run.guarded(GROUPS_FAILED, self._directory(identity).delete_group, name):
            raise NotFound(resource=Resource.GROUP)

    async def list(self, identity: Identity) -> tuple[Group, ...]:
        return await self._run.guarded(GROUPS_FAILED, self._directory(identity).list_groups)

    async def add_member(self, identity: Identity, name: str, user: str) -> Group:
        """Add the user (by id or name) to the group; idempotent.

        Raises:
            NotFound: unknown group or user.
        """
        directory = self._directory(identity)

        def add() -> Group:
            return directory.add_member(self._existing(directory, name).name, self._user(user))

        return await self._run.guarded(GROUPS_FAILED, add)

    async def remove_member(self, identity: Identity, name: str, user: str) -> Group:
        """Remove the user (by id or name); idempotent. Raises ``NotFound`` for an unknown
        group or user."""
        directory = self._directory(identity)

        def remove() -> Group:
            return directory.remove_member(self._existing(directory, name).name, self._user(user))

        return await self._run.guarded(GROUPS_FAILED, remove)

    async def member_names(self, group: Group) -> tuple[str, ...]:
        """The group's members by name (an id when the user is unknown)."""

        def names() -> tuple[str, ...]:
            found = [self._users.get_user(m) if self._users else None for m in group.member_ids]
            return tuple(
                user.name if user is not None else member
                for user, member in zip(found, group.member_ids, strict=True)
            )

        return await self._run.guarded(GROUPS_FAILED, names)

    @staticmethod
    def _existing(directory: GroupDirectory, name: str) -> Group:
        group = directory.group_by_name(name)
        if group is None:
            raise NotFound(resource=Resource.GROUP)
        return group

    def _user(self, user: str) -> str:
        if self._users is None:
            return user
        if self._users.get_user(user) is not None:
            return user
        named = [found for found in self._users.list_users() if found.name == user]
        if len(named) != 1:
            raise NotFound(resource=Resource.USER)
        return named[0].id


__all__ = [
    "ApprovalView",
    "Approvals",
    "CandidateNames",
    "DecisionReply",
    "Groups",
    "UserRoster",
    "approval_view",
]
