"""The parsers of setting values: each turns a variable's or a flag's text into the value and
raises one :class:`~clarion.domain.errors.ValidationError` naming the setting (``name``: the
variable, or the flag as ``--port``) when it cannot. The settings' declarations in
:mod:`clarion.app.root.settings` name them.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Final, Literal, TypeVar

from clarion.domain.errors import ValidationError
from clarion.domain.signing import key_weakness, secret_weakness

LogFormat = Literal["json", "console"]
LiveDelivery = Literal["auto", "postgres", "memory"]
SqliteSynchronous = Literal["FULL", "NORMAL"]
ElicitationMode = Literal["auto", "form", "url", "off"]
SmtpSecurity = Literal["starttls", "tls", "none"]
_Number = TypeVar("_Number", int, float)


def check_key_ring(keys: tuple[bytes, ...], name: str) -> None:
    """Refuse a ring holding a key too short or degenerate to sign with (#29).

    Raises:
        ValidationError: naming the setting ``name`` and the key's position.
    """
    for position, key in enumerate(keys, start=1):
        weakness = key_weakness(key)
        if weakness is not None:
            raise ValidationError(
                f"{name}: key {position} is {weakness}; use random keys of at least 32 bytes "
                "(make one with: openssl rand -base64 32)",
                field=name,
            )


def check_webhook_secret(secret: str, name: str) -> None:
    """Refuse a webhook signing secret too short or degenerate to sign with (#29); "" means
    unset.

    Raises:
        ValidationError: naming the setting ``name``.
    """
    weakness = secret_weakness(secret) if secret else None
    if weakness is not None:
        raise ValidationError(
            f"{name} is {weakness}; use a random secret (make one with: openssl rand -hex 32)",
            field=name,
        )


# A delivery attempt must end well within the worker's 120 s lease on its entry.
MAX_NOTIFY_TIMEOUT_S: Final = 60.0


def parse_notify_timeout(value: str, name: str) -> float:
    """A delivery attempt's deadline: positive seconds, at most :data:`MAX_NOTIFY_TIMEOUT_S`.

    Raises:
        ValidationError: not a positive number, or over the maximum (``field`` ``name``).
    """
    seconds = parse_positive_float(value, name)
    if seconds > MAX_NOTIFY_TIMEOUT_S:
        raise ValidationError(
            f"{name} must be at most {MAX_NOTIFY_TIMEOUT_S:g} seconds (half "
            f"the worker's lease), got {value!r}",
            field=name,
        )
    return seconds


def parse_http_url(value: str, name: str) -> str:
    """An ``http://`` or ``https://`` URL, as given.

    Raises:
        ValidationError: any other text (``field`` ``name``).
    """
    if not value.startswith(("http://", "https://")):
        raise ValidationError(f"{name} must be an http(s) URL", field=name)
    return value


def parse_base_url(value: str, name: str) -> str:
    """An http(s) URL to which paths are appended: ending in one ``/``.

    Raises:
        ValidationError: not an http(s) URL (``field`` ``name``).
    """
    url = parse_http_url(value, name)
    return url if url.endswith("/") else url + "/"


def parse_public_url(value: str, name: str) -> str:
    """An http(s) URL that paths follow (``/inbox``): without a trailing ``/``.

    Raises:
        ValidationError: not an http(s) URL (``field`` ``name``).
    """
    return parse_http_url(value, name).rstrip("/")


def parse_smtp_security(value: str, name: str) -> SmtpSecurity:
    security = value.lower()
    if security == "starttls":
        return "starttls"
    if security == "tls":
        return "tls"
    if security == "none":
        return "none"
    raise ValidationError(f"{name} must be 'starttls', 'tls' or 'none'", field=name)


def parse_host_list(value: str, name: str) -> tuple[str, ...]:
    """Comma-separated host names, blanks dropped."""
    return tuple(host.strip() for host in value.split(",") if host.strip())


def parse_outbound_allow(value: str, name: str) -> str:
    """Comma-separated IP networks, addresses and host names (checked, returned as given).

    Raises:
        ValidationError: an entry is none of them (``field`` ``name``).
    """
    from clarion.adapters.outbound import OutboundPolicy

    try:
        OutboundPolicy.parse(value, name)
    except ValueError as exc:
        raise ValidationError(str(exc), field=name) from exc
    return value


def parse_auth(value: str, name: str) -> bool:
    if value not in ("enabled", "disabled"):
        raise ValidationError(f"{name} must be 'enabled' or 'disabled', got {value!r}", field=name)
    return value == "enabled"


def parse_live_delivery(value: str, name: str) -> LiveDelivery:
    if value == "auto":
        return "auto"
    if value == "postgres":
        return "postgres"
    if value == "memory":
        return "memory"
    raise ValidationError(
        f"{name} must be 'auto', 'postgres' or 'memory', got {value!r}", field=name
    )


def parse_sqlite_synchronous(value: str, name: str) -> SqliteSynchronous:
    if value.lower() == "full":
        return "FULL"
    if value.lower() == "normal":
        return "NORMAL"
    raise ValidationError(f"{name} must be 'full' or 'normal', got {value!r}", field=name)


def parse_key_ring(value: str, name: str) -> tuple[bytes, ...]:
    """Comma-separated base64 (standard or URL-safe) keys of at least 32 bytes each, none
    degenerate (:func:`check_key_ring`)."""
    keys = []
    for position, text in enumerate(part.strip() for part in value.split(",")):
        try:
            key = base64.b64decode(text.replace("-", "+").replace("_", "/"), validate=True)
        except (binascii.Error, ValueError):
            key = b""
        if len(key) < 32:
            raise ValidationError(
                f"{name}: key {position + 1} must be base64 of at least 32 bytes "
                "(make one with: openssl rand -base64 32)",
                field=name,
            )
        keys.append(key)
    check_key_ring(tuple(keys), name)
    return tuple(keys)


_DURATION_UNITS: Final = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_duration(value: str, name: str) -> float:
    """Seconds from ``604800``, ``90s``, ``30m``, ``12h`` or ``7d`` (positive)."""
    text = value.strip().lower()
    unit = _DURATION_UNITS.get(text[-1:], 0.0)
    number_text = text[:-1] if unit else text
    try:
        number = float(number_text) * (unit or 1.0)
    except ValueError:
        number = -1.0
    if not number > 0 or number == float("inf"):
        raise ValidationError(
            f"{name} must be a positive duration such as 7d, 12h, 30m or 3600 (seconds), "
            f"got {value!r}",
            field=name,
        )
    return number


_ELICITATION_MODES: Final[Mapping[str, ElicitationMode]] = {
    "auto": "auto",
    "form": "form",
    "url": "url",
    "off": "off",
}


def parse_elicitation(value: str, name: str) -> ElicitationMode:
    mode = _ELICITATION_MODES.get(value)
    if mode is None:
        raise ValidationError(
            f"{name} must be 'auto', 'form', 'url' or 'off', got {value!r}", field=name
        )
    return mode


def _number(
    value: str,
    name: str,
    convert: Callable[[str], _Number],
    accept: Callable[[_Number], bool],
    expected: str,
) -> _Number:
    """``convert(value)`` when it converts and ``accept`` takes it; else a ValidationError
    naming ``name`` that says what was ``expected`` (the number parsers below).
    """
    try:
        number = convert(value)
    except ValueError:
        number = None
    if number is None or not accept(number):
        raise ValidationError(f"{name} must be {expected}, got {value!r}", field=name)
    return number


def parse_non_negative_int(value: str, name: str) -> int:
    return _number(value, name, int, lambda number: number >= 0, "a whole number ≥ 0")


def parse_log_format(value: str, name: str) -> LogFormat:
    if value == "json":
        return "json"
    if value == "console":
        return "console"
    raise ValidationError(f"{name} must be 'json' or 'console', got {value!r}", field=name)


def parse_positive_int(value: str, name: str) -> int:
    return _number(value, name, int, lambda number: number >= 1, "a positive integer")


def parse_port(value: str, name: str) -> int:
    """A TCP port number, 0-65535 (0: any free port, which ``clarion serve`` then names).

    Raises:
        ValidationError: not a whole number in that range (``field`` ``name``).
    """
    return _number(value, name, int, lambda port: 0 <= port <= 65535, "a port number (0-65535)")


def parse_positive_float(value: str, name: str) -> float:
    return _number(value, name, float, lambda number: number > 0, "a positive number of seconds")
