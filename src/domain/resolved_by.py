"""Who resolved a bundle and from where (issue #20), recorded by the claim itself.

The claim's one conditional write stores a :class:`ResolvedBy` (without its time) with every
claimed row — beside the metadata, never inside it, so transcripts read exactly as before —
and its time is the claim's ``updated_at``, which finalize keeps (the same instant a loser's
replay reports as ``responded_at``). A restore to pending drops it. Rows resolved before the
record existed read as :meth:`ResolvedBy.unknown`.
"""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Final

import attrs

from clarion.domain.model import Identity


class Surface(enum.StrEnum):
    """Where a resolution came from. Stored as its string value."""

    REST = "rest"  # REST respond with a bearer token (or auth disabled)
    MCP = "mcp"  # the external MCP answer tool
    INBOX = "inbox"  # the web inbox (REST respond authenticated by the inbox's cookie session)
    CLI = "cli"  # REST respond sent by ``clarion questions answer`` (a label, see docs)
    AGENT_CLIENT = "agent_client"  # MCP elicitation: the asking agent's own client
    MCP_APP = "mcp_app"  # the MCP App card shown by the asking agent's host (issue #31)
    EMAIL = "email"  # an answer link in an e-mail
    SLACK = "slack"
    DEADLINE = "deadline"  # a deadline's default answer (system identity)
    STANDING_APPROVAL = "standing_approval"  # approved at once by a standing approval (#33)
    UNKNOWN = "unknown"  # rows resolved before the surface was recorded


class IdentityKind(enum.StrEnum):
    """What kind of principal resolved: a person, an agent (its session token), or Clarion."""

    USER = "user"
    AGENT = "agent"
    SYSTEM = "system"
    # An approval request decided at once by a standing approval (issue #33): identity_id is
    # the standing approval's id, the display name names who granted it.
    STANDING_APPROVAL = "standing_approval"
    UNKNOWN = "unknown"


@attrs.frozen
class ResolvedBy:
    """The resolver of a bundle: identity id, kind and display name, surface, and time.

    ``at`` is None only for a record that was never written (:meth:`unknown`) and not yet
    given the row's timestamp."""

    identity_id: str
    kind: IdentityKind
    display_name: str
    surface: Surface
    at: datetime | None = None

    @classmethod
    def of(cls, identity: Identity, surface: Surface) -> ResolvedBy:
        """The record for ``identity`` resolving on ``surface`` (time added by the claim).

        An internal caller (no user id) is the system; otherwise the identity's kind."""
        if identity.user_id is None:
            return cls("", IdentityKind.SYSTEM, identity.display_name or "clarion", surface)
        kind = identity.kind if identity.kind in _KINDS else IdentityKind.UNKNOWN
        return cls(identity.user_id, IdentityKind(kind), identity.display_name, surface)

    @classmethod
    def unknown(cls, at: datetime | None = None) -> ResolvedBy:
        return cls("", IdentityKind.UNKNOWN, "", Surface.UNKNOWN, at)

    def stamped(self, at: datetime) -> ResolvedBy:
        # Built directly, not with attrs.evolve: every resolved row read is stamped.
        return ResolvedBy(self.identity_id, self.kind, self.display_name, self.surface, at)


_KINDS: Final = frozenset(kind.value for kind in IdentityKind)
_SURFACES: Final = frozenset(surface.value for surface in Surface)


def stored_resolver(
    identity_id: str | None, kind: str | None, display_name: str | None, surface: str | None
) -> ResolvedBy | None:
    """The record as a store keeps it, field by field (no time); None when nothing was stored.
    A value outside the vocabulary reads as "unknown"."""
    if identity_id is None and kind is None and display_name is None and surface is None:
        return None
    return ResolvedBy(
        identity_id=identity_id or "",
        kind=IdentityKind(kind) if kind in _KINDS else IdentityKind.UNKNOWN,
        display_name=display_name or "",
        surface=Surface(surface) if surface in _SURFACES else Surface.UNKNOWN,
    )


__all__ = ["IdentityKind", "ResolvedBy", "Surface", "stored_resolver"]
