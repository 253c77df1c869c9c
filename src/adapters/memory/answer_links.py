"""The in-memory :class:`clarion.ports.answer_links.AnswerLinkStore` (one process)."""

from __future__ import annotations

import threading
from datetime import datetime

import attrs

from clarion.ports.answer_links import LinkUse


@attrs.define
class InMemoryAnswerLinkStore:
    """Used answer links in a dict under a lock (nothing is kept across restarts)."""

    _uses: dict[str, LinkUse] = attrs.field(factory=dict, init=False)
    _lock: threading.Lock = attrs.field(factory=threading.Lock, init=False)

    def consume(self, use: LinkUse) -> bool:
        with self._lock:
            if use.link_id in self._uses:
                return False
            self._uses[use.link_id] = use
            return True

    def find(self, link_id: str) -> LinkUse | None:
        with self._lock:
            return self._uses.get(link_id)

    def release(self, link_id: str) -> bool:
        with self._lock:
            return self._uses.pop(link_id, None) is not None

    def purge(self, now: datetime) -> int:
        with self._lock:
            doomed = [key for key, use in self._uses.items() if use.expires_at < now]
            for key in doomed:
                del self._uses[key]
            return len(doomed)
