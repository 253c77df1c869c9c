"""The HMAC signature every Clarion webhook carries (the resume webhook and notification
webhooks sign the same way): ``Clarion-Signature: sha256=<hex HMAC-SHA256 of
"<timestamp>.<body>">`` keyed by the shared secret, with ``Clarion-Timestamp`` (Unix seconds).

And what makes a key or secret too weak to sign with (#29): shorter than its minimum, or a
degenerate value — one block of at most :data:`MAX_DEGENERATE_PERIOD` bytes repeated (all
zeros, all one byte, ``abab…``), which no random generator makes but a placeholder does.
"""

from __future__ import annotations

import hashlib
import hmac
from typing import Final

MIN_KEY_BYTES: Final = 32  # answer-link and elicitation key rings (each key)
MIN_SECRET_CHARACTERS: Final = 16  # webhook signing secrets (shared text)
MAX_DEGENERATE_PERIOD: Final = 4


def _repeats_a_short_block(data: bytes) -> bool:
    return any(
        data == data[:period] * (len(data) // period) + data[: len(data) % period]
        for period in range(1, MAX_DEGENERATE_PERIOD + 1)
    )


def key_weakness(key: bytes, *, minimum: int = MIN_KEY_BYTES) -> str | None:
    """Why ``key`` must not be used to sign or seal (a phrase to follow "the key is"), or None
    when it is acceptable."""
    if len(key) < minimum:
        return f"shorter than {minimum} bytes"
    if _repeats_a_short_block(key):
        return "degenerate (one byte or a short block repeated, like all zeros)"
    return None


def secret_weakness(secret: str, *, minimum: int = MIN_SECRET_CHARACTERS) -> str | None:
    """Like :func:`key_weakness` for a shared text secret (``minimum`` characters)."""
    if len(secret) < minimum:
        return f"shorter than {minimum} characters"
    return key_weakness(secret.encode(), minimum=0)


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``Clarion-Signature`` value for ``body`` sent at ``timestamp``."""
    message = timestamp.encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """True when ``signature`` is :func:`sign`'s value (compared in constant time)."""
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


__all__ = [
    "MAX_DEGENERATE_PERIOD",
    "MIN_KEY_BYTES",
    "MIN_SECRET_CHARACTERS",
    "key_weakness",
    "secret_weakness",
    "sign",
    "verify",
]
