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
_Chosen = TypeVar("_Chosen")


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


def _choice(
    value: str, name: str, choices: Mapping[str, _Chosen], *, any_case: bool = False
) -> _Chosen:
    """What ``choices`` maps ``value`` (lowercased first with ``any_case``) to; else a
    ValidationError naming ``name`` that lists the accepted values (the parsers of a setting
    with a fixed set of values below)."""
    key = value.lower() if any_case else value
    if key not in choices:
        *others, last = (repr(choice) for choice in choices)
        accepted = f"{', '.join(others)} or {last}"
        raise ValidationError(f"{name} must be {accepted}, got {value!r}", field=name)
    return choices[key]


_SMTP_SECURITIES: Final[Mapping[str, SmtpSecurity]] = {
    "starttls": "starttls",
    "tls": "tls",
    "none": "none",
}


def parse_smtp_security(value: str, name: str) -> SmtpSecurity:
    return _choice(value, name, _SMTP_SECURITIES, any_case=True)


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
    return _choice(value, name, {"enabled": True, "disabled": False})


_LIVE_DELIVERIES: Final[Mapping[str, LiveDelivery]] = {
    "auto": "auto",
    "postgres": "postgres",
    "memory": "memory",
}


def parse_live_delivery(value: str, name: str) -> LiveDelivery:
    return _choice(value, name, _LIVE_DELIVERIES)


_SQLITE_SYNCHRONOUS: Final[Mapping[str, SqliteSynchronous]] = {"full": "FULL", "normal": "NORMAL"}


def parse_sqlite_synchronous(value: str, name: str) -> SqliteSynchronous:
    return _choice(value, name, _SQLITE_SYNCHRONOUS, any_case=True)


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
    return _choice(value, name, _ELICITATION_MODES)


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


_LOG_FORMATS: Final[Mapping[str, LogFormat]] = {"json": "json", "console": "console"}


def parse_log_format(value: str, name: str) -> LogFormat:
    return _choice(value, name, _LOG_FORMATS)


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
