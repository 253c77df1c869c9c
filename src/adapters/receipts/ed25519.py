"""The receipt key ring (issue #34): Ed25519 keys from ``CLARION_RECEIPT_KEYS`` or a key file.

A ring is a list of ``kid:base64-seed`` entries (the 32-byte RFC 8032 private key, standard
or URL-safe base64), comma-separated: the first signs, every one is published. Rotation:
put a new key first and keep the old ones, so receipts they signed still verify against the
published set; drop an old key only when nobody needs to verify its receipts any more.

When the setting is unset and the database is a SQLite file, the composition root keeps one
generated key in a file beside it (:func:`key_file_ring`, mode 0600), so receipts outlive a
restart. Otherwise (memory, or PostgreSQL without the setting) each process makes a random
key, and its receipts stop verifying once it exits (docs/receipts.md).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import attrs
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from clarion.domain.errors import ValidationError
from clarion.domain.receipts import (
    SEED_BYTES,
    ParsedReceipt,
    PublicKey,
    ReceiptInvalid,
    b64url,
)
from clarion.domain.signing import key_weakness

_KID: Final = re.compile(r"[A-Za-z0-9._-]{1,64}")
KEY_FILE_SUFFIX: Final = ".receipt-key"


def parse_receipt_keys(value: str, name: str) -> tuple[tuple[str, bytes], ...]:
    """``kid:base64-seed`` entries, comma-separated (or one per line), as (kid, seed) pairs.

    Raises:
        ValidationError: naming ``name`` and the entry: no ``kid:``, a kid outside
            ``[A-Za-z0-9._-]{1,64}`` or repeated, or a seed that is not base64 of 32 bytes or
            is degenerate (all zeros, a short block repeated).
    """
    ring: list[tuple[str, bytes]] = []
    entries = [part.strip() for part in re.split(r"[,\n]", value) if part.strip()]
    for position, entry in enumerate(entries, start=1):
        kid, separator, text = entry.partition(":")
        where = f"{name}: entry {position}"
        if not separator:
            raise ValidationError(f"{where} must be kid:base64-key", field=name)
        check_kid(kid, where, field=name)
        if any(kid == known for known, _ in ring):
            raise ValidationError(f"{where} repeats the kid {kid!r}", field=name)
        try:
            seed = base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            seed = b""
        if len(seed) != SEED_BYTES:
            raise ValidationError(
                f"{where} must be base64 of a 32-byte Ed25519 private key "
                "(make one with: clarion receipts new-key)",
                field=name,
            )
        weakness = key_weakness(seed)
        if weakness is not None:
            raise ValidationError(f"{where}: the key is {weakness}", field=name)
        ring.append((kid, seed))
    return tuple(ring)


def check_kid(kid: str, where: str, *, field: str) -> None:
    """Refuse a key id outside ``[A-Za-z0-9._-]{1,64}`` (it is JSON and URL text everywhere).

    Raises:
        ValidationError: naming ``where`` in its message and ``field``.
    """
    if _KID.fullmatch(kid) is None:
        raise ValidationError(
            f"{where}: the kid must be 1-64 letters, digits, '.', '_' or '-'", field=field
        )


def new_entry(kid: str = "") -> str:
    """A fresh ``kid:base64-seed`` entry (kid derived from the public key when not given)."""
    seed = os.urandom(SEED_BYTES)
    return f"{kid or derived_kid(seed)}:{base64.b64encode(seed).decode('ascii')}"


def derived_kid(seed: bytes) -> str:
    """A key id from the public key's SHA-256 (for generated keys)."""
    public = Ed25519PrivateKey.from_private_bytes(seed).public_key()
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return "k-" + b64url(hashlib.sha256(raw).digest())[:16]


@attrs.frozen
class Ed25519KeyRing:
    """:class:`clarion.ports.receipts.ReceiptSigner` over (kid, seed) pairs, the first signing."""

    _keys: tuple[tuple[str, Ed25519PrivateKey], ...]

    @classmethod
    def of(cls, entries: Sequence[tuple[str, bytes]]) -> Ed25519KeyRing:
        if not entries:
            raise ValueError("a receipt key ring needs at least one key")
        return cls(
            tuple((kid, Ed25519PrivateKey.from_private_bytes(seed)) for kid, seed in entries)
        )

    @classmethod
    def ephemeral(cls) -> Ed25519KeyRing:
        """One random key, for this process only."""
        seed = os.urandom(SEED_BYTES)
        return cls.of([(derived_kid(seed), seed)])

    @property
    def signing_kid(self) -> str:
        return self._keys[0][0]

    def sign(self, message: bytes) -> bytes:
        return self._keys[0][1].sign(message)

    def public_keys(self) -> tuple[PublicKey, ...]:
        return tuple(
            PublicKey(kid, key.public_key().public_bytes(Encoding.Raw, PublicFormat.Raw))
            for kid, key in self._keys
        )


class Ed25519Verifier:
    """:class:`clarion.ports.receipts.ReceiptVerifier` with ``cryptography``."""

    def verify(self, receipt: ParsedReceipt, keys: tuple[PublicKey, ...]) -> None:
        key = next((key for key in keys if key.kid == receipt.kid), None)
        if key is None:
            raise ReceiptInvalid(
                f"no published key has the kid {receipt.kid!r} (unknown or retired key)",
                field="kid",
            )
        try:
            Ed25519PublicKey.from_public_bytes(key.key).verify(receipt.signature, receipt.signed)
        except (InvalidSignature, ValueError):
            raise ReceiptInvalid(
                "the signature does not match the payload (a field was changed, or another "
                "key signed it)",
                field="signature",
            ) from None


def key_file_ring(path: Path) -> Ed25519KeyRing:
    """The ring held in ``path`` (``kid:base64-seed`` lines), made with one new key when the
    file does not exist.

    The new file is written whole under a temporary name and linked into place, so two
    processes starting together agree on one key (the second reads the first's); it is
    readable by its owner only (0600).

    Raises:
        ValidationError: the file holds no valid ring.
        OSError: it could not be read or written.
    """
    if not path.exists():
        temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(descriptor, "w", encoding="ascii") as handle:
            handle.write(new_entry() + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process made it first: use its key
        finally:
            temporary.unlink()
    entries = parse_receipt_keys(path.read_text(encoding="ascii"), str(path))
    if not entries:
        raise ValidationError(f"{path} holds no receipt key", field=str(path))
    return Ed25519KeyRing.of(entries)


__all__ = [
    "KEY_FILE_SUFFIX",
    "Ed25519KeyRing",
    "Ed25519Verifier",
    "check_kid",
    "derived_kid",
    "key_file_ring",
    "new_entry",
    "parse_receipt_keys",
]
