"""``clarion serve``: build Clarion from the settings and run it under uvicorn."""

from __future__ import annotations

import argparse
import socket
import sys

import attrs

from clarion.app.root.cli.common import setting_flags, settings_of, usable_database
from clarion.app.root.logging_setup import configure_logging

SHUTDOWN_GRACE_S = 5


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = commands.add_parser("serve", help="run the service (REST, MCP and the web inbox)")
    setting_flags(serve)  # every setting that declares a flag (clarion.app.root.settings)
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
    from clarion.app.root.serving import (
        ClarionServer,
        ensure_open_files,
        tune_collector,
        uvicorn_config,
    )

    settings = settings_of(args)
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
        tune_collector()
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
