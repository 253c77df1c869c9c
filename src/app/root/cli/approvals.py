"""``clarion groups …`` and ``clarion approvals …`` (issue #33).

Groups are written to the database directly by the operator (who manages every group), like
``clarion notify``, so they may run next to the serving process. Approvals are decided by a
person, so ``clarion approvals`` talks to the server over the REST API with their token, like
``clarion questions`` (its votes are recorded with the surface ``cli``).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import anyio

from clarion.app.root.cli.common import (
    CliError,
    command_group,
    database_commands,
    existing_database,
    print_listing,
    server_flags,
)
from clarion.app.root.cli.questions import client_of
from clarion.domain.approvals import Group
from clarion.domain.model import Identity

OPERATOR = Identity.internal()


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    _add_group_commands(commands)
    _add_approval_commands(commands)


# -- groups ------------------------------------------------------------------------------------


def _add_group_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = command_group(commands, "groups", help="manage the groups approvals are assigned to")
    create = sub.add_parser("create", help="create a group")
    create.add_argument("name", help="the group's name (unique, case-insensitively)")
    delete = sub.add_parser("delete", help="delete a group and its memberships")
    delete.add_argument("name", help="the group's name")
    listing = sub.add_parser("list", help="list the groups and their members")
    listing.add_argument("--json", action="store_true", help="print JSON")
    add = sub.add_parser("add-member", help="add a user to a group")
    remove = sub.add_parser("remove-member", help="remove a user from a group")
    for member in (add, remove):
        member.add_argument("name", help="the group's name")
        member.add_argument("user", help="the user's name or id")
    database_commands(
        (create, _group_create),
        (delete, _group_delete),
        (listing, _group_list),
        (add, _group_add),
        (remove, _group_remove),
    )


def _group_create(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import group_administration

    with group_administration(existing_database(args)) as groups:
        group = anyio.run(groups.create, OPERATOR, args.name)
    print(group.id)
    return 0


def _group_delete(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import group_administration
    from clarion.domain.errors import NotFound

    with group_administration(existing_database(args)) as groups:
        try:
            anyio.run(groups.delete, OPERATOR, args.name)
        except NotFound as exc:
            raise CliError(f"group not found: {args.name}") from exc
    print(f"deleted {args.name}")
    return 0


def _group_list(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import group_administration

    with group_administration(existing_database(args)) as groups:

        async def listed() -> list[tuple[Group, tuple[str, ...]]]:
            found = await groups.list(OPERATOR)
            return [(group, await groups.member_names(group)) for group in found]

        rows = anyio.run(listed)
    body = [
        {"id": g.id, "name": g.name, "created_at": g.created_at.isoformat(), "members": list(m)}
        for g, m in rows
    ]
    return print_listing(args, rows, json_body=body, empty="No groups.", print_item=_print_group)


def _print_group(row: tuple[Group, tuple[str, ...]]) -> None:
    group, members = row
    print(f"{group.name}  {group.id}  members: {', '.join(members) or '(none)'}")


def _membership(args: argparse.Namespace, *, add: bool) -> int:
    from clarion.app.root.administration import group_administration
    from clarion.domain.errors import NotFound

    with group_administration(existing_database(args)) as groups:
        change = groups.add_member if add else groups.remove_member
        try:
            group = anyio.run(change, OPERATOR, args.name, args.user)
            members = anyio.run(groups.member_names, group)
        except NotFound as exc:
            raise CliError(f"{exc.message}: {args.name} / {args.user}") from exc
    print(f"{group.name}: {', '.join(members) or '(no members)'}")
    return 0


def _group_add(args: argparse.Namespace) -> int:
    return _membership(args, add=True)


def _group_remove(args: argparse.Namespace) -> int:
    return _membership(args, add=False)


# -- approvals ---------------------------------------------------------------------------------


def _add_approval_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = command_group(
        commands, "approvals", help="list, show and decide approval requests from a shell"
    )
    listing = sub.add_parser("list", help="the approval requests you may decide or see")
    listing.add_argument("--decided", action="store_true", help="the decided ones, newest first")
    show = sub.add_parser("show", help="one request: its action, votes and decision")
    show.add_argument("pending_id")
    decide = sub.add_parser("decide", help="approve or deny a request (your vote)")
    decide.add_argument("pending_id")
    decide.add_argument("decision", choices=("approve", "deny"))
    decide.add_argument("--comment", default="", help="a comment (a deny's reason)")
    decide.add_argument(
        "--allow-for",
        type=int,
        metavar="MINUTES",
        help="approve, and allow the same action for this many minutes (a standing approval)",
    )
    decide.add_argument(
        "--constraint",
        action="append",
        default=[],
        metavar="ARG=equals:JSON|prefix:TEXT|any",
        help="with --allow-for: how a later action's argument must match (repeatable; "
        "arguments not named must equal this action's)",
    )
    standing = sub.add_parser("standing", help="the standing approvals of your workspaces")
    standing.add_argument("--all", action="store_true", help="also expired and revoked ones")
    revoke = sub.add_parser("revoke", help="revoke a standing approval")
    revoke.add_argument("standing_id")
    for parser, handler in (
        (listing, _approvals_list),
        (show, _approvals_show),
        (decide, _approvals_decide),
        (standing, _approvals_standing),
        (revoke, _approvals_revoke),
    ):
        parser.add_argument("--json", action="store_true", help="print the raw JSON")
        server_flags(parser)
        parser.set_defaults(handler=handler)


def _print_json(value: Any) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


def _print_view(view: dict[str, Any]) -> None:
    action = view["action"]
    need = f"{view['approvals']} of {view['required_approvals']} approvals"
    print(f"{view['pending_id']}  {view['status']}  {action['name']}  ({need})")
    arguments = json.dumps(action["arguments"], indent=2, sort_keys=True, ensure_ascii=False)
    print("  arguments: " + arguments.replace("\n", "\n  "))
    print(f"  digest: {view['action_digest']}")
    if view["reason"]:
        print(f"  reason: {view['reason']}")
    candidates = [*view["candidates"]["users"], *(f"@{g}" for g in view["candidates"]["groups"])]
    if candidates:
        print(f"  candidates: {', '.join(candidates)}")
    for vote in view["votes"]:
        comment = f": {vote['comment']}" if vote["comment"] else ""
        print(f"  vote: {vote['display_name'] or vote['voter']} {vote['decision']}{comment}")
    by = view["decided_by"]
    if by is not None:
        comment = f" — {view['comment']}" if view["comment"] else ""
        print(f"  decided {view['decision']} by {by['display_name'] or by['identity_id']}{comment}")
    if view["closed_reason"]:
        print(f"  closed: {view['closed_reason']}")


def _approvals_list(args: argparse.Namespace) -> int:
    views = client_of(args).approvals(decided=args.decided)
    body = {"approvals": views, "count": len(views)}
    return print_listing(
        args, views, json_body=body, empty="No approval requests.", print_item=_print_view
    )


def _approvals_show(args: argparse.Namespace) -> int:
    view = client_of(args).approval(args.pending_id)
    if args.json:
        _print_json(view)
    else:
        _print_view(view)
    return 0


def _constraints(values: list[str]) -> dict[str, Any]:
    constraints: dict[str, Any] = {}
    for value in values:
        name, sep, spec = value.partition("=")
        kind, _, text = spec.partition(":")
        if not sep or not name:
            raise CliError(f"--constraint expects ARG=KIND[:VALUE], got {value!r}")
        if kind == "any" and not text:
            constraints[name] = {"any": True}
        elif kind == "prefix":
            constraints[name] = {"prefix": text}
        elif kind == "equals":
            try:
                constraints[name] = {"equals": json.loads(text)}
            except json.JSONDecodeError as exc:
                raise CliError(f"--constraint {name}: equals takes a JSON value") from exc
        else:
            raise CliError(f"--constraint {name}: the kind is equals:JSON, prefix:TEXT or any")
    return constraints


def _approvals_decide(args: argparse.Namespace) -> int:
    body: dict[str, Any] = {"decision": args.decision, "comment": args.comment}
    if args.allow_for is not None:
        body["allow_for_minutes"] = args.allow_for
        if args.constraint:
            body["constraints"] = _constraints(args.constraint)
    elif args.constraint:
        raise CliError("--constraint only goes with --allow-for")
    result = client_of(args).decide(args.pending_id, body)
    if args.json:
        _print_json(result)
        return 0
    counted = "your vote counted" if result["counted"] else "your vote was not counted"
    if not result["counted"] and result["vote"] is not None:
        counted += " (you had voted already)"
    print(f"{args.pending_id}: {result['approval']['status']} — {counted}")
    standing = result["standing_approval"]
    if standing is not None:
        print(f"  standing approval {standing['id']} until {standing['expires_at']}")
    return 0


def _approvals_standing(args: argparse.Namespace) -> int:
    found = client_of(args).standing(include_inactive=args.all)
    body = {"standing_approvals": found, "total": len(found)}
    return print_listing(
        args, found, json_body=body, empty="No standing approvals.", print_item=_print_standing
    )


def _print_standing(standing: dict[str, Any]) -> None:
    state = "active" if standing["active"] else "inactive"
    print(
        f"{standing['id']}  {standing['action_name']}  {state} until "
        f"{standing['expires_at']}  by {standing['granted_by_name']}  "
        f"{json.dumps(standing['constraints'], ensure_ascii=False, sort_keys=True)}"
    )


def _approvals_revoke(args: argparse.Namespace) -> int:
    revoked = client_of(args).revoke(args.standing_id)
    if args.json:
        _print_json(revoked)
    else:
        print(f"revoked {revoked['id']}")
    return 0
