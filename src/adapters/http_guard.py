"""The one HTTP gate in front of every route: Host and Origin checks, JSON-only bodies (HTML
forms on the answer-link route only).

Shared by the REST surface (its middleware covers everything the composition root mounts
behind it: REST, the event stream, the web inbox and the MCP endpoints) and by the MCP
surfaces on their own (an embedding host may mount them without REST). Installing it twice is
harmless: an inner instance sees the outer one's mark and lets the request through unchanged.

**Host (DNS rebinding).** A web page whose name an attacker points at 127.0.0.1 sends its own
name in ``Host``. Only loopback names (``127.0.0.1``, ``localhost``, ``[::1]``, any port) and
the configured names are served; anything else is 421 ``{"error": "host not allowed: …"}``.
Names compare case-insensitively. An entry ``name`` accepts that name with any port or none;
an entry ``name:port`` accepts that port only, where a ``Host`` without a port stands for the
scheme's default port (80 for http, 443 for https) — so ``clarion.example.com:443`` accepts the
bare ``Host: clarion.example.com`` a client sends over https.

**Origin (cross-site requests).** A request that carries an ``Origin`` header (browsers send
one on every cross-site request and on every same-origin write) is served only when that
origin's host is allowed by the same rule, with ``http`` or ``https``; otherwise 403
``{"error": "origin not allowed: …"}``, whatever the method and the authentication mode. A
request without ``Origin`` (curl, SDKs, agents) is judged by ``Host`` alone.

**JSON only.** A write (any method but GET, HEAD and OPTIONS) that carries a body or a
``Content-Type`` must say ``application/json``, optionally with ``charset=utf-8``; anything
else is 415 ``{"error": "unsupported media type: …"}`` (the one exception follows). A
cross-site page can send ``text/plain`` or a form without a CORS preflight, never
``application/json``.

**Forms on two routes only.** The answer-link page (``/answer/<token>``, issue #17) must work
without JavaScript, so its ``POST`` is an HTML form; Slack's interactivity requests
(``/integrations/slack/``, issue #18) arrive URL-encoded. On the paths under ``form_paths``
(those prefixes by default) a write must say ``application/x-www-form-urlencoded`` (optionally
with ``charset=utf-8``) instead, else 415. Nowhere else is a form body accepted, and JSON is
not accepted there. The exception is safe because neither route reads a cookie or bearer token
(the authentication middleware covers ``/api/`` only): the answer link's credential is the
signed token in its own path, Slack's is its signature of the body — and the Host and Origin
checks above still apply: a cross-site form carries its own ``Origin`` and is refused with 403
(Slack sends none). One more origin is accepted there: ``null``, which a browser sends on a
form's POST from a page served with ``Referrer-Policy: no-referrer`` (the answer page is, so
its token-bearing URL never leaves in a ``Referer``, #29 S5) — unless ``Sec-Fetch-Site`` says
the form came from another site.

**No caching.** Every response that does not choose its own ``Cache-Control`` (the inbox page
and its assets do) gets ``Cache-Control: no-store``: API answers carry questions, answers and
tokens, which no browser or proxy cache should keep.

Paths in ``open_paths`` (``/healthz`` by default) skip the gate: probes from an orchestrator
address the process by its IP, and the answer says nothing but "up".
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping
from typing import Final

import attrs
from starlette.types import ASGIApp, Message, Receive, Scope, Send

GUARD_SCOPE_KEY: Final = "clarion.http_guard"
HEADERS_SCOPE_KEY: Final = "clarion.headers"
LOOPBACK_NAMES: Final = ("127.0.0.1", "localhost", "[::1]")
JSON_MEDIA_TYPE: Final = "application/json"
SAFE_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
OPEN_PATHS: Final = ("/healthz",)
FORM_MEDIA_TYPE: Final = "application/x-www-form-urlencoded"
# Path prefixes whose writes are forms, not JSON: the answer-link page and Slack's
# interactivity requests (issue #18), which Slack sends URL-encoded and signs.
FORM_PATHS: Final = ("/answer/", "/integrations/slack/")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}
_NO_STORE: Final = (b"cache-control", b"no-store")
_SHOWN: Final = 100  # characters of a refused header value echoed in the error

MISDIRECTED: Final = 421
FORBIDDEN: Final = 403
UNSUPPORTED_MEDIA_TYPE: Final = 415
UNSUPPORTED_MEDIA_TYPE_MESSAGE: Final = (
    "unsupported media type: Content-Type must be application/json (optionally charset=utf-8)"
)
UNSUPPORTED_FORM_TYPE_MESSAGE: Final = (
    "unsupported media type: Content-Type must be application/x-www-form-urlencoded"
)


def is_form_path(path: str, prefixes: Collection[str] = FORM_PATHS) -> bool:
    """True for a path (below ``root_path``) under one of the form-posting prefixes."""
    return any(path.startswith(prefix) for prefix in prefixes)


def _split_authority(authority: str) -> tuple[str, int | None] | None:
    """``name``, ``name:port``, ``[v6]`` or ``[v6]:port`` as (lower-case name, port); None
    when it is none of these."""
    text = authority.strip().lower()
    if not text:
        return None
    if text.startswith("["):
        end = text.find("]")
        if end < 0:
            return None
        name, rest = text[: end + 1], text[end + 1 :]
        if not rest:
            return name, None
        if not rest.startswith(":"):
            return None
        port_text = rest[1:]
    else:
        name, colon, port_text = text.partition(":")
        if not colon:
            return (name, None) if name else None
        if not name:
            return None
    if not port_text.isdigit() or not 0 < int(port_text) <= 65535:
        return None
    return name, int(port_text)


@attrs.frozen
class HostAllowlist:
    """The host names a server answers to: loopback names with any port, plus ``extra``
    entries (``name`` = any port, ``name:port`` = that port only)."""

    entries: tuple[tuple[str, int | None], ...]

    @classmethod
    def of(cls, extra: Iterable[str] = ()) -> HostAllowlist:
        """Loopback names plus ``extra``.

        Raises:
            ValueError: an entry is not ``name`` or ``name:port``; the message names it.
        """
        entries: list[tuple[str, int | None]] = [(name, None) for name in LOOPBACK_NAMES]
        for item in extra:
            parsed = _split_authority(item)
            if parsed is None or "/" in item:
                raise ValueError(
                    f"allowed host {item!r} must be a name or name:port (like example.com:8443)"
                )
            entries.append(parsed)
        return cls(entries=tuple(entries))

    def allows(self, authority: str, *, default_port: int) -> bool:
        """True when ``authority`` (a ``Host`` value) names an allowed host; a missing port
        stands for ``default_port``."""
        parsed = _split_authority(authority)
        if parsed is None:
            return False
        name, port = parsed
        effective = default_port if port is None else port
        return any(
            name == allowed and (allowed_port is None or allowed_port == effective)
            for allowed, allowed_port in self.entries
        )

    def allows_origin(self, origin: str) -> bool:
        """True when ``origin`` (``scheme://host[:port]``, scheme http or https) is allowed."""
        scheme, separator, authority = origin.strip().partition("://")
        default_port = _DEFAULT_PORTS.get(scheme.lower())
        if not separator or default_port is None or "/" in authority:
            return False
        return self.allows(authority, default_port=default_port)


def request_headers(scope: Scope) -> Mapping[str, str]:
    """The request's headers by name (ASGI servers send names in lower case), each name's
    first value: what Starlette's ``Headers(scope=scope).get(name)`` returns, latin-1 decoded.

    Every layer in front of the routes reads a few headers of every request; this reads the
    header list once per request and leaves the result in the scope for the next layer
    (issue #35: each ``Headers.get`` walks the whole list again). The result is tied to the
    list it was read from, so a layer that replaces ``scope["headers"]`` is never answered
    from a stale read."""
    raw = scope.get("headers") or ()
    cached = scope.get(HEADERS_SCOPE_KEY)
    if cached is not None and cached[0] is raw:
        found: Mapping[str, str] = cached[1]
        return found
    parsed: dict[str, str] = {}
    for name, value in raw:
        key = name.decode("latin-1")
        if key not in parsed:
            parsed[key] = value.decode("latin-1")
    scope[HEADERS_SCOPE_KEY] = (raw, parsed)
    return parsed


def announces_body(headers: Mapping[str, str]) -> bool:
    """The request says a body follows: a ``Content-Length`` other than 0, or a
    ``Transfer-Encoding``."""
    length = headers.get("content-length")
    return (length is not None and length.strip() not in ("", "0")) or (
        "transfer-encoding" in headers
    )


def _media_type_is(content_type: str, expected: str) -> bool:
    media_type, *parameters = (part.strip().lower() for part in content_type.split(";"))
    if media_type != expected:
        return False
    for parameter in parameters:
        key, _, value = parameter.partition("=")
        if key.strip() != "charset" or value.strip().strip('"') != "utf-8":
            return False
    return True


def _carries_body(headers: Mapping[str, str]) -> bool:
    length = headers.get("content-length")
    return (length is not None and length.strip() != "0") or "transfer-encoding" in headers


def _relative_path(scope: Scope) -> str:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


async def send_error(send: Send, status: int, message: str, *headers: tuple[bytes, bytes]) -> None:
    """Answer with ``status`` and ``{"error": message}``, never cached: the JSON error body
    of a pure ASGI middleware that refuses a request before the application sees it (here and
    in :mod:`clarion.adapters.body_deadline`); ``headers`` are added to the response's."""
    body = json.dumps({"error": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                _NO_STORE,
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def _null_origin_form(origin: str, headers: Mapping[str, str], form_path: bool) -> bool:
    """A form on a form path posted from a no-referrer page of this site: ``Origin: null``,
    with a ``Sec-Fetch-Site`` (when the browser sends one) of ``same-origin``."""
    site = headers.get("sec-fetch-site", "same-origin")
    return form_path and origin.strip() == "null" and site in ("same-origin", "none")


def _shown(value: str) -> str:
    return value if len(value) <= _SHOWN else value[:_SHOWN] + "…"


class HttpGuard:
    """Pure ASGI middleware: the Host, Origin and JSON-only checks (see the module);
    ``form_paths`` are the path prefixes whose writes are HTML forms instead."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        allowed_hosts: HostAllowlist | None = None,
        open_paths: Collection[str] = OPEN_PATHS,
        form_paths: Collection[str] = FORM_PATHS,
    ) -> None:
        self.app = app
        self._allowed = allowed_hosts if allowed_hosts is not None else HostAllowlist.of()
        self._open = frozenset(open_paths)
        self._form = tuple(form_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get(GUARD_SCOPE_KEY):
            await self.app(scope, receive, send)
            return
        scope[GUARD_SCOPE_KEY] = True
        refusal = self._refusal(scope)
        if refusal is not None:
            await send_error(send, *refusal)
            return

        async def send_no_store(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = message.get("headers", [])
                if not any(key.lower() == b"cache-control" for key, _ in headers):
                    message = {**message, "headers": [*headers, _NO_STORE]}
            await send(message)

        await self.app(scope, receive, send_no_store)

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        path = _relative_path(scope)
        if path in self._open:
            return None
        headers = request_headers(scope)
        host = headers.get("host", "")
        default_port = _DEFAULT_PORTS.get(scope.get("scheme", "http"), 80)
        if not self._allowed.allows(host, default_port=default_port):
            return MISDIRECTED, f"host not allowed: {_shown(host)!r}"
        origin = headers.get("origin")
        if (
            origin is not None
            and not self._allowed.allows_origin(origin)
            and not _null_origin_form(origin, headers, is_form_path(path, self._form))
        ):
            return FORBIDDEN, f"origin not allowed: {_shown(origin)!r}"
        if scope.get("method", "GET") not in SAFE_METHODS:
            # The one exception to JSON only: HTML forms on the form paths (module docstring).
            expected, message = (
                (FORM_MEDIA_TYPE, UNSUPPORTED_FORM_TYPE_MESSAGE)
                if is_form_path(path, self._form)
                else (JSON_MEDIA_TYPE, UNSUPPORTED_MEDIA_TYPE_MESSAGE)
            )
            content_type = headers.get("content-type")
            if content_type is None:
                if _carries_body(headers):
                    return UNSUPPORTED_MEDIA_TYPE, message
            elif not _media_type_is(content_type, expected):
                return UNSUPPORTED_MEDIA_TYPE, message
        return None
