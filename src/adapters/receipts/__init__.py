"""Ed25519 receipt signing and verification (issue #34) with ``cryptography``."""

from clarion.adapters.receipts.ed25519 import (
    Ed25519KeyRing,
    Ed25519Verifier,
    key_file_ring,
    parse_receipt_keys,
)

__all__ = ["Ed25519KeyRing", "Ed25519Verifier", "key_file_ring", "parse_receipt_keys"]
