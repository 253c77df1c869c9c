"""The administrative commands: ``clarion db upgrade``, ``users`` (and their Slack links) and
``tokens``. They write to the database directly and serve nothing, so they may run next to the
serving process."""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any

from clarion.app.root.cli.common import (
    CliError,
    command_group,
    database_commands,
    existing_database,
    print_listing,
    settings_of,
    usable_database,
)
from clarion.app.usecases.auth import Authentication
from clarion.domain.errors import NotFound, Resource
from clarion.domain.host import LOGIN_SESSION, AccessToken


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    db_commands = command_group(commands, "db", help="database maintenance")
    upgrade = db_commands.add_parser("upgrade", help="apply migrations (serve also does this)")

    user_commands = command_group(commands, "users", help="manage users")
    create_user = user_commands.add_parser("create", help="create a user; prints its id")
    create_user.add_argument("name", help="display name")
    create_user.add_argument("--admin", action="store_true", help="make the user an admin")
    list_users = user_commands.add_parser(
        "list",
        help="list the users, oldest first: id, name, admin, active, created, live tokens and "
        "linked Slack accounts",
    )
    list_users.add_argument("--json", action="store_true", help="print JSON")
    deactivate_user = user_commands.add_parser(
        "deactivate",
        help="deactivate a user: their tokens, browser sessions and agent tokens stop working",
    )
    deactivate_user.add_argument("user_id", help="the user's id (as `users create` printed it)")
    link_slack = user_commands.add_parser(
        "link-slack", help="let a Slack account answer as this user (docs/slack.md)"
    )
    link_slack.add_argument("user_id", help="the Clarion user's id")
    link_slack.add_argument("slack_user_id", help="the Slack member id, like U0123ABCD")
    unlink_slack = user_commands.add_parser("unlink-slack", help="unlink a Slack account")
    unlink_slack.add_argument("slack_user_id", help="the Slack member id")
    slack_links = user_commands.add_parser("slack-links", help="list the linked Slack accounts")
    slack_links.add_argument("--json", action="store_true", help="print JSON")

    token_commands = command_group(commands, "tokens", help="manage personal access tokens")
    create_token = token_commands.add_parser(
        "create", help="issue a personal access token; prints it once"
    )
    create_token.add_argument("user_id", help="the user the token acts as")
    create_token.add_argument("--name", default="", help="a label for the token")
    create_token.add_argument(
        "--expires-in-days", type=float, help="expire the token after this many days"
    )
    list_tokens = token_commands.add_parser(
        "list", help="list a user's tokens and browser sessions (never their text)"
    )
    list_tokens.add_argument("user_id", help="the user whose tokens to list")
    list_tokens.add_argument("--json", action="store_true", help="print JSON")
    revoke_token = token_commands.add_parser(
        "revoke", help="revoke a token (its browser sessions end with it) or end one session"
    )
    revoke_token.add_argument("token_id", help="the token's id (see `tokens list`)")
    database_commands(
        (upgrade, _db_upgrade),
        (create_user, _users_create),
        (list_users, _users_list),
        (deactivate_user, _users_deactivate),
        (link_slack, _users_link_slack),
        (unlink_slack, _users_unlink_slack),
        (slack_links, _users_slack_links),
        (create_token, _tokens_create),
        (list_tokens, _tokens_list),
        (revoke_token, _tokens_revoke),
    )


def _db_upgrade(args: argparse.Namespace) -> int:
    from clarion.app.root.storage import MEMORY_URL, opened_storage

    # A new SQLite file is this command's to create; a PostgreSQL database never is.
    settings = usable_database(settings_of(args), create=True)
    if settings.database_url == MEMORY_URL:
        # As before the one opener: memory:// keeps no schema to migrate.
        raise ValueError("unsupported database backend: 'memory'")
    with opened_storage(settings) as storage:
        revision = storage.upgrade()
    print(f"database at revision {revision}")
    return 0


@contextmanager
def _authentication(args: argparse.Namespace) -> Iterator[Authentication]:
    """Users and tokens in the database of ``args`` (admin commands write there directly).
    Nothing is served or recovered, so no SQLite file lock is taken: these commands may run
    next to the serving process. A user id that names nobody is one line saying where the ids
    are."""
    from clarion.app.root.administration import administration

    with administration(existing_database(args)) as authentication:
        try:
            yield authentication
        except NotFound as exc:
            if exc.resource is not Resource.USER:
                raise
            raise CliError(
                f"user not found: {getattr(args, 'user_id', '')} (see `clarion users list`)"
            ) from exc


def _users_create(args: argparse.Namespace) -> int:
    with _authentication(args) as authentication:
        user = authentication.create_user(args.name, is_admin=args.admin)
    print(user.id)
    return 0


def _users_list(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import administration, slack_links

    settings = existing_database(args)
    now = datetime.now(UTC)
    with administration(settings) as authentication:
        users = authentication.list_users()
        tokens = {
            user.id: sum(
                1
                for token in authentication.list_tokens(user.id)
                if token.kind != LOGIN_SESSION and token.usable_at(now)
            )
            for user in users
        }
    with slack_links(settings) as links:
        linked = Counter(link.user_id for link in links.links())
    rows = [
        {
            "id": user.id,
            "name": user.name,
            "is_admin": user.is_admin,
            "active": user.active,
            "created_at": _stamp(user.created_at),
            "live_tokens": tokens[user.id],
            "slack_accounts": linked[user.id],
        }
        for user in users
    ]
    return print_listing(args, rows, json_body=rows, empty="No users.", print_item=_print_user)


def _print_user(row: dict[str, Any]) -> None:
    print(
        f"{row['id']}  {row['name']}  {'admin' if row['is_admin'] else 'member'}  "
        f"{'active' if row['active'] else 'deactivated'}  created {row['created_at']}  "
        f"{row['live_tokens']} live token(s)  {row['slack_accounts']} Slack account(s)"
    )


def _tokens_create(args: argparse.Namespace) -> int:
    if args.expires_in_days is not None and args.expires_in_days <= 0:
        raise CliError("--expires-in-days must be a positive number")
    with _authentication(args) as authentication:
        expires_at = (
            None
            if args.expires_in_days is None
            else datetime.now(UTC) + timedelta(days=args.expires_in_days)
        )
        issued = authentication.issue_token(args.user_id, name=args.name, expires_at=expires_at)
    print(issued.token)
    return 0


def _users_deactivate(args: argparse.Namespace) -> int:
    with _authentication(args) as authentication:
        changed = authentication.deactivate_user(args.user_id)
    print(f"deactivated {args.user_id}" if changed else f"{args.user_id} was already deactivated")
    return 0


def _users_link_slack(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import slack_links
    from clarion.domain.errors import ValidationError

    with slack_links(existing_database(args)) as links:
        try:
            link = links.link(args.user_id, args.slack_user_id)
        except ValidationError as exc:
            raise CliError(str(exc)) from exc
    print(f"slack {link.external_id} answers as {link.user_id}")
    return 0


def _users_unlink_slack(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import slack_links

    with slack_links(existing_database(args)) as links:
        removed = links.unlink(args.slack_user_id)
    print(f"unlinked {args.slack_user_id}" if removed else f"{args.slack_user_id} was not linked")
    return 0 if removed else 1


def _users_slack_links(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import slack_links

    with slack_links(existing_database(args)) as links:
        found = links.links()
    rows = [
        {
            "slack_user_id": link.external_id,
            "user_id": link.user_id,
            "linked_at": _stamp(link.created_at),
        }
        for link in found
    ]
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for row in rows:
            print(f"{row['slack_user_id']}\t{row['user_id']}\t{row['linked_at']}")
    return 0


def _stamp(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _token_status(token: AccessToken, now: datetime) -> str:
    if token.revoked_at is not None:
        return "revoked"
    return "active" if token.usable_at(now) else "expired"


def _tokens_list(args: argparse.Namespace) -> int:
    with _authentication(args) as authentication:
        user = authentication.get_user(args.user_id)
        listed = authentication.list_tokens(args.user_id)
    now = datetime.now(UTC)
    rows = [
        {
            "id": token.id,
            "kind": token.kind,
            "name": token.name,
            "status": _token_status(token, now),
            "created_at": _stamp(token.created_at),
            "expires_at": _stamp(token.expires_at),
            "last_used_at": _stamp(token.last_used_at),
            "revoked_at": _stamp(token.revoked_at),
            "parent_id": token.parent_id,
        }
        for token in listed
    ]
    active = user is not None and user.active
    if args.json:
        body = {"user_id": args.user_id, "user_active": active, "tokens": rows}
        print(json.dumps(body, indent=2, ensure_ascii=False))
        return 0
    name = user.name if user is not None else ""
    print(f"user {args.user_id} ({name}): {'active' if active else 'deactivated'}")
    if not rows:
        print("No tokens.")
    for row in rows:
        label = f"of token {row['parent_id']}" if row["kind"] == LOGIN_SESSION else row["name"]
        print(
            f"{row['id']}  {row['kind']}  {row['status']}  created {row['created_at']}  "
            f"expires {row['expires_at'] or 'never'}  last used {row['last_used_at'] or 'never'}"
            + (f"  {label}" if label else "")
        )
    return 0


def _tokens_revoke(args: argparse.Namespace) -> int:
    with _authentication(args) as authentication:
        token = authentication.get_token(args.token_id)
        if token is None:
            raise CliError(f"token not found: {args.token_id}")
        revoked = authentication.revoke_token(token.id)
    if not revoked:
        print(f"{token.id} was already revoked")
    elif token.kind == LOGIN_SESSION:
        print(f"ended browser session {token.id}")
    else:
        print(f"revoked {token.id} (browser sessions opened with it end too)")
    return 0
