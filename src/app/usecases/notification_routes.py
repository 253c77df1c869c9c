"""Managing notification routes (issue #17), for REST and the CLI.

Who may manage: an administrator (or an unscoped caller: auth disabled, the CLI operator)
manages every route, the default routes (workspace "") included; the owner of a workspace
manages that workspace's routes. Anyone else sees none and is told ``NotFound`` (the workspace
stays as invisible as the authorizer makes it).

On whose behalf a route acts (``user_id``, checked again at every send): an administrator names
any user (or none: an unscoped operator route); anyone else's routes act for themselves. An
e-mail route's address is the address of that user — Clarion keeps no e-mail addresses of its
own, so the user who may see the workspace is the authority, not the address.

Where a route may deliver (issue #29 S4): its destination is checked by the injected
:class:`clarion.ports.notifications.DestinationCheck` — an internal address is refused unless
the operator allowed it, and only administrators may give Apprise arbitrary URLs. A webhook
route gets a random signing secret of its own (signed by default), shown to whoever manages
the route.

Refused before storing (issue #30): a route for a workspace that does not exist (for an
administrator too — a mistyped id would route nothing), and a route whose channel this
deployment has not configured (``unconfigured``: an e-mail route without an SMTP host, a Slack
route without a bot token), whose every delivery would fail; ``force`` stores it anyway (the
CLI's ``--force``: the serving processes may have the setting its shell lacks).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping

import attrs

from clarion.app.usecases.runner import Runner, StoreFailure
from clarion.domain.errors import InvalidArgument, NotFound, Resource
from clarion.domain.model import Identity
from clarion.domain.notifications import Route, RouteSpec, check_route_spec
from clarion.ports.host import HostRepository
from clarion.ports.notifications import DestinationCheck, NotificationRoutes
from clarion.ports.tokens import UserDirectory

ROUTES_FAILED = "failed to read or write notification routes"


class ChannelNotConfigured(InvalidArgument):
    """A route's channel kind cannot deliver here: ``setting`` names what is missing."""

    def __init__(self, kind: str, setting: str) -> None:
        super().__init__(
            f"{kind} routes cannot deliver: {setting} is not set, so every {kind} notification "
            "would fail (configure it first; see docs/notifications.md)",
            field="channel",
        )
        self.kind = kind
        self.setting = setting


def _manages_everything(identity: Identity) -> bool:
    return not identity.is_scoped or identity.is_admin


@attrs.define(kw_only=True)
class NotificationRouting:
    """Add, list and remove routes on behalf of an identity (see the module docstring)."""

    _store: NotificationRoutes = attrs.field(alias="store")
    _host: HostRepository = attrs.field(alias="host")
    _users: UserDirectory | None = attrs.field(alias="users")
    _run: Runner = attrs.field(alias="runner")
    # #29: with authentication enabled an e-mail route must act for a user — its answer links
    # answer as that user; without one it would never send (see docs/notifications.md).
    _email_needs_user: bool = attrs.field(default=False, alias="email_needs_user")
    _destinations: DestinationCheck | None = attrs.field(default=None, alias="destinations")
    # Channel kind → the setting it lacks here (#30); a kind not named can deliver.
    _unconfigured: Mapping[str, str] = attrs.field(factory=dict, alias="unconfigured")

    async def _may_manage(self, identity: Identity, workspace_id: str) -> bool:
        if _manages_everything(identity):
            return True
        if not workspace_id:
            return False
        workspace = await self._run.guarded(
            StoreFailure(ROUTES_FAILED), self._host.get_workspace, workspace_id
        )
        return workspace is not None and workspace.owner_id == identity.user_id

    async def add(self, identity: Identity, spec: RouteSpec, *, force: bool = False) -> Route:
        """Store a route (``force``: even when its channel is not configured here).

        Raises:
            NotFound: the caller may not manage the workspace's routes, or the workspace does
                not exist (``key``: its id, for a caller who manages every route).
            ChannelNotConfigured: the channel kind cannot deliver here, unless ``force``.
            ValidationError: the spec is invalid, names an unknown user, an escalation route
                that does not exist or that the caller may not manage (the same error), or
                (for a non-administrator) another user; or it is an e-mail route without a
                user while ``email_needs_user`` (``field`` ``user_id``); or its destination is
                refused (``field`` "channel").
        """
        spec = check_route_spec(spec)
        if not await self._may_manage(identity, spec.workspace_id):
            raise NotFound(resource=Resource.WORKSPACE)
        if spec.workspace_id and _manages_everything(identity):
            workspace = await self._run.guarded(
                StoreFailure(ROUTES_FAILED), self._host.get_workspace, spec.workspace_id
            )
            if workspace is None:
                raise NotFound(resource=Resource.WORKSPACE, key=spec.workspace_id)
        if self._destinations is not None:
            await self._destinations.check(spec.channel, trusted=_manages_everything(identity))
        if spec.channel.kind == "webhook" and not spec.secret:
            spec = attrs.evolve(spec, secret=secrets.token_urlsafe(32))
        if not _manages_everything(identity):
            if spec.user_id not in ("", identity.user_id):
                raise InvalidArgument("a route may only act for its creator", field="user_id")
            spec = attrs.evolve(spec, user_id=identity.user_id or "")
        if spec.user_id and self._users is not None:
            user = await self._run.guarded(
                StoreFailure(ROUTES_FAILED), self._users.get_user, spec.user_id
            )
            if user is None:
                raise InvalidArgument(f"no such user: {spec.user_id}", field="user_id")
        if spec.escalate_to:
            # Only into a route the caller may manage (#29 S7): one it may not manage is
            # refused exactly like a missing one, so the check tells nothing of other routes.
            target = await self._run.guarded(
                StoreFailure(ROUTES_FAILED), self._store.get_route, spec.escalate_to
            )
            if target is None or not await self._may_manage(identity, target.workspace_id):
                raise InvalidArgument("escalate_to names no route", field="escalate_to")
        if self._email_needs_user and spec.channel.kind == "email" and not spec.user_id:
            raise InvalidArgument(
                "an e-mail route needs a user_id while authentication is enabled: its answer "
                "links answer as that user",
                field="user_id",
            )
        missing = self._unconfigured.get(spec.channel.kind)
        if missing is not None and not force:
            raise ChannelNotConfigured(spec.channel.kind, missing)
        created_by = identity.user_id or "operator"
        return await self._run.guarded(
            StoreFailure(ROUTES_FAILED), lambda: self._store.add_route(spec, created_by=created_by)
        )

    async def list(self, identity: Identity) -> tuple[Route, ...]:
        """The routes the caller may manage, oldest first."""
        routes = await self._run.guarded(StoreFailure(ROUTES_FAILED), self._store.list_routes)
        return tuple([r for r in routes if await self._may_manage(identity, r.workspace_id)])

    async def remove(self, identity: Identity, route_id: str) -> None:
        """Remove a route; its outstanding notifications are dropped when due.

        Raises:
            NotFound: no such route, or the caller may not manage it.
        """
        route = await self._run.guarded(
            StoreFailure(ROUTES_FAILED), self._store.get_route, route_id
        )
        if route is None or not await self._may_manage(identity, route.workspace_id):
            raise NotFound(resource=Resource.NOTIFICATION_ROUTE)
        await self._run.guarded(StoreFailure(ROUTES_FAILED), self._store.remove_route, route_id)


__all__ = ["ChannelNotConfigured", "NotificationRouting"]
