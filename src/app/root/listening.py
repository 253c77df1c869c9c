"""The listening sockets of ``clarion serve``, taken first (issue #30).

``clarion serve`` binds and listens before it opens, creates or migrates a database, then hands
the sockets to uvicorn (:meth:`uvicorn.Server.run` takes ``sockets``): a port in use is one
line before anything else happens, and no other process can take the port in between — there
is no check-then-bind race. The sockets are made as asyncio's ``create_server`` makes them for a
host and a port (uvicorn's default): one per address the host resolves to, ``SO_REUSEADDR``
(a restart need not wait for ``TIME_WAIT``; on Linux it never lets two listeners share a port),
IPv6 sockets v6-only. Port 0 asks for any free port, the same one on every address.
"""

from __future__ import annotations

import errno
import socket
from typing import Final

from clarion.domain.errors import ClarionError

# uvicorn's default backlog: connections arriving while the database is migrated queue here.
BACKLOG: Final = 2048
_PORT_SETTING: Final = "check --port or CLARION_PORT"
_HOST_SETTING: Final = "check --host or CLARION_HOST"


class CannotListen(ClarionError):
    """``clarion serve`` cannot listen on the configured host and port; the message names the
    address, the setting and the cause."""


def listening_sockets(host: str, port: int, *, backlog: int = BACKLOG) -> list[socket.socket]:
    """Sockets bound to ``host``:``port`` and listening (see the module docstring); the caller
    closes them (uvicorn does when it shuts down).

    Raises:
        CannotListen: the host does not resolve or is not this machine's, the port is in use
            or privileged, or the system refuses for another reason.
    """
    try:
        found = socket.getaddrinfo(
            host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise CannotListen(
            f"cannot listen on host {host!r}: {exc.strerror} ({_HOST_SETTING})"
        ) from None
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(found):
            listener = socket.socket(family, kind, proto)
            sockets.append(listener)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                listener.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            if port == 0 and len(sockets) > 1:
                address = (address[0], sockets[0].getsockname()[1], *address[2:])
            try:
                listener.bind(address)
            except OSError as exc:
                raise _refusal(host, port, exc) from None
            listener.listen(backlog)
    except BaseException:
        for listener in sockets:
            listener.close()
        raise
    return sockets


def bound_port(sockets: list[socket.socket]) -> int:
    """The port the sockets listen on (the free port chosen for port 0)."""
    return int(sockets[0].getsockname()[1])


def _refusal(host: str, port: int, error: OSError) -> CannotListen:
    if error.errno == errno.EADDRINUSE:
        return CannotListen(
            f"port {port} on {host} is already in use by another process ({_PORT_SETTING}; "
            "stop that process or choose another port)"
        )
    if error.errno == errno.EACCES and 0 < port < 1024:
        return CannotListen(
            f"not permitted to listen on port {port} of {host}: ports below 1024 need "
            f"privileges ({_PORT_SETTING}; the default is 8765)"
        )
    if error.errno == errno.EADDRNOTAVAIL:
        return CannotListen(
            f"cannot listen on host {host!r}: it is not an address of this machine "
            f"({_HOST_SETTING})"
        )
    return CannotListen(
        f"cannot listen on {host}:{port}: {error.strerror} ({_HOST_SETTING}, --port or "
        "CLARION_PORT)"
    )


__all__ = ["BACKLOG", "CannotListen", "bound_port", "listening_sockets"]
