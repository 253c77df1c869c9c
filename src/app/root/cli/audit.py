"""``clarion audit export``: the record of every resolution, as JSON Lines, for an operator.

It reads the configured database directly (``--database-url`` / ``CLARION_DATABASE_URL``),
like ``clarion users`` and ``tokens``: whoever may run those may read the whole record, so it
applies no per-user visibility — it is the operator's view, not a user's (users have
``clarion questions history``). It only reads; it serves nothing and may run next to the
serving process. Lines are written newest resolution first, one page (200 bundles) at a
time, so memory stays flat however long the history is.

It exports resolutions — who decided what — and so, by default, not the bundles closed
without an answer (nobody decided them); ``--include-closed`` adds them, each a line with
``status`` "closed" and its ``closed_reason`` (issue #30), in the same order.

Each line carries ``chain``: the bundle's newest audit-chain record's ``scope``, ``seq``,
``prev_hash`` and ``hash`` (issue #34; null when it has none, as a closed bundle). ``clarion
audit verify`` walks the chains and names the first broken link, exiting 1 on a break.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import datetime

from clarion.app.root.cli.common import (
    CliError,
    command_group,
    database_commands,
    existing_database,
)
from clarion.domain.cursor import parse_timestamp
from clarion.domain.errors import InvalidArgument

PAGE = 200


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    audit_commands = command_group(
        commands, "audit", help="the record of who resolved what (operators)"
    )
    export = audit_commands.add_parser(
        "export", help="every resolution as JSON Lines, newest first, read from the database"
    )
    export.add_argument(
        "--since", default="", help="only resolutions at or after this RFC 3339 time"
    )
    export.add_argument(
        "--format", choices=["jsonl"], default="jsonl", help="output format (jsonl)"
    )
    export.add_argument(
        "--include-closed",
        action="store_true",
        help="also the questions closed without an answer (status closed, with closed_reason)",
    )
    verify = audit_commands.add_parser(
        "verify",
        help="check the tamper-evident audit chain; name the first broken link (exit 1)",
    )
    verify.add_argument(
        "--workspace",
        default=None,
        help="only this workspace's chain (default: every workspace; '' is no workspace)",
    )
    verify.add_argument(
        "--rows",
        action="store_true",
        help="also compare each question's newest record with its rows as they stand",
    )
    database_commands(
        (export, _export),
        (verify, _verify),
    )


def _since(value: str) -> datetime | None:
    if not value:
        return None
    try:
        return parse_timestamp(value, argument="--since")
    except InvalidArgument as exc:
        raise CliError(str(exc)) from exc


def _export(args: argparse.Namespace) -> int:
    from clarion.adapters.wire.history import resolved_bundle_json
    from clarion.app.root.administration import audit_log
    from clarion.app.root.cli.receipts import exported_receipts
    from clarion.domain.history import ResolvedQuery
    from clarion.domain.listing import Visibility

    since = _since(args.since)
    written = 0
    settings = existing_database(args)
    receipts = exported_receipts(settings)
    with audit_log(settings) as (claims, log):
        before: tuple[datetime, str] | None = None
        while True:
            query = ResolvedQuery(
                visibility=Visibility.everything(),
                limit=PAGE,
                before=before,
                resolved_since=since,
                include_closed=args.include_closed,
            )
            page = claims.list_resolved_bundles(query)
            chains = log.chain_records([bundle.pending_id for bundle in page.bundles])
            for bundle in page.bundles:
                line = resolved_bundle_json(bundle) | receipts(claims, bundle.pending_id)
                chain = chains.get(bundle.pending_id)
                line["chain"] = chain.fields() if chain is not None else None
                sys.stdout.write(json.dumps(line, ensure_ascii=False))
                sys.stdout.write("\n")
                written += 1
            if not page.has_more:
                break
            last = page.bundles[-1]
            before = (last.resolved_at, last.pending_id)
    print(f"exported {written} resolutions", file=sys.stderr)
    return 0


def _verify(args: argparse.Namespace) -> int:
    from clarion.app.root.administration import audit_log

    with audit_log(existing_database(args)) as (_, log):
        reports = log.verify(args.workspace, rows=args.rows)
    broken = 0
    for report in reports:
        name = json.dumps(report.scope)
        link = report.broken or report.rows_changed
        if link is None:
            last = report.last_hash
            print(f"workspace {name}: {report.records} records, intact, last hash {last}")
            continue
        broken += 1
        what = "BROKEN" if report.broken is not None else "ROWS CHANGED"
        print(
            f"workspace {name}: {what} at seq {link.seq} "
            f"(pending id {json.dumps(link.pending_id)}): {link.reason}"
        )
    print(f"verified {len(reports)} chains, {broken} broken", file=sys.stderr)
    return 1 if broken else 0
