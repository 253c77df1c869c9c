"""Service settings: every setting has a ``CLARION_*`` environment variable and a flag.

Flags win over the environment, which wins over the defaults (``interfaces.md``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Literal

import attrs

from clarion.domain.errors import ValidationError

DEFAULT_DATABASE_URL = "sqlite:///./clarion.db"
LogFormat = Literal["json", "console"]
LiveDelivery = Literal["auto", "postgres", "memory"]
ElicitationMode = Literal["auto", "off"]


def _default_log_format() -> LogFormat:
    return "console" if sys.stderr.isatty() else "json"


@attrs.frozen
class Settings:
    """Everything the composition root needs to build a Clarion service."""

    database_url: str = DEFAULT_DATABASE_URL
    host: str = "127.0.0.1"
    port: int = 8765
    auth_enabled: bool = False
    resume_webhook: str = ""
    ask_timeout_s: float = 7200.0
    log_format: LogFormat = attrs.field(factory=_default_log_format)
    tool_suffix: str = "_kandev"
    resume_timeout_s: float = 30.0
    progress_interval_s: float = 15.0
    # Live delivery to waiting agents: "memory" (one process), "postgres" (LISTEN/NOTIFY, several
    # processes on one PostgreSQL), or "auto" = postgres on a PostgreSQL database, else memory.
    live_delivery: LiveDelivery = "auto"
    allowed_hosts: tuple[str, ...] = ()  # extra Host names MCP accepts besides loopback
    # "auto": the ask tool also offers its bundle as a form to an MCP client that declared form
    # elicitation; "off": never (every client then gets exactly the plain ask).
    elicitation: ElicitationMode = "auto"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, /, **overrides: object) -> Settings:
        """Read ``CLARION_*`` variables, then apply ``overrides`` (flags) that are not None.

        Raises:
            ValidationError: a variable or flag has a value that cannot be used; ``field``
                names it.
        """
        env = os.environ if environ is None else environ
        values: dict[str, object] = {}
        if url := env.get("CLARION_DATABASE_URL"):
            values["database_url"] = url
        if host := env.get("CLARION_HOST"):
            values["host"] = host
        if port := env.get("CLARION_PORT"):
            values["port"] = _port(port, "CLARION_PORT")
        if auth := env.get("CLARION_AUTH"):
            values["auth_enabled"] = parse_auth(auth, "CLARION_AUTH")
        if webhook := env.get("CLARION_RESUME_WEBHOOK"):
            values["resume_webhook"] = webhook
        if timeout := env.get("CLARION_ASK_TIMEOUT_S"):
            values["ask_timeout_s"] = _positive_float(timeout, "CLARION_ASK_TIMEOUT_S")
        if log_format := env.get("CLARION_LOG_FORMAT"):
            values["log_format"] = parse_log_format(log_format, "CLARION_LOG_FORMAT")
        if live := env.get("CLARION_LIVE_DELIVERY"):
            values["live_delivery"] = parse_live_delivery(live, "CLARION_LIVE_DELIVERY")
        if allowed := env.get("CLARION_ALLOWED_HOSTS"):
            values["allowed_hosts"] = tuple(h.strip() for h in allowed.split(",") if h.strip())
        if elicitation := env.get("CLARION_ELICITATION"):
            values["elicitation"] = parse_elicitation(elicitation, "CLARION_ELICITATION")
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)  # type: ignore[arg-type]


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


def parse_elicitation(value: str, name: str) -> ElicitationMode:
    if value == "auto":
        return "auto"
    if value == "off":
        return "off"
    raise ValidationError(f"{name} must be 'auto' or 'off', got {value!r}", field=name)


def parse_log_format(value: str, name: str) -> LogFormat:
    if value == "json":
        return "json"
    if value == "console":
        return "console"
    raise ValidationError(f"{name} must be 'json' or 'console', got {value!r}", field=name)


def _port(value: str, name: str) -> int:
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ValidationError(f"{name} must be a port number (0-65535), got {value!r}", field=name)
    return port


def _positive_float(value: str, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise ValidationError(
            f"{name} must be a positive number of seconds, got {value!r}", field=name
        )
    return number
