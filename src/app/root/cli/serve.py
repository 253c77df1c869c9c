"""``clarion serve``: build Clarion from the settings and run it under uvicorn."""

from __future__ import annotations

import argparse
import socket
import sys
from collections.abc import Callable

import attrs

from clarion.app.root.cli.common import database_flag, settings_of, usable_database
from clarion.app.root.logging_setup import configure_logging
from clarion.app.root.settings import (
    parse_auth,
    parse_elicitation,
    parse_live_delivery,
    parse_log_format,
    parse_non_negative_int,
    parse_port,
    parse_positive_float,
    parse_positive_int,
)

SHUTDOWN_GRACE_S = 5


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the service (REST, MCP and the web inbox)")
    database_flag(serve)
    serve.add_argument("--host", help="bind address (env CLARION_HOST; default 127.0.0.1)")
    serve.add_argument(
        "--port", help="bind port, 0-65535; 0 = any free port (env CLARION_PORT; default 8765)"
    )
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
        choices=("auto", "form", "url", "off"),
        help="offer asks in the asking MCP client too: auto (a form, else an answer-page link), "
        "form, url (the link where the client supports it, else a form) or off "
        "(env CLARION_ELICITATION)",
    )
    serve.add_argument(
        "--elicitation-min-human-ms",
        help="a decline faster than this is a client that could not show the question, not a "
        "person (env CLARION_ELICITATION_MIN_HUMAN_MS; default 250)",
    )
    serve.add_argument(
        "--allowed-hosts",
        help="comma-separated Host names served besides loopback: name (any port) or name:port "
        "(env CLARION_ALLOWED_HOSTS)",
    )
    serve.add_argument(
        "--limit-concurrency",
        help="open connections before new requests get 503, /healthz excepted "
        "(env CLARION_LIMIT_CONCURRENCY; default 1000)",
    )
    serve.add_argument(
        "--header-timeout",
        help="seconds a connection may take to send a request head, from when it opens or "
        "its last response ended (env CLARION_HEADER_TIMEOUT_S; default 10)",
    )
    serve.add_argument(
        "--max-connections-per-client",
        help="open connections one remote address may hold before its new ones get 429 "
        "(env CLARION_MAX_CONNECTIONS_PER_CLIENT; default 100)",
    )
    serve.add_argument(
        "--body-timeout",
        help="seconds a request body may take to arrive whole, from its head; then 408 "
        "(env CLARION_BODY_TIMEOUT_S; default 10)",
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

    serve.set_defaults(handler=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    """Serve until stopped. Every start-up mistake is found before anything is created: the
    settings, then the port (taken now and kept: see :mod:`clarion.app.root.listening`), then
    the database (one connection, nothing created) — each one ``clarion: error:`` line naming
    the setting (#30). Only then is the database created and migrated, the banner printed and
    the log's notes written."""
    from clarion.adapters.resume import is_plain_http_to_another_host
    from clarion.app.root.compose import build_clarion
    from clarion.app.root.listening import bound_port, listening_sockets
    from clarion.app.root.serving import ClarionServer, ensure_open_files, uvicorn_config

    def option(name: str, parse: Callable[[str, str], object]) -> object:
        """``--name`` parsed, or None when it was not given (the setting's own value holds)."""
        value = getattr(args, name.replace("-", "_"))
        return None if value is None else parse(value, f"--{name}")

    settings = settings_of(
        args,
        host=args.host,
        port=option("port", parse_port),
        auth_enabled=option("auth", parse_auth),
        resume_webhook=args.resume_webhook,
        ask_timeout_s=args.ask_timeout,
        live_delivery=option("live-delivery", parse_live_delivery),
        elicitation=option("elicitation", parse_elicitation),
        elicitation_min_human_ms=option("elicitation-min-human-ms", parse_non_negative_int),
        allowed_hosts=option("allowed-hosts", _host_list),
        agent_workspace=args.agent_workspace,
        log_format=option("log-format", parse_log_format),
        limit_concurrency=option("limit-concurrency", parse_positive_int),
        header_timeout_s=option("header-timeout", parse_positive_float),
        keep_alive_timeout_s=option("keep-alive-timeout", parse_positive_float),
        max_connections_per_client=option("max-connections-per-client", parse_positive_int),
        body_timeout_s=option("body-timeout", parse_positive_float),
    )
    sockets = listening_sockets(settings.host, settings.port)
    try:
        # Port 0 became a free port: links and the banner name the one taken.
        settings = attrs.evolve(settings, port=bound_port(sockets))
        usable_database(settings, create=True)
        clarion = build_clarion(settings)
    except BaseException:
        _close(sockets)
        raise
    configure_logging(settings.log_format)
    try:
        # Start-up's storage step before serving (the lifespan finds it done): a SQLite file
        # another process serves is refused here in one line.
        clarion.upgrade()
        if is_plain_http_to_another_host(settings.resume_webhook):
            print(
                "clarion: warning: CLARION_RESUME_WEBHOOK is plain http:// to a non-loopback "
                "host; resumes (with the answers) cross the network unencrypted — use https://",
                file=sys.stderr,
                flush=True,
            )
        auth = "enabled" if settings.auth_enabled else "disabled"
        print(
            f"Clarion on http://{_url_host(settings.host)}:{settings.port}/ "
            f"(database {clarion.database_label}, auth {auth})",
            file=sys.stderr,
            flush=True,
        )
        if warning := ensure_open_files(settings.limit_concurrency):
            print(f"clarion: warning: {warning}", file=sys.stderr, flush=True)
        config = uvicorn_config(
            clarion.asgi_app, settings, timeout_graceful_shutdown=SHUTDOWN_GRACE_S
        )
        ClarionServer(config, on_exit=clarion.begin_shutdown).run(sockets=sockets)
    finally:
        clarion.close()
        _close(sockets)
    return 0


def _close(sockets: list[socket.socket]) -> None:
    for listener in sockets:
        listener.close()


def _url_host(host: str) -> str:
    """``host`` as a URL writes it (an IPv6 address in brackets)."""
    return f"[{host}]" if ":" in host else host


def _host_list(value: str, _flag: str) -> tuple[str, ...]:
    """``--allowed-hosts``: comma-separated names, blanks dropped."""
    return tuple(name.strip() for name in value.split(",") if name.strip())
