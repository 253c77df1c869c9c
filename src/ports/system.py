"""The clock and id generator, injected so tests and hosts control time and identity."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol


class Clock(Protocol):
    """``now`` returns an aware UTC datetime truncated to microseconds."""

    def now(self) -> datetime: ...


class IdGenerator(Protocol):
    """``new_id`` returns a fresh, unique, opaque string id (UUID-4 text by default)."""

    def new_id(self) -> str: ...
