"""Outbound HTTP to destinations users choose (issue #29 S2, S4): notification webhooks and the
resume webhook.

**Which addresses.** A destination is refused when any address its host resolves to is
internal — loopback, private, link-local (``169.254.169.254``), carrier-grade NAT, multicast,
unspecified, reserved, documentation or benchmarking ranges, IPv6 unique-local, and the same
inside IPv4-mapped (``::ffff:127.0.0.1``), NAT64 (``64:ff9b::/96``) and 6to4 (``2002::/16``)
addresses — unless the operator allows it with ``CLARION_OUTBOUND_ALLOW`` (comma-separated
IP networks, addresses or host names: ``127.0.0.1,10.0.0.0/8,hooks.internal``). Numeric
spellings (``0x7f000001``, ``2130706433``, ``127.1``) are whatever the resolver makes of them,
and names such as ``metadata.google.internal`` are judged by what they resolve to, so neither
gets past the check.

**Checked on the address connected to.** :func:`send` resolves the host once, checks every
address, and connects to the first checked one — sending the original ``Host`` header and TLS
server name (SNI, and the certificate is verified for that name) — so a name that resolves to
a public address when checked and to an internal one when connected (DNS rebinding) cannot
slip through. Redirects are never followed (a 3xx is just a status), no proxy from the
environment is used, and no connection is reused across destinations.

**Bounded.** The whole attempt — resolution, connection, request and reading the response —
runs under one deadline, and at most ``max_bytes`` of the response body are read (the rest is
never downloaded: the connection is closed).

Shared by the notification and resume adapters, so it sits outside the independence contract
of technology adapters (like :mod:`clarion.adapters.http_guard`) and imports none of them.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
from collections.abc import Iterable, Mapping
from typing import Final

import anyio
import attrs
import httpx2

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

ALLOW_SETTING: Final = "CLARION_OUTBOUND_ALLOW"
DEFAULT_MAX_BYTES: Final = 64 * 1024
NAT64: Final = ipaddress.ip_network("64:ff9b::/96")
# Names that only ever mean something inside a network.
INTERNAL_SUFFIXES: Final = (".localhost", ".local", ".internal", ".home.arpa", ".lan")


class OutboundRefused(Exception):
    """The destination is internal and the operator did not allow it."""


class OutboundUnresolved(Exception):
    """The destination's name does not resolve (now: it may later)."""


def is_internal(address: IPAddress) -> bool:
    """True for any address that is not a public unicast one (see the module docstring)."""
    if isinstance(address, ipaddress.IPv6Address):
        embedded: list[IPAddress] = [
            a for a in (address.ipv4_mapped, address.sixtofour) if a is not None
        ]
        if address in NAT64:
            embedded.append(ipaddress.IPv4Address(int(address) & 0xFFFFFFFF))
        if address.teredo is not None:
            embedded.extend(address.teredo)
        if any(is_internal(a) for a in embedded):
            return True
    return (
        not address.is_global
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or address.is_loopback
        or address.is_link_local
        or address.is_private
    )


@attrs.frozen
class OutboundPolicy:
    """Which internal destinations the operator allows (``CLARION_OUTBOUND_ALLOW``); by
    default none."""

    networks: tuple[IPNetwork, ...] = ()
    hosts: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, text: str, setting: str = ALLOW_SETTING) -> OutboundPolicy:
        """``127.0.0.1,::1,10.0.0.0/8,hooks.internal`` → a policy.

        Raises:
            ValueError: an entry is neither a network, an address nor a host name (the
                message names ``setting``).
        """
        networks: list[IPNetwork] = []
        hosts: set[str] = set()
        for raw in text.split(","):
            entry = raw.strip().lower()
            if not entry:
                continue
            try:
                networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
                continue
            except ValueError:
                pass
            if not all(part and _LABEL_CHARS.issuperset(part) for part in entry.split(".")):
                raise ValueError(
                    f"{setting}: {raw.strip()!r} is neither an IP network, an address nor a "
                    "host name"
                )
            hosts.add(entry.rstrip("."))
        return cls(tuple(networks), frozenset(hosts))

    @classmethod
    def allow_loopback(cls) -> OutboundPolicy:
        """Loopback only (the demo, tests): ``127.0.0.0/8`` and ``::1``."""
        return cls.parse("127.0.0.0/8,::1,localhost")

    def allows_host(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.hosts

    def allows(self, address: IPAddress) -> bool:
        """Whether connecting to ``address`` is permitted."""
        mapped = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) else None
        return not is_internal(address) or any(
            address in network or (mapped is not None and mapped in network)
            for network in self.networks
        )

    def check_literal(self, host: str) -> None:
        """Refuse, without resolving, a literal internal address the policy does not allow.

        Raises:
            OutboundRefused: ``host`` is such an address.
        """
        literal = _literal(host)
        if literal is not None and not self.allows(literal):
            raise OutboundRefused(_refusal(host, literal))

    def judge(self, host: str, resolved: Iterable[object] | None) -> IPAddress:
        """The address to connect to for ``host``, given what it resolved to (None: it did
        not resolve); every address is checked.

        Raises:
            OutboundRefused: an address is internal and not allowed, or an internal name
                (``localhost``, ``*.internal``, …) does not resolve.
            OutboundUnresolved: any other name does not resolve.
        """
        name = host.lower().strip("[]").rstrip(".")
        literal = _literal(name)
        if literal is not None:
            self.check_literal(name)
            return literal
        addresses = _addresses(resolved or ())
        if not addresses:
            internal_name = name == "localhost" or name.endswith(INTERNAL_SUFFIXES)
            if internal_name and not self.allows_host(name):
                raise OutboundRefused(
                    f"{host} is an internal name; an administrator may allow it with "
                    f"{ALLOW_SETTING}"
                )
            raise OutboundUnresolved(f"{host} does not resolve")
        if not self.allows_host(name):
            for address in addresses:
                if not self.allows(address):
                    raise OutboundRefused(_refusal(host, address))
        return addresses[0]

    async def resolve(self, host: str, port: int) -> IPAddress:
        """The address to connect to for ``host``: resolved once, every address checked
        (:meth:`judge`)."""
        self.check_literal(host)
        resolved: list[object] | None = None
        if _literal(host) is None:
            try:
                infos = await anyio.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
                resolved = [info[4][0] for info in infos]
            except (OSError, UnicodeError):
                resolved = None
        return self.judge(host, resolved)

    def resolve_now(self, host: str, port: int) -> IPAddress:
        """:meth:`resolve`, blocking (start-up checks)."""
        resolved: list[object] | None = None
        if _literal(host) is None:
            try:
                infos = socket.getaddrinfo(host.strip("[]"), port, type=socket.SOCK_STREAM)
                resolved = [info[4][0] for info in infos]
            except (OSError, UnicodeError):
                resolved = None
        return self.judge(host, resolved)


_LABEL_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _literal(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _addresses(raw: Iterable[object]) -> list[IPAddress]:
    found: list[IPAddress] = []
    for text in raw:
        address = _literal(str(text))
        if address is not None and address not in found:
            found.append(address)
    return found


def _refusal(host: str, address: IPAddress) -> str:
    return (
        f"{host} resolves to {address}, an internal address; an administrator may allow it "
        f"with {ALLOW_SETTING}"
    )


@attrs.frozen
class OutboundResponse:
    """What came back: the status and at most ``max_bytes`` of the body."""

    status: int
    body: bytes = b""
    truncated: bool = False


@functools.cache
def system_tls() -> ssl.SSLContext:
    """The default TLS context (the system's trusted certificates, as ``verify=True`` builds
    it, environment ignored), built once per process: building it reads the whole certificate
    store, about 20 ms of CPU, which every webhook delivery paid (issue #35). A context is
    made to be shared by connections; certificates are still verified for each URL's host
    name. A change to the system's certificate store takes effect at the next start."""
    return httpx2.create_ssl_context(verify=True, trust_env=False)


async def send(
    method: str,
    url: str,
    *,
    policy: OutboundPolicy,
    content: bytes = b"",
    headers: Mapping[str, str] | None = None,
    deadline_s: float = 10.0,
    max_bytes: int = DEFAULT_MAX_BYTES,
    client: httpx2.AsyncClient | None = None,
    tls: ssl.SSLContext | None = None,
) -> OutboundResponse:
    """Send one request under ``policy`` (see the module docstring).

    An injected ``client`` is the caller's (tests, custom TLS): its transport decides where it
    connects, so the address check is skipped; the deadline, the byte cap and the refusal of
    redirects still apply. ``tls`` replaces the default TLS context (the system's trusted
    certificates); either way the certificate is verified for the URL's host name.

    Raises:
        OutboundRefused: the destination is internal and not allowed (or not http(s)).
        OutboundUnresolved: its name does not resolve.
        httpx2.HTTPError: a transport error.
        TimeoutError: the deadline passed.
    """
    with anyio.fail_after(deadline_s):
        if client is not None:
            return await _exchange(client, method, url, content, headers or {}, {}, max_bytes)
        target = httpx2.URL(url)
        if target.scheme not in ("http", "https") or not target.host:
            raise OutboundRefused(f"not an http(s) URL: {url}")
        port = target.port or (443 if target.scheme == "https" else 80)
        host = target.raw_host.decode("ascii")  # an international name in its ASCII form
        address = await policy.resolve(host, port)
        sent_headers = {**(headers or {}), "Host": target.netloc.decode("ascii")}
        extensions = {"sni_hostname": host.strip("[]")} if target.scheme == "https" else {}
        direct = target.copy_with(host=str(address), port=port)
        transport = httpx2.AsyncHTTPTransport(
            verify=tls if tls is not None else system_tls(), trust_env=False, retries=0
        )
        async with httpx2.AsyncClient(
            transport=transport, trust_env=False, timeout=deadline_s
        ) as own:
            return await _exchange(
                own, method, str(direct), content, sent_headers, extensions, max_bytes
            )


async def _exchange(
    client: httpx2.AsyncClient,
    method: str,
    url: str,
    content: bytes,
    headers: Mapping[str, str],
    extensions: dict[str, str],
    max_bytes: int,
) -> OutboundResponse:
    async with client.stream(
        method,
        url,
        content=content,
        headers=dict(headers),
        extensions=extensions,
        follow_redirects=False,
    ) as response:
        if response.is_stream_consumed:  # a response built in memory (a test's transport)
            return OutboundResponse(
                response.status_code,
                response.content[:max_bytes],
                len(response.content) > max_bytes,
            )
        body = bytearray()
        truncated = False
        async for chunk in response.aiter_raw():
            body.extend(chunk)
            if len(body) >= max_bytes:
                truncated = True  # the rest is never read: leaving closes the connection
                break
        return OutboundResponse(response.status_code, bytes(body[:max_bytes]), truncated)


__all__ = [
    "ALLOW_SETTING",
    "DEFAULT_MAX_BYTES",
    "OutboundPolicy",
    "OutboundRefused",
    "OutboundResponse",
    "OutboundUnresolved",
    "is_internal",
    "send",
    "system_tls",
]
