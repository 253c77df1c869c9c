"""``clarion receipts``: the keys that verify receipts, and verifying one offline (issue #34).

- ``keys`` prints the published key set (what ``GET /.well-known/clarion-receipt-keys``
  serves) of the ring the settings name: ``CLARION_RECEIPT_KEYS``, else the key file beside a
  SQLite database (docs/receipts.md#keys-and-rotation).
- ``verify FILE`` checks a receipt's signature against published keys — ``--keys`` a URL
  (the well-known endpoint) or a file holding that JSON, else the local ring — and, with
  ``--action-digest`` / ``--request-id``, that it is for what the caller expects. It exits 0
  and prints one line when the receipt holds, else 1 naming the field that failed.
- ``new-key`` prints a fresh ``kid:base64`` entry for ``CLARION_RECEIPT_KEYS``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from clarion.app.root.cli.common import (
    CliError,
    command_group,
    database_commands,
    existing_database,
)
from clarion.domain.errors import ValidationError
from clarion.domain.receipts import PublicKey

if TYPE_CHECKING:
    from clarion.app.root.receipt_keys import ReceiptKeys
    from clarion.app.root.settings import Settings
    from clarion.ports.claims import ClaimRepository


def add_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub = command_group(commands, "receipts", help="signed receipts: keys, verify one offline")
    keys = sub.add_parser("keys", help="print the published receipt keys (JSON)")
    verify = sub.add_parser("verify", help="verify a receipt's signature (exit 1 naming a failure)")
    verify.add_argument("FILE", help="the receipt JSON (- for standard input)")
    verify.add_argument(
        "--keys",
        default="",
        help="the published keys: a URL (…/.well-known/clarion-receipt-keys) or a JSON file; "
        "default: this installation's key ring",
    )
    verify.add_argument(
        "--action-digest",
        default="",
        help="also require this asked_digest (the action or question set you expect)",
    )
    verify.add_argument("--request-id", default="", help="also require this request id")
    new_key = sub.add_parser("new-key", help="print a new kid:base64 entry for the key ring")
    new_key.add_argument("--kid", default="", help="its key id (default: from the public key)")
    new_key.set_defaults(handler=_new_key)
    database_commands(
        (keys, _keys),
        (verify, _verify),
    )


NO_LASTING_KEYS = (
    "no lasting receipt keys: set CLARION_RECEIPT_KEYS (without it, a server on PostgreSQL or "
    "in memory signs with a random key of its own process)"
)


def lasting_keys(settings: Settings) -> ReceiptKeys | None:
    """The ring a server on ``settings`` signs with, when it outlives the process (the
    setting, or a SQLite database's key file); None otherwise."""
    from clarion.app.root.receipt_keys import receipt_keys, sqlite_file_of

    keys = receipt_keys(settings, sqlite_file_of(settings.database_url))
    return keys if keys.persistent else None


def _local_keys(args: argparse.Namespace) -> tuple[PublicKey, ...]:
    keys = lasting_keys(existing_database(args))
    if keys is None:
        raise CliError(NO_LASTING_KEYS)
    return keys.public_keys()


def _keys(args: argparse.Namespace) -> int:
    from clarion.domain.receipts import keys_json

    print(json.dumps(keys_json(_local_keys(args)), indent=2))
    return 0


def _read_json(source: str, what: str) -> Any:
    try:
        text = sys.stdin.read() if source == "-" else Path(source).read_text(encoding="utf-8")
        return json.loads(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"cannot read {what} {source}: {exc}") from None


def _fetched_keys(url: str) -> Any:
    import httpx2

    try:
        response = httpx2.get(url, timeout=10.0, follow_redirects=False)
        response.raise_for_status()
        return response.json()
    except (httpx2.HTTPError, ValueError) as exc:
        raise CliError(f"cannot fetch the receipt keys from {url}: {exc}") from None


def _published(args: argparse.Namespace) -> tuple[PublicKey, ...]:
    from clarion.domain.receipts import parse_keys

    if not args.keys:
        return _local_keys(args)
    remote = args.keys.startswith(("http://", "https://"))
    data = _fetched_keys(args.keys) if remote else _read_json(args.keys, "the keys file")
    try:
        return parse_keys(data)
    except ValidationError as exc:
        raise CliError(f"the keys from {args.keys} are not a receipt key set: {exc}") from None


def _verify(args: argparse.Namespace) -> int:
    from clarion.adapters.receipts import Ed25519Verifier
    from clarion.domain.receipts import check_expected, parse_receipt

    data = _read_json(args.FILE, "the receipt")
    keys = _published(args)
    try:
        parsed = parse_receipt(data)
        Ed25519Verifier().verify(parsed, keys)
        check_expected(parsed, asked=args.action_digest, request_id=args.request_id)
    except ValidationError as exc:
        raise CliError(f"receipt invalid ({exc.field}): {exc}") from None
    payload = parsed.payload
    by = payload.get("resolved_by") or {}
    outcome = payload.get("outcome") or {}
    print(
        f"valid: {payload.get('request_id')} {outcome.get('status')} by "
        f"{by.get('display_name') or by.get('identity_id')} ({by.get('surface')}) at "
        f"{payload.get('resolved_at')}, signed by key {parsed.kid}"
    )
    return 0


def _new_key(args: argparse.Namespace) -> int:
    from clarion.adapters.receipts.ed25519 import check_kid, new_entry

    if args.kid:
        check_kid(args.kid, "--kid", field="--kid")
    print(new_entry(args.kid))
    return 0


def exported_receipts(settings: Settings) -> Callable[[ClaimRepository, str], dict[str, Any]]:
    """What ``clarion audit export`` adds to each line (issue #34): ``{"receipt": {...}}`` for
    a resolution, signed by the ring a server on ``settings`` signs with — nothing for a
    closed bundle, nor at all without lasting keys (said once on stderr: a receipt signed by a
    throwaway key would verify against nothing)."""
    from clarion.app.usecases.receipts import settled_receipt

    keys = lasting_keys(settings)
    if keys is None:
        print(f"clarion: note: receipts are not exported: {NO_LASTING_KEYS}", file=sys.stderr)

    def receipt(claims: ClaimRepository, pending_id: str) -> dict[str, Any]:
        bundle = claims.load_bundle(pending_id) if keys is not None else None
        signed = settled_receipt(keys, bundle) if keys is not None and bundle else None
        return {"receipt": signed} if signed is not None else {}

    return receipt
