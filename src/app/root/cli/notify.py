"""``clarion notify add|list|remove``: notification routes, written to the database directly
by the operator (who manages every route), so they may run next to the serving process."""

from __future__ import annotations

import argparse
import sys
from typing import Any

import anyio

from clarion.app.root.cli.common import (
    CliError,
    command_group,
    database_commands,
    existing_database,
    print_listing,
)
from clarion.domain.model import Identity
from clarion.domain.notifications import ROUTE_EVENTS, Route, RouteSpec, parse_channel

OPERATOR = Identity.internal()


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = command_group(commands, "notify", help="manage notification routes")
    add = sub.add_parser("add", help="route a workspace's notifications to a channel")
    add.add_argument(
        "channel", help="email:ADDRESS, webhook:URL, apprise:URL or slack:#CHANNEL / slack:@USER"
    )
    add.add_argument("--workspace", default="", help="workspace id ('' = workspace-less tasks)")
    add.add_argument("--user", default="", help="the user the route acts for (and notifies)")
    add.add_argument(
        "--events",
        default="",
        help=f"comma-separated events (default: all of {', '.join(ROUTE_EVENTS)})",
    )
    add.add_argument("--remind-after", type=float, help="remind every this many seconds")
    add.add_argument("--escalate-after", type=float, help="escalate after this many seconds")
    add.add_argument("--escalate-to", default="", help="the route id to escalate to")
    add.add_argument("--deadline-after", type=float, help="the deadline, in seconds")
    add.add_argument(
        "--on-deadline", default="keep", help="keep (default), expire or default:<option id>"
    )
    add.add_argument(
        "--include-answers", action="store_true", help="send the answers with 'resolved'"
    )
    add.add_argument(
        "--force",
        action="store_true",
        help="store an e-mail or Slack route although this shell's environment lacks the "
        "channel's setting (CLARION_SMTP_HOST, CLARION_SLACK_BOT_TOKEN) — when the serving "
        "processes have it",
    )
    listing = sub.add_parser("list", help="list the routes")
    listing.add_argument("--json", action="store_true", help="print JSON")
    remove = sub.add_parser("remove", help="remove a route")
    remove.add_argument("route_id", help="the route's id (see `notify list`)")
    database_commands(
        (add, _add),
        (listing, _list),
        (remove, _remove),
    )


def route_json(route: Route) -> dict[str, Any]:
    return {
        "id": route.id,
        "workspace_id": route.workspace_id,
        "channel": str(route.channel),
        "user_id": route.user_id,
        "events": list(route.events),
        "remind_after_s": route.remind_after_s,
        "escalate_after_s": route.escalate_after_s,
        "escalate_to": route.escalate_to,
        "deadline_after_s": route.deadline_after_s,
        "on_deadline": route.on_deadline,
        "include_answers": route.include_answers,
        "created_by": route.created_by,
        "created_at": route.created_at.isoformat(),
        "secret": route.secret,
    }


def _add(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import route_administration
    from clarion.app.usecases.notification_routes import ChannelNotConfigured
    from clarion.domain.errors import NotFound

    events = tuple(e for e in args.events.split(",") if e.strip()) or ROUTE_EVENTS
    spec = RouteSpec(
        workspace_id=args.workspace,
        channel=parse_channel(args.channel),
        user_id=args.user,
        events=events,
        remind_after_s=args.remind_after,
        escalate_after_s=args.escalate_after,
        escalate_to=args.escalate_to,
        deadline_after_s=args.deadline_after,
        on_deadline=args.on_deadline,
        include_answers=args.include_answers,
    )
    with route_administration(existing_database(args)) as routing:
        try:
            route = anyio.run(lambda: routing.add(OPERATOR, spec, force=args.force))
        except NotFound as exc:
            raise CliError(
                f"workspace not found: {args.workspace} (--workspace takes the id "
                "POST /api/v1/workspaces returned; leave it out for the default routes)"
            ) from exc
        except ChannelNotConfigured as exc:
            raise CliError(
                f"{exc.kind} routes cannot deliver: {exc.setting} is not set, so every "
                f"{exc.kind} notification would fail — set it (docs/notifications.md), or add "
                "--force if the serving processes have it"
            ) from exc
    print(route.id)
    if route.secret:
        # On stderr, so `ID=$(clarion notify add …)` still gets the id alone.
        print(
            f"signing secret: {route.secret} (receivers verify Clarion-Signature with it; "
            "`clarion notify list --json` shows it again)",
            file=sys.stderr,
        )
    return 0


def _list(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import route_administration

    with route_administration(existing_database(args)) as routing:
        routes = anyio.run(routing.list, OPERATOR)
    body = [route_json(r) for r in routes]
    return print_listing(args, routes, json_body=body, empty="No routes.", print_item=_print_route)


def _print_route(route: Route) -> None:
    where = route.workspace_id or "(default)"
    policy = []
    if route.remind_after_s:
        policy.append(f"remind every {route.remind_after_s:g}s")
    if route.escalate_after_s:
        policy.append(f"escalate after {route.escalate_after_s:g}s to {route.escalate_to}")
    if route.deadline_after_s:
        policy.append(f"deadline {route.deadline_after_s:g}s {route.on_deadline}")
    print(
        f"{route.id}  {where}  {route.channel}  as {route.user_id or 'operator'}  "
        f"events {','.join(route.events)}" + (f"  {'; '.join(policy)}" if policy else "")
    )


def _remove(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import route_administration
    from clarion.domain.errors import NotFound

    with route_administration(existing_database(args)) as routing:
        try:
            anyio.run(routing.remove, OPERATOR, args.route_id)
        except NotFound as exc:
            raise CliError(f"route not found: {args.route_id}") from exc
    print(f"removed {args.route_id}")
    return 0
