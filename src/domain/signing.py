"""The HMAC signature every Clarion webhook carries (the resume webhook and notification
webhooks sign the same way): ``Clarion-Signature: sha256=<hex HMAC-SHA256 of
"<timestamp>.<body>">`` keyed by the shared secret, with ``Clarion-Timestamp`` (Unix seconds).
"""

from __future__ import annotations

import hashlib
import hmac


def sign(secret: str, timestamp: str, body: bytes) -> str:
    """The ``Clarion-Signature`` value for ``body`` sent at ``timestamp``."""
    message = timestamp.encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def verify(secret: str, timestamp: str, body: bytes, signature: str) -> bool:
    """True when ``signature`` is :func:`sign`'s value (compared in constant time)."""
    return hmac.compare_digest(sign(secret, timestamp, body), signature)


__all__ = ["sign", "verify"]
