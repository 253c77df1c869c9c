"""Verify a Clarion receipt offline (docs/receipts.md): RECEIPT.json KEYS.json [ASKED_DIGEST]."""

import base64
import json
import sys
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify(receipt: Any, keys: Any, asked_digest: str | None = None) -> Any:
    payload = receipt["payload"]
    if receipt["alg"] != "Ed25519" or payload["type"] != "clarion.receipt":
        raise ValueError("not a Clarion receipt")
    key = {k["kid"]: k for k in keys["keys"]}[receipt["kid"]]  # KeyError: unknown key
    signed = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    public = Ed25519PublicKey.from_public_bytes(unb64url(key["public_key"]))
    public.verify(unb64url(receipt["signature"]), signed.encode())  # InvalidSignature
    if asked_digest is not None and payload["asked_digest"] != asked_digest:
        raise ValueError("the receipt is for a different action")
    return payload


if __name__ == "__main__":
    receipt, keys = (json.loads(Path(path).read_text("utf-8")) for path in sys.argv[1:3])
    payload = verify(receipt, keys, *sys.argv[3:4])
    print("valid:", payload["request_id"], payload["outcome"]["status"])
