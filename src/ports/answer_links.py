"""Which signed answer links have been used (single use, ``clarion.app.usecases.answer_links``).

A link is stateless until it answers: its token carries the recipient, the bundle, an expiry
and a nonce under a signature. Only its *use* is stored, keyed by that nonce, so a link
answers at most once however many processes share the store.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

import attrs


@attrs.frozen
class LinkUse:
    """One used answer link: its nonce (``link_id``), what it was bound to, when it was used
    and when it expires (after which the record is no longer needed)."""

    link_id: str
    pending_id: str
    user_id: str
    used_at: datetime
    expires_at: datetime


class AnswerLinkStore(Protocol):
    """Contract (checked by ``clarion.ports.testing.answer_links``):

    - :meth:`consume` is atomic: of any number of calls for one ``link_id`` — concurrent, in
      several processes — exactly one returns True until the use is released.
    - A use is read back unchanged by :meth:`find` and survives until :meth:`release` or
      :meth:`purge`.
    """

    def consume(self, use: LinkUse) -> bool:
        """Record ``use``; True when the link was unused until now, False when it was used."""
        ...

    def find(self, link_id: str) -> LinkUse | None:
        """The recorded use of this link; None when it is unused."""
        ...

    def release(self, link_id: str) -> bool:
        """Forget the use (its answer was not recorded, so the link may try again); True when
        there was one."""
        ...

    def purge(self, now: datetime) -> int:
        """Delete the uses of links that expired before ``now`` (their tokens no longer
        verify) and return how many."""
        ...
