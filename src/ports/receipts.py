"""Signing and checking receipts (issue #34): the key ring behind them, as use cases see it."""

from __future__ import annotations

from typing import Protocol

from clarion.domain.receipts import ParsedReceipt, PublicKey


class ReceiptSigner(Protocol):
    """A key ring: the first key signs, every key is published (rotation: a new key goes
    first, the old ones stay published while receipts they signed must still verify).

    Contract: ``sign`` is deterministic (Ed25519, RFC 8032) — the same bytes under the same
    key always give the same signature, which is what lets a receipt be made again from the
    stored claim; ``public_keys()[0].kid == signing_kid``."""

    @property
    def signing_kid(self) -> str: ...

    def sign(self, message: bytes) -> bytes:
        """The 64-byte signature of ``message`` by the signing key."""
        ...

    def public_keys(self) -> tuple[PublicKey, ...]: ...


class ReceiptVerifier(Protocol):
    """Checks a parsed receipt's signature against a set of public keys."""

    def verify(self, receipt: ParsedReceipt, keys: tuple[PublicKey, ...]) -> None:
        """Return when ``receipt``'s signature is valid under the key its ``kid`` names.

        Raises:
            ReceiptInvalid: ``kid`` names no key in ``keys`` (field ``kid``), or the signature
                does not match the payload (field ``signature``).
        """
        ...


__all__ = ["ReceiptSigner", "ReceiptVerifier"]
