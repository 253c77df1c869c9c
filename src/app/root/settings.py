"""Service settings: every setting has a ``CLARION_*`` environment variable and a flag.

Flags win over the environment, which wins over the defaults (``interfaces.md``).
"""

from __future__ import annotations

import base64
import binascii
import os
import sys
from collections.abc import Callable, Mapping
from typing import Final, Literal

import attrs

from clarion.app.root.crashpoints import parse_crash_point
from clarion.domain.errors import ValidationError
from clarion.domain.limits import Limits
from clarion.domain.signing import key_weakness, secret_weakness

DEFAULT_DATABASE_URL = "sqlite:///./clarion.db"
DEFAULT_ELICITATION_MIN_HUMAN_MS: Final = 250
LogFormat = Literal["json", "console"]
LiveDelivery = Literal["auto", "postgres", "memory"]
SqliteSynchronous = Literal["FULL", "NORMAL"]
ElicitationMode = Literal["auto", "form", "url", "off"]
SmtpSecurity = Literal["starttls", "tls", "none"]


def _default_log_format() -> LogFormat:
    return "console" if sys.stderr.isatty() else "json"


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


def _ring(
    name: str,
) -> Callable[[object, attrs.Attribute[tuple[bytes, ...]], tuple[bytes, ...]], None]:
    def validate(
        instance: object, attribute: attrs.Attribute[tuple[bytes, ...]], value: tuple[bytes, ...]
    ) -> None:
        check_key_ring(value, name)

    return validate


def _secret(name: str) -> Callable[[object, attrs.Attribute[str], str], None]:
    def validate(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
        check_webhook_secret(value, name)

    return validate


@attrs.frozen
class Settings:
    """Everything the composition root needs to build a Clarion service."""

    database_url: str = DEFAULT_DATABASE_URL
    host: str = "127.0.0.1"
    port: int = 8765
    auth_enabled: bool = False
    resume_webhook: str = ""
    resume_webhook_secret: str = attrs.field(  # signs webhook POSTs
        default="", repr=False, validator=_secret("CLARION_RESUME_WEBHOOK_SECRET")
    )
    ask_timeout_s: float = 7200.0
    log_format: LogFormat = attrs.field(factory=_default_log_format)
    tool_suffix: str = "_kandev"
    resume_timeout_s: float = 30.0
    progress_interval_s: float = 15.0
    # Live delivery to waiting agents: "memory" (one process), "postgres" (LISTEN/NOTIFY, several
    # processes on one PostgreSQL), or "auto" = postgres on a PostgreSQL database, else memory.
    live_delivery: LiveDelivery = "auto"
    allowed_hosts: tuple[str, ...] = ()  # extra Host names served besides loopback
    # Connections (clarion.app.root.serving): beyond limit_concurrency open connections, or
    # max_connections_per_client from one remote address, a new connection gets 503 (429) —
    # /healthz excepted; a connection waiting for a request head longer than header_timeout_s,
    # idle between requests longer than keep_alive_timeout_s, or whose request body is not in
    # body_timeout_s after its head (408), is closed.
    limit_concurrency: int = 1000
    max_connections_per_client: int = 100
    header_timeout_s: float = 10.0
    keep_alive_timeout_s: float = 5.0
    body_timeout_s: float = 10.0
    agent_workspace: str = ""  # where /mcp/agent creates tasks; "" = each caller's "Agents"
    # Every bound; each field ``name`` is read from ``CLARION_<NAME>`` (docs/operations.md).
    limits: Limits = attrs.field(factory=Limits)
    # SQLite's durability: FULL (default: a commit survives power loss) or NORMAL (faster; the
    # last commits can be lost on power loss, never corrupted).
    sqlite_synchronous: SqliteSynchronous = "FULL"
    # PostgreSQL recovery, every interval: a delivery whose process is gone (its liveness lease
    # is free, issue #28) is rolled back at once; one by a live process only once it is older
    # than the grace period (longer than any delivery can take).
    recovery_grace_s: float = 120.0
    recovery_interval_s: float = 2.0
    # Crash tests only (clarion.app.root.crashpoints): SIGKILL this process right after the named
    # step of the answer path. Empty — the default — disables it.
    test_crash_after: str = ""
    # What the ask tool offers in the asking MCP client besides every other surface (issue
    # #31): "auto" a form where the client declared form elicitation, else a link to the
    # answer page where it declared URL elicitation; "form" forms only; "url" the link where
    # the client declared URL elicitation, else a form; "off" nothing (the plain ask).
    elicitation: ElicitationMode = "auto"
    # A decline or cancel of an offered question faster than this is a host that could not
    # show it ("not shown": the question stays open, nothing is recorded), not a person.
    elicitation_min_human_ms: int = DEFAULT_ELICITATION_MIN_HUMAN_MS
    # The key ring that seals a 2026-07-28 form round's request state: the first key seals,
    # every key unseals (rotation). Empty: one random key per process, so a retry must reach
    # the process that offered the form. Replicas share one ring.
    elicitation_keys: tuple[bytes, ...] = attrs.field(
        default=(), repr=False, validator=_ring("CLARION_ELICITATION_KEYS")
    )
    # Signed single-use answer links (e-mail): the key ring works like elicitation_keys (the
    # first key signs, every key verifies; empty: one random key per process, so links stop
    # working at a restart), and a link stays valid this long after it is made.
    answer_link_keys: tuple[bytes, ...] = attrs.field(
        default=(), repr=False, validator=_ring("CLARION_ANSWER_LINK_KEYS")
    )
    answer_link_ttl_s: float = 7 * 24 * 3600.0
    # Notifications (docs/notifications.md). The public base URL of the inbox, for links in
    # notifications; "" = http://<host>:<port> of ``clarion serve``.
    public_url: str = ""
    # Signs notification webhooks like the resume webhook; "" = the resume webhook's secret.
    notify_webhook_secret: str = attrs.field(
        default="", repr=False, validator=_secret("CLARION_NOTIFY_WEBHOOK_SECRET")
    )
    notify_poll_s: float = 2.0  # how often the worker looks for due notifications
    notify_max_attempts: int = 8  # deliveries given up after this many attempts
    # Issue #29 S2: each delivery attempt's whole deadline, and how many run at once.
    notify_timeout_s: float = 10.0
    notify_concurrency: int = 8
    # Issue #29 S4: the internal destinations (IP networks, addresses, host names; comma-
    # separated) notification webhooks and the resume webhook may reach; "" = none.
    outbound_allow: str = ""
    # E-mail: no SMTP host, no e-mail channel. security: starttls | tls | none.
    smtp_host: str = ""
    smtp_port: int = 587
    smtp_security: SmtpSecurity = "starttls"
    smtp_username: str = ""
    smtp_password: str = attrs.field(default="", repr=False)
    smtp_from: str = "clarion@localhost"
    # Slack (docs/slack.md): no bot token, no slack channel; no signing secret, no interaction
    # endpoint. The API URL is Slack's Web API base (tests point it at a local fake).
    slack_bot_token: str = attrs.field(default="", repr=False)
    slack_signing_secret: str = attrs.field(default="", repr=False)
    slack_api_url: str = "https://slack.com/api/"

    @property
    def base_url(self) -> str:
        """``public_url``, else the address ``clarion serve`` listens on."""
        return self.public_url.rstrip("/") or f"http://{self.host}:{self.port}"

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
            values["port"] = parse_port(port, "CLARION_PORT")
        if auth := env.get("CLARION_AUTH"):
            values["auth_enabled"] = parse_auth(auth, "CLARION_AUTH")
        if webhook := env.get("CLARION_RESUME_WEBHOOK"):
            values["resume_webhook"] = webhook
        if secret := env.get("CLARION_RESUME_WEBHOOK_SECRET"):
            values["resume_webhook_secret"] = secret
        if timeout := env.get("CLARION_ASK_TIMEOUT_S"):
            values["ask_timeout_s"] = parse_positive_float(timeout, "CLARION_ASK_TIMEOUT_S")
        if log_format := env.get("CLARION_LOG_FORMAT"):
            values["log_format"] = parse_log_format(log_format, "CLARION_LOG_FORMAT")
        if live := env.get("CLARION_LIVE_DELIVERY"):
            values["live_delivery"] = parse_live_delivery(live, "CLARION_LIVE_DELIVERY")
        if synchronous := env.get("CLARION_SQLITE_SYNCHRONOUS"):
            values["sqlite_synchronous"] = parse_sqlite_synchronous(
                synchronous, "CLARION_SQLITE_SYNCHRONOUS"
            )
        if grace := env.get("CLARION_RECOVERY_GRACE_S"):
            values["recovery_grace_s"] = parse_positive_float(grace, "CLARION_RECOVERY_GRACE_S")
        if interval := env.get("CLARION_RECOVERY_INTERVAL_S"):
            values["recovery_interval_s"] = parse_positive_float(
                interval, "CLARION_RECOVERY_INTERVAL_S"
            )
        if allowed := env.get("CLARION_ALLOWED_HOSTS"):
            values["allowed_hosts"] = tuple(h.strip() for h in allowed.split(",") if h.strip())
        if limit := env.get("CLARION_LIMIT_CONCURRENCY"):
            values["limit_concurrency"] = parse_positive_int(limit, "CLARION_LIMIT_CONCURRENCY")
        if per_client := env.get("CLARION_MAX_CONNECTIONS_PER_CLIENT"):
            values["max_connections_per_client"] = parse_positive_int(
                per_client, "CLARION_MAX_CONNECTIONS_PER_CLIENT"
            )
        if body := env.get("CLARION_BODY_TIMEOUT_S"):
            values["body_timeout_s"] = parse_positive_float(body, "CLARION_BODY_TIMEOUT_S")
        if header := env.get("CLARION_HEADER_TIMEOUT_S"):
            values["header_timeout_s"] = parse_positive_float(header, "CLARION_HEADER_TIMEOUT_S")
        if keep_alive := env.get("CLARION_KEEP_ALIVE_TIMEOUT_S"):
            values["keep_alive_timeout_s"] = parse_positive_float(
                keep_alive, "CLARION_KEEP_ALIVE_TIMEOUT_S"
            )
        if workspace := env.get("CLARION_AGENT_WORKSPACE", "").strip():
            values["agent_workspace"] = workspace
        if limits := parse_limits(env):
            values["limits"] = Limits(**limits)  # type: ignore[arg-type]
        if crash := env.get("CLARION_TEST_CRASH_AFTER"):
            values["test_crash_after"] = parse_crash_point(crash, "CLARION_TEST_CRASH_AFTER")
        if elicitation := env.get("CLARION_ELICITATION"):
            values["elicitation"] = parse_elicitation(elicitation, "CLARION_ELICITATION")
        if human := env.get("CLARION_ELICITATION_MIN_HUMAN_MS", "").strip():
            values["elicitation_min_human_ms"] = parse_non_negative_int(
                human, "CLARION_ELICITATION_MIN_HUMAN_MS"
            )
        if keys := env.get("CLARION_ELICITATION_KEYS", "").strip():
            values["elicitation_keys"] = parse_key_ring(keys, "CLARION_ELICITATION_KEYS")
        if keys := env.get("CLARION_ANSWER_LINK_KEYS", "").strip():
            values["answer_link_keys"] = parse_key_ring(keys, "CLARION_ANSWER_LINK_KEYS")
        if ttl := env.get("CLARION_ANSWER_LINK_TTL", "").strip():
            values["answer_link_ttl_s"] = parse_duration(ttl, "CLARION_ANSWER_LINK_TTL")
        values.update(parse_notification_settings(env))
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)  # type: ignore[arg-type]


# Each Limits field and its variable (the docs' limits table lists the same names).
LIMIT_VARIABLES: Final = {
    "max_title": "CLARION_MAX_TITLE",
    "max_prompt": "CLARION_MAX_PROMPT",
    "max_option_label": "CLARION_MAX_OPTION_LABEL",
    "max_option_description": "CLARION_MAX_OPTION_DESCRIPTION",
    "max_context": "CLARION_MAX_CONTEXT",
    "max_context_paragraph": "CLARION_MAX_CONTEXT_PARAGRAPH",
    "max_id": "CLARION_MAX_ID",
    "max_body_bytes": "CLARION_MAX_BODY_BYTES",
    "max_active_bundles_per_session": "CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION",
    "max_active_bundles_per_identity": "CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY",
    "max_page_size": "CLARION_MAX_PAGE_SIZE",
    "max_list_bytes": "CLARION_MAX_LIST_BYTES",
    "default_page_size": "CLARION_DEFAULT_PAGE_SIZE",
    "max_event_streams": "CLARION_MAX_EVENT_STREAMS",
    "max_mcp_sessions": "CLARION_MAX_MCP_SESSIONS",
    "mcp_session_idle_s": "CLARION_MCP_SESSION_IDLE_S",
    "max_login_sessions": "CLARION_MAX_LOGIN_SESSIONS",
    "max_login_failures": "CLARION_MAX_LOGIN_FAILURES",
    "login_failure_window_s": "CLARION_LOGIN_FAILURE_WINDOW_S",
}


def parse_limits(env: Mapping[str, str]) -> dict[str, int | float]:
    """The :class:`Limits` fields set in ``env`` (``CLARION_MAX_PROMPT=4000`` → max_prompt).

    Raises:
        ValidationError: a value is not a positive integer (positive seconds for ``_s``).
    """
    values: dict[str, int | float] = {}
    for field, name in LIMIT_VARIABLES.items():
        raw = env.get(name)
        if not raw:
            continue
        if field.endswith("_s"):
            values[field] = parse_positive_float(raw, name)
        else:
            values[field] = parse_positive_int(raw, name)
    return values


# A delivery attempt must end well within the worker's 120 s lease on its entry.
MAX_NOTIFY_TIMEOUT_S: Final = 60.0


def parse_notification_settings(env: Mapping[str, str]) -> dict[str, object]:
    """The notification and SMTP settings set in ``env`` (docs/notifications.md).

    Raises:
        ValidationError: a value cannot be used; ``field`` names the variable.
    """
    values: dict[str, object] = {}
    if url := env.get("CLARION_PUBLIC_URL", "").strip():
        if not url.startswith(("http://", "https://")):
            raise ValidationError(
                "CLARION_PUBLIC_URL must be an http(s) URL", field="CLARION_PUBLIC_URL"
            )
        values["public_url"] = url.rstrip("/")
    if secret := env.get("CLARION_NOTIFY_WEBHOOK_SECRET"):
        values["notify_webhook_secret"] = secret
    if poll := env.get("CLARION_NOTIFY_POLL_S"):
        values["notify_poll_s"] = parse_positive_float(poll, "CLARION_NOTIFY_POLL_S")
    if attempts := env.get("CLARION_NOTIFY_MAX_ATTEMPTS"):
        values["notify_max_attempts"] = parse_positive_int(attempts, "CLARION_NOTIFY_MAX_ATTEMPTS")
    if timeout := env.get("CLARION_NOTIFY_TIMEOUT_S"):
        seconds = parse_positive_float(timeout, "CLARION_NOTIFY_TIMEOUT_S")
        values["notify_timeout_s"] = seconds
        if seconds > MAX_NOTIFY_TIMEOUT_S:
            raise ValidationError(
                f"CLARION_NOTIFY_TIMEOUT_S must be at most {MAX_NOTIFY_TIMEOUT_S:g} seconds (half "
                f"the worker's lease), got {timeout!r}",
                field="CLARION_NOTIFY_TIMEOUT_S",
            )
    if concurrency := env.get("CLARION_NOTIFY_CONCURRENCY"):
        values["notify_concurrency"] = parse_positive_int(concurrency, "CLARION_NOTIFY_CONCURRENCY")
    if allow := env.get("CLARION_OUTBOUND_ALLOW", "").strip():
        values["outbound_allow"] = parse_outbound_allow(allow, "CLARION_OUTBOUND_ALLOW")
    if host := env.get("CLARION_SMTP_HOST", "").strip():
        values["smtp_host"] = host
    if port := env.get("CLARION_SMTP_PORT"):
        values["smtp_port"] = parse_port(port, "CLARION_SMTP_PORT")
    if security := env.get("CLARION_SMTP_SECURITY"):
        if security.lower() not in ("starttls", "tls", "none"):
            raise ValidationError(
                "CLARION_SMTP_SECURITY must be 'starttls', 'tls' or 'none'",
                field="CLARION_SMTP_SECURITY",
            )
        values["smtp_security"] = security.lower()
    if user := env.get("CLARION_SMTP_USERNAME"):
        values["smtp_username"] = user
    if password := env.get("CLARION_SMTP_PASSWORD"):
        values["smtp_password"] = password
    if sender := env.get("CLARION_SMTP_FROM", "").strip():
        values["smtp_from"] = sender
    if token := env.get("CLARION_SLACK_BOT_TOKEN", "").strip():
        values["slack_bot_token"] = token
    if secret := env.get("CLARION_SLACK_SIGNING_SECRET", "").strip():
        values["slack_signing_secret"] = secret
    if api := env.get("CLARION_SLACK_API_URL", "").strip():
        if not api.startswith(("http://", "https://")):
            raise ValidationError(
                "CLARION_SLACK_API_URL must be an http(s) URL", field="CLARION_SLACK_API_URL"
            )
        values["slack_api_url"] = api if api.endswith("/") else api + "/"
    return values


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


def parse_non_negative_int(value: str, name: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = -1
    if number < 0:
        raise ValidationError(f"{name} must be a whole number ≥ 0, got {value!r}", field=name)
    return number


def parse_log_format(value: str, name: str) -> LogFormat:
    if value == "json":
        return "json"
    if value == "console":
        return "console"
    raise ValidationError(f"{name} must be 'json' or 'console', got {value!r}", field=name)


def parse_positive_int(value: str, name: str) -> int:
    try:
        number = int(value)
    except ValueError:
        number = 0
    if number < 1:
        raise ValidationError(f"{name} must be a positive integer, got {value!r}", field=name)
    return number


def parse_port(value: str, name: str) -> int:
    """A TCP port number, 0-65535 (0: any free port, which ``clarion serve`` then names).

    Raises:
        ValidationError: not a whole number in that range (``field`` ``name``).
    """
    try:
        port = int(value)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise ValidationError(f"{name} must be a port number (0-65535), got {value!r}", field=name)
    return port


def parse_positive_float(value: str, name: str) -> float:
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise ValidationError(
            f"{name} must be a positive number of seconds, got {value!r}", field=name
        )
    return number
