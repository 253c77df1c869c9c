"""Where a notification route may deliver (issue #29 S4): the
:class:`clarion.ports.notifications.DestinationCheck` asked when a route is added.

- **Webhook.** The URL's host must not be an internal address (loopback, private, link-local,
  …; :mod:`clarion.adapters.outbound`) unless ``CLARION_OUTBOUND_ALLOW`` allows it — for every
  caller, so a route that could never deliver is refused at once with a 400 naming
  ``channel``. A name that does not resolve (yet) is accepted: delivery resolves and checks
  again on every attempt, on the address it connects to.
- **Apprise.** Apprise connects with its own HTTP stack, which Clarion cannot pin to a checked
  address, so for anyone but an administrator (or the operator) an Apprise URL must name one of
  the hosted services in :data:`SAFE_APPRISE_SCHEMES` — whose address Apprise fixes, not the
  URL — and may not choose the HTTP method, headers or payload fields (``?method=``,
  ``+Header=``, ``-Header=``, ``:field=``), follow redirects (``?redirect=``) or name several
  URLs at once. An administrator's Apprise URL is used as given (redirects are still off unless
  it says ``redirect=yes``). The channel applies the same rule at every send to routes that act
  for someone who is not an administrator.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote, urlsplit

import anyio

from clarion.adapters.outbound import OutboundPolicy, OutboundRefused, OutboundUnresolved
from clarion.domain.errors import ValidationError
from clarion.domain.notifications import Channel

# Hosted services whose API address Apprise's plugin fixes (discord.com, Slack's hooks,
# api.telegram.org, api.pushover.net, api.pushbullet.com): nothing in the URL picks the host.
SAFE_APPRISE_SCHEMES: Final = frozenset({"discord", "slack", "tgram", "pover", "pbul"})
# Query keys that choose the request itself rather than the message.
CHOSEN_REQUEST_KEYS: Final = frozenset({"method", "redirect", "redirects"})
RESOLVE_TIMEOUT_S: Final = 3.0


def apprise_problem(target: str, *, trusted: bool) -> str:
    """Why an untrusted caller may not use the Apprise URL ``target`` ("" when they may)."""
    if trusted:
        return ""
    if any(c.isspace() for c in target) or "," in target:
        return "an Apprise route names one URL"
    parts = urlsplit(target)
    scheme = parts.scheme.lower()
    if scheme not in SAFE_APPRISE_SCHEMES:
        return (
            f"Apprise {scheme or 'URL'}:// routes are for administrators; others may use "
            + ", ".join(f"{s}://" for s in sorted(SAFE_APPRISE_SCHEMES))
        )
    # Raw keys: a "+" (Apprise's "add this header") must not turn into a space first.
    for raw in re.split("[&;]", parts.query):
        key = unquote(raw.partition("=")[0]).strip()
        if key[:1] in ("+", "-", ":") or key.lower() in CHOSEN_REQUEST_KEYS:
            return f"an Apprise URL may not set {key!r} (HTTP method, headers and redirects)"
    return ""


class RouteDestinations:
    """:class:`clarion.ports.notifications.DestinationCheck` under ``policy``."""

    def __init__(self, policy: OutboundPolicy) -> None:
        self._policy = policy

    async def check(self, channel: Channel, *, trusted: bool) -> None:
        if channel.kind == "apprise":
            problem = apprise_problem(channel.target, trusted=trusted)
            if problem:
                raise ValidationError(f"channel: {problem}", field="channel")
        elif channel.kind == "webhook":
            parts = urlsplit(channel.target)
            host = parts.hostname or ""
            try:
                port = parts.port or (443 if parts.scheme == "https" else 80)
            except ValueError as exc:
                raise ValidationError(
                    "channel: a webhook URL's port must be a number", field="channel"
                ) from exc
            try:
                with anyio.move_on_after(RESOLVE_TIMEOUT_S):
                    await self._policy.resolve(host, port)
            except OutboundRefused as exc:
                raise ValidationError(
                    f"channel: webhook destination refused: {exc}", field="channel"
                ) from exc
            except OutboundUnresolved:
                pass  # delivery resolves (and checks) again on every attempt


__all__ = ["CHOSEN_REQUEST_KEYS", "SAFE_APPRISE_SCHEMES", "RouteDestinations", "apprise_problem"]
