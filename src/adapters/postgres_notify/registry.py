"""What this process knows of the waiter entries other processes hold.

Fed by their ``reg``/``unreg``/``snap`` messages and pruned when a process stops listening, it
is eventually consistent and serves only the questions that have no stronger answer:
``has_entry`` (``GET /:id``, operator cancel, the abandoned-wait check) and waiting on a
bundle registered elsewhere. Delivery never relies on it — an offer asks every live process.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


class RemoteEntries:
    """Entries per instance, with an index from pending id to the instances holding it."""

    def __init__(self) -> None:
        self._by_instance: dict[str, dict[str, str]] = {}
        self._holders: dict[str, set[str]] = {}

    def add(self, instance: str, pending_id: str, session_id: str) -> None:
        self._by_instance.setdefault(instance, {})[pending_id] = session_id
        self._holders.setdefault(pending_id, set()).add(instance)

    def remove(self, instance: str, pending_id: str) -> None:
        entries = self._by_instance.get(instance)
        if entries is not None:
            entries.pop(pending_id, None)
        holders = self._holders.get(pending_id)
        if holders is not None:
            holders.discard(instance)
            if not holders:
                del self._holders[pending_id]

    def replace(self, instance: str, entries: Iterable[tuple[str, str]]) -> None:
        """Everything ``instance`` holds, as its snapshot says."""
        self.drop_instance(instance)
        for pending_id, session_id in entries:
            self.add(instance, pending_id, session_id)

    def drop_instance(self, instance: str) -> None:
        for pending_id in list(self._by_instance.pop(instance, {})):
            self.remove(instance, pending_id)

    def keep_only(self, live: Collection[str]) -> None:
        """Forget the instances that are no longer listening."""
        for instance in [name for name in self._by_instance if name not in live]:
            self.drop_instance(instance)

    def has(self, pending_id: str) -> bool:
        return pending_id in self._holders

    def session_of(self, pending_id: str) -> str | None:
        for instance in self._holders.get(pending_id, ()):
            return self._by_instance[instance][pending_id]
        return None

    def forget(self, pending_id: str) -> bool:
        """Drop ``pending_id`` everywhere (it was just cancelled); True when it was known."""
        holders = self._holders.pop(pending_id, set())
        for instance in holders:
            self._by_instance[instance].pop(pending_id, None)
        return bool(holders)

    def forget_session(self, session_id: str) -> None:
        for instance, entries in self._by_instance.items():
            for pending_id in [p for p, s in entries.items() if s == session_id]:
                self.remove(instance, pending_id)

    def instances(self) -> set[str]:
        return set(self._by_instance)
