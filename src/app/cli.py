"""The ``clarion`` command: serve, migrate, manage users and tokens, answer from a shell, demo.

Every failure prints one clear line to stderr and exits non-zero. Commands that talk to a
server take the token from ``--token``, a hidden prompt (``--ask-token``) or ``CLARION_TOKEN``;
``--token`` is visible to other local users in ``ps``.
"""

from __future__ import annotations

import argparse
import getpass
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from types import FrameType
from typing import Any

from clarion.app.client import ClarionClient, ClientError
from clarion.app.logging_setup import configure_logging
from clarion.app.settings import (
    DEFAULT_DATABASE_URL,
    LogFormat,
    Settings,
    parse_auth,
    parse_elicitation,
    parse_live_delivery,
    parse_log_format,
    parse_positive_float,
    parse_positive_int,
)
from clarion.app.usecases.auth import Authentication
from clarion.domain.errors import ClarionError
from clarion.domain.host import LOGIN_SESSION, AccessToken

EXIT_USAGE = 2
SHUTDOWN_GRACE_S = 5
DEFAULT_URL = "http://127.0.0.1:8765"


class CliError(Exception):
    """A failure to report as one line on stderr."""


def _database_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--database-url",
        help=f"database URL (env CLARION_DATABASE_URL; default {DEFAULT_DATABASE_URL})",
    )


def _server_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", help=f"Clarion server URL (env CLARION_URL; default {DEFAULT_URL})"
    )
    token = parser.add_mutually_exclusive_group()
    token.add_argument(
        "--token",
        help="personal access token; visible to other local users (ps), so prefer "
        "CLARION_TOKEN or --ask-token",
    )
    token.add_argument(
        "--ask-token",
        action="store_true",
        help="prompt for the personal access token without echoing it (needs a terminal)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="clarion",
        description="Agents ask people structured questions; anyone allowed answers exactly once.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    serve = commands.add_parser("serve", help="run the service (REST, MCP and the web inbox)")
    _database_flag(serve)
    serve.add_argument("--host", help="bind address (env CLARION_HOST; default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="bind port (env CLARION_PORT; default 8765)")
    serve.add_argument(
        "--auth", choices=("enabled", "disabled"), help="authentication (env CLARION_AUTH)"
    )
    serve.add_argument(
        "--resume-webhook", help="POST detached resumes to this URL (env CLARION_RESUME_WEBHOOK)"
    )
    serve.add_argument(
        "--ask-timeout", type=float, help="seconds an agent waits (env CLARION_ASK_TIMEOUT_S)"
    )
    serve.add_argument(
        "--log-format", choices=("json", "console"), help="log format (env CLARION_LOG_FORMAT)"
    )
    serve.add_argument(
        "--live-delivery",
        choices=("auto", "postgres", "memory"),
        help="how answers reach waiting agents: postgres (several processes), memory (one), "
        "auto = postgres on a PostgreSQL database (env CLARION_LIVE_DELIVERY)",
    )
    serve.add_argument(
        "--elicitation",
        choices=("auto", "off"),
        help="offer asks as a form in MCP clients that support elicitation, or not "
        "(env CLARION_ELICITATION)",
    )
    serve.add_argument(
        "--allowed-hosts",
        help="comma-separated Host names served besides loopback: name (any port) or name:port "
        "(env CLARION_ALLOWED_HOSTS)",
    )
    serve.add_argument(
        "--limit-concurrency",
        help="open connections and running requests before new requests get 503 "
        "(env CLARION_LIMIT_CONCURRENCY; default 1000)",
    )
    serve.add_argument(
        "--header-timeout",
        help="seconds a connection may take to send a request head, from when it opens or "
        "its last response ended (env CLARION_HEADER_TIMEOUT_S; default 10)",
    )
    serve.add_argument(
        "--keep-alive-timeout",
        help="seconds a connection may stay idle between requests "
        "(env CLARION_KEEP_ALIVE_TIMEOUT_S; default 5)",
    )
    serve.add_argument(
        "--agent-workspace",
        help="the workspace id /mcp/agent creates agents' tasks in; default: each caller's own "
        '"Agents" workspace (env CLARION_AGENT_WORKSPACE)',
    )

    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(dest="db_command", required=True, metavar="COMMAND")
    upgrade = db_commands.add_parser("upgrade", help="apply migrations (serve also does this)")
    _database_flag(upgrade)

    users = commands.add_parser("users", help="manage users")
    user_commands = users.add_subparsers(dest="users_command", required=True, metavar="COMMAND")
    create_user = user_commands.add_parser("create", help="create a user; prints its id")
    create_user.add_argument("name", help="display name")
    create_user.add_argument("--admin", action="store_true", help="make the user an admin")
    _database_flag(create_user)
    deactivate_user = user_commands.add_parser(
        "deactivate",
        help="deactivate a user: their tokens, browser sessions and agent tokens stop working",
    )
    deactivate_user.add_argument("user_id", help="the user's id (as `users create` printed it)")
    _database_flag(deactivate_user)

    tokens = commands.add_parser("tokens", help="manage personal access tokens")
    token_commands = tokens.add_subparsers(dest="tokens_command", required=True, metavar="COMMAND")
    create_token = token_commands.add_parser(
        "create", help="issue a personal access token; prints it once"
    )
    create_token.add_argument("user_id", help="the user the token acts as")
    create_token.add_argument("--name", default="", help="a label for the token")
    create_token.add_argument(
        "--expires-in-days", type=float, help="expire the token after this many days"
    )
    _database_flag(create_token)
    list_tokens = token_commands.add_parser(
        "list", help="list a user's tokens and browser sessions (never their text)"
    )
    list_tokens.add_argument("user_id", help="the user whose tokens to list")
    list_tokens.add_argument("--json", action="store_true", help="print JSON")
    _database_flag(list_tokens)
    revoke_token = token_commands.add_parser(
        "revoke", help="revoke a token (its browser sessions end with it) or end one session"
    )
    revoke_token.add_argument("token_id", help="the token's id (see `tokens list`)")
    _database_flag(revoke_token)

    questions = commands.add_parser("questions", help="list and answer questions from a shell")
    question_commands = questions.add_subparsers(
        dest="questions_command", required=True, metavar="COMMAND"
    )
    list_questions = question_commands.add_parser(
        "list", help="list the pending questions you may see"
    )
    list_questions.add_argument("--workspace", default="", help="only this workspace's questions")
    list_questions.add_argument("--json", action="store_true", help="print the raw JSON envelope")
    _server_flags(list_questions)
    answer = question_commands.add_parser("answer", help="answer or reject a pending bundle")
    answer.add_argument("pending_id", help="the bundle's pending_id (see `questions list`)")
    answer.add_argument(
        "--select",
        action="append",
        default=[],
        metavar="QUESTION=OPTION[,OPTION]",
        help="select options (by option id or label) for a question; repeatable",
    )
    answer.add_argument(
        "--text",
        action="append",
        default=[],
        metavar="QUESTION=TEXT",
        help="free-text answer for a question; repeatable",
    )
    answer.add_argument("--reject", action="store_true", help="reject the whole bundle")
    answer.add_argument("--reason", default="", help="reason shown with a rejection")
    answer.add_argument("--json", action="store_true", help="print the raw JSON response")
    _server_flags(answer)

    commands.add_parser("demo", help="run the whole story in one process on a temporary database")
    return parser


def _settings(args: argparse.Namespace, **flags: object) -> Settings:
    return Settings.from_env(database_url=getattr(args, "database_url", None), **flags)


def _serve(args: argparse.Namespace) -> int:
    import uvicorn

    class _Server(uvicorn.Server):
        """uvicorn that ends Clarion's event streams as soon as shutdown starts; otherwise
        every open stream would hold the graceful shutdown for its whole grace period."""

        def __init__(self, config: uvicorn.Config, *, on_exit: Callable[[], None]) -> None:
            super().__init__(config)
            self._on_exit = on_exit

        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            self._on_exit()
            super().handle_exit(sig, frame)

    from clarion.adapters.resume import is_plain_http_to_another_host
    from clarion.app.compose import build_clarion
    from clarion.app.serving import ensure_open_files, uvicorn_config

    settings = _settings(
        args,
        host=args.host,
        port=args.port,
        auth_enabled=None if args.auth is None else parse_auth(args.auth, "--auth"),
        resume_webhook=args.resume_webhook,
        ask_timeout_s=args.ask_timeout,
        live_delivery=None
        if args.live_delivery is None
        else parse_live_delivery(args.live_delivery, "--live-delivery"),
        elicitation=None
        if args.elicitation is None
        else parse_elicitation(args.elicitation, "--elicitation"),
        allowed_hosts=None
        if args.allowed_hosts is None
        else tuple(h.strip() for h in args.allowed_hosts.split(",") if h.strip()),
        agent_workspace=args.agent_workspace,
        log_format=None
        if args.log_format is None
        else parse_log_format(args.log_format, "--log-format"),
        limit_concurrency=None
        if args.limit_concurrency is None
        else parse_positive_int(args.limit_concurrency, "--limit-concurrency"),
        header_timeout_s=None
        if args.header_timeout is None
        else parse_positive_float(args.header_timeout, "--header-timeout"),
        keep_alive_timeout_s=None
        if args.keep_alive_timeout is None
        else parse_positive_float(args.keep_alive_timeout, "--keep-alive-timeout"),
    )
    configure_logging(settings.log_format)
    clarion = build_clarion(settings)
    if is_plain_http_to_another_host(settings.resume_webhook):
        print(
            "clarion: warning: CLARION_RESUME_WEBHOOK is plain http:// to a non-loopback host; "
            "resumes (with the answers) cross the network unencrypted — use https://",
            file=sys.stderr,
            flush=True,
        )
    auth = "enabled" if settings.auth_enabled else "disabled"
    print(
        f"Clarion on http://{settings.host}:{settings.port}/ "
        f"(database {clarion.database_label}, auth {auth})",
        file=sys.stderr,
        flush=True,
    )
    if warning := ensure_open_files(settings.limit_concurrency):
        print(f"clarion: warning: {warning}", file=sys.stderr, flush=True)
    config = uvicorn_config(clarion.asgi_app, settings, timeout_graceful_shutdown=SHUTDOWN_GRACE_S)
    try:
        _Server(config, on_exit=clarion.begin_shutdown).run()
    finally:
        clarion.close()
    return 0


def _db_upgrade(args: argparse.Namespace) -> int:
    from clarion.adapters.sql import upgrade_database

    settings = _settings(args)
    revision = upgrade_database(settings.database_url)
    print(f"database at revision {revision}")
    return 0


@contextmanager
def _authentication(args: argparse.Namespace) -> Iterator[Authentication]:
    """Users and tokens in the database of ``args`` (admin commands write there directly).
    Nothing is served or recovered, so no SQLite file lock is taken: these commands may run
    next to the serving process."""
    from clarion.app.compose import administration

    with administration(_settings(args)) as authentication:
        yield authentication


def _users_create(args: argparse.Namespace) -> int:
    with _authentication(args) as authentication:
        user = authentication.create_user(args.name, is_admin=args.admin)
    print(user.id)
    return 0


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


def _token(args: argparse.Namespace) -> str:
    """``--token``, else a hidden prompt when ``--ask-token`` asks for one, else
    ``CLARION_TOKEN``, else none."""
    if args.token:
        return str(args.token)
    if args.ask_token:
        if not sys.stdin.isatty():
            raise CliError("--ask-token needs an interactive terminal; set CLARION_TOKEN instead")
        entered = getpass.getpass("Clarion token: ").strip()
        if not entered:
            raise CliError("no token entered")
        return entered
    return os.environ.get("CLARION_TOKEN") or ""


def _client(args: argparse.Namespace) -> ClarionClient:
    url = args.url or os.environ.get("CLARION_URL") or DEFAULT_URL
    return ClarionClient(url, token=_token(args))


def _questions_list(args: argparse.Namespace) -> int:
    bundles = _client(args).pending(workspace_id=args.workspace)
    if args.json:
        print(json.dumps({"bundles": bundles, "count": len(bundles)}, indent=2, ensure_ascii=False))
        return 0
    if not bundles:
        print("No pending questions.")
        return 0
    for bundle in bundles:
        print(
            f"{bundle['pending_id']}  task {bundle['task_id']}  session {bundle['session_id']}  "
            f"waiting {bundle['age_seconds']}s"
        )
        if bundle["context"]:
            print(f"  context: {bundle['context']}")
        for question in bundle["questions"]:
            title = f"[{question['title']}] " if question["title"] else ""
            print(
                f"  {question['question_id']}: {title}{question['prompt']} ({question['status']})"
            )
            for option in question["options"]:
                print(f"      {option['option_id']}: {option['label']} — {option['description']}")
    return 0


def _pairs(values: Sequence[str], flag: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep or not key:
            raise CliError(f"{flag} expects QUESTION=VALUE, got {value!r}")
        pairs.append((key, rest))
    return pairs


def _answers_body(args: argparse.Namespace, client: ClarionClient) -> tuple[dict[str, Any], bool]:
    """The respond body, and whether the bundle was found pending (labels resolved)."""
    selections = _pairs(args.select, "--select")
    texts = _pairs(args.text, "--text")
    if args.reject:
        if selections or texts:
            raise CliError("--reject cannot be combined with --select or --text")
        return {"rejected": True, "reject_reason": args.reason}, False
    if args.reason:
        raise CliError("--reason only goes with --reject")
    if not selections and not texts:
        raise CliError("give --select and/or --text for each question, or --reject")
    bundle = client.find_pending(args.pending_id)
    questions = {q["question_id"]: q for q in bundle["questions"]} if bundle else {}
    answers: dict[str, dict[str, Any]] = {}
    for question_id, value in selections:
        entry = answers.setdefault(question_id, {"question_id": question_id})
        wanted = [part.strip() for part in value.split(",") if part.strip()]
        entry["selected_options"] = [
            _option_id(questions.get(question_id), question_id, part) for part in wanted
        ]
    for question_id, value in texts:
        answers.setdefault(question_id, {"question_id": question_id})["custom_text"] = value
    if questions:
        # N6: one entry per question; unanswered questions are sent as empty entries (N7).
        for question_id in questions:
            answers.setdefault(question_id, {"question_id": question_id})
    return {"answers": list(answers.values())}, bundle is not None


def _option_id(question: dict[str, Any] | None, question_id: str, wanted: str) -> str:
    if question is None:
        return wanted
    for option in question["options"]:
        if wanted == option["option_id"]:
            return wanted
    matches = [o["option_id"] for o in question["options"] if o["label"].lower() == wanted.lower()]
    if len(matches) == 1:
        return str(matches[0])
    raise CliError(f"question {question_id} has no option with id or label {wanted!r}")


def _questions_answer(args: argparse.Namespace) -> int:
    client = _client(args)
    body, found = _answers_body(args, client)
    try:
        result = client.respond(args.pending_id, body)
    except ClientError as exc:
        if not found and not args.reject and exc.status == 400:
            # Labels and the question list come from the pending list; a settled (or
            # invisible) bundle is not in it, so nothing could be filled in.
            raise CliError(
                f"{exc} (the bundle is not pending, so labels could not be looked up: "
                "give option ids and an entry for every question)"
            ) from exc
        raise
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
        return 0
    response = result["response"]
    who = "you answered it" if result["claimed"] else "it was already settled; this is the winner's"
    print(f"{args.pending_id}: {result['status']} ({who})")
    if response["rejected"]:
        print(
            "  rejected" + (f": {response['reject_reason']}" if response["reject_reason"] else "")
        )
    for answer in response["answers"]:
        parts = [*answer["selected_options"]]
        if answer["custom_text"]:
            parts.append(json.dumps(answer["custom_text"], ensure_ascii=False))
        print(f"  {answer['question_id']}: {', '.join(parts) or '(no answer)'}")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from clarion.app.demo import run_demo

    return run_demo()


def _default_log_format() -> LogFormat:
    value = os.environ.get("CLARION_LOG_FORMAT", "")
    if value in ("json", "console"):
        return parse_log_format(value, "CLARION_LOG_FORMAT")
    return "console" if sys.stderr.isatty() else "json"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``clarion`` console script (and ``python -m clarion``)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers = {
        ("serve", None): _serve,
        ("db", "upgrade"): _db_upgrade,
        ("users", "create"): _users_create,
        ("users", "deactivate"): _users_deactivate,
        ("tokens", "create"): _tokens_create,
        ("tokens", "list"): _tokens_list,
        ("tokens", "revoke"): _tokens_revoke,
        ("questions", "list"): _questions_list,
        ("questions", "answer"): _questions_answer,
        ("demo", None): _demo,
    }
    sub = next(
        (
            getattr(args, name)
            for name in ("db_command", "users_command", "tokens_command", "questions_command")
            if getattr(args, name, None)
        ),
        None,
    )
    handler = handlers[(args.command, sub)]
    if args.command not in ("serve", "demo"):
        # Output is the command's answer; log lines (warnings only) go to stderr.
        configure_logging(_default_log_format(), level=logging.WARNING)
    try:
        return handler(args)
    except (CliError, ClientError, ClarionError) as exc:
        print(f"clarion: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - the top-level handler: one line, non-zero exit
        print(f"clarion: error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover - exercised through the console script
    raise SystemExit(main())
