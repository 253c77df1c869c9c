"""Which Ed25519 key ring signs receipts (issue #34, docs/receipts.md#keys-and-rotation).

1. ``CLARION_RECEIPT_KEYS`` set: that ring (the first key signs, all are published).
2. Unset, and the database is a SQLite file: the ring in ``<database>.receipt-key`` beside
   it, made with one random key the first time a receipt is needed (mode 0600). It lives and
   is backed up with the database; rotate by moving to the setting.
3. Otherwise (in memory, or PostgreSQL without the setting): a random key per process,
   logged once — its receipts verify only while that process runs (replicas of a PostgreSQL
   deployment must share ``CLARION_RECEIPT_KEYS``).

The ring is made on first use, not when the service is built: building touches no file.
"""

from __future__ import annotations

import threading
from pathlib import Path

import attrs
import structlog

from clarion.adapters.receipts import Ed25519KeyRing, key_file_ring
from clarion.adapters.receipts.ed25519 import KEY_FILE_SUFFIX
from clarion.app.root.settings import Settings
from clarion.domain.receipts import PublicKey

log = structlog.get_logger(__name__)


def sqlite_file_of(database_url: str) -> str | None:
    """The SQLite file ``database_url`` names (what ``Storage.lock_file`` holds when the
    service opens it); None for any other database."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(database_url)
    except ArgumentError:
        return None
    return url.database if url.get_backend_name() == "sqlite" else None


def key_file_for(sqlite_file: str | None) -> Path | None:
    """Where the generated ring of a SQLite database lives; None without a database file."""
    if not sqlite_file or sqlite_file == ":memory:" or sqlite_file.startswith("file:"):
        return None
    return Path(sqlite_file + KEY_FILE_SUFFIX)


@attrs.define
class ReceiptKeys:
    """:class:`clarion.ports.receipts.ReceiptSigner` choosing its ring on first use (above)."""

    _configured: tuple[tuple[str, bytes], ...]
    _key_file: Path | None
    _ring: Ed25519KeyRing | None = None
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    @property
    def persistent(self) -> bool:
        """Whether receipts outlive this process (a configured ring or a key file)."""
        return bool(self._configured) or self._key_file is not None

    def ring(self) -> Ed25519KeyRing:
        with self._lock:
            if self._ring is None:
                self._ring = self._load()
            return self._ring

    def _load(self) -> Ed25519KeyRing:
        if self._configured:
            return Ed25519KeyRing.of(self._configured)
        if self._key_file is not None:
            return key_file_ring(self._key_file)
        log.info(
            "receipts.ephemeral_key",
            detail="CLARION_RECEIPT_KEYS is unset and the database is not a SQLite file: "
            "receipts are signed with a random key of this process and stop verifying when "
            "it exits",
        )
        return Ed25519KeyRing.ephemeral()

    @property
    def signing_kid(self) -> str:
        return self.ring().signing_kid

    def sign(self, message: bytes) -> bytes:
        return self.ring().sign(message)

    def public_keys(self) -> tuple[PublicKey, ...]:
        return self.ring().public_keys()


def receipt_keys(settings: Settings, sqlite_file: str | None) -> ReceiptKeys:
    """The receipt signer of a service on ``settings`` whose SQLite file (if any) is
    ``sqlite_file``."""
    return ReceiptKeys(settings.receipt_keys, key_file_for(sqlite_file))


__all__ = ["ReceiptKeys", "key_file_for", "receipt_keys", "sqlite_file_of"]
