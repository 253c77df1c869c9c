"""Service settings: every setting has a ``CLARION_*`` environment variable, and many a flag of
``clarion serve``, both declared once on its :class:`Settings` field (issue #32,
:mod:`clarion.app.root.declared_settings`).

Flags win over the environment, which wins over the defaults (``interfaces.md``).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import attrs

from clarion.adapters.receipts import parse_receipt_keys
from clarion.app.root.crashpoints import CRASH_POINTS, parse_crash_point
from clarion.app.root.declared_settings import (
    Setting,
    one_of,
    read_environment,
    setting,
    setting_group,
    setting_of,
)
from clarion.app.root.setting_values import (
    MAX_NOTIFY_TIMEOUT_S,
    ElicitationMode,
    LiveDelivery,
    LogFormat,
    SmtpSecurity,
    SqliteSynchronous,
    check_key_ring,
    check_webhook_secret,
    parse_auth,
    parse_base_url,
    parse_duration,
    parse_elicitation,
    parse_host_list,
    parse_http_url,
    parse_key_ring,
    parse_live_delivery,
    parse_log_format,
    parse_non_negative_int,
    parse_notify_timeout,
    parse_outbound_allow,
    parse_port,
    parse_positive_float,
    parse_positive_int,
    parse_public_url,
    parse_smtp_security,
    parse_sqlite_synchronous,
)
from clarion.domain.errors import ValidationError
from clarion.domain.limits import Limits

__all__ = [
    "DEFAULT_DATABASE_URL",
    "MAX_NOTIFY_TIMEOUT_S",
    "ElicitationMode",
    "LiveDelivery",
    "LogFormat",
    "Settings",
    "SmtpSecurity",
    "SqliteSynchronous",
    "check_key_ring",
    "check_webhook_secret",
    "parse_auth",
    "parse_base_url",
    "parse_duration",
    "parse_elicitation",
    "parse_host_list",
    "parse_http_url",
    "parse_key_ring",
    "parse_live_delivery",
    "parse_log_format",
    "parse_non_negative_int",
    "parse_notify_timeout",
    "parse_outbound_allow",
    "parse_port",
    "parse_positive_float",
    "parse_positive_int",
    "parse_public_url",
    "parse_smtp_security",
    "parse_sqlite_synchronous",
]

DEFAULT_DATABASE_URL = "sqlite:///./clarion.db"


def _default_log_format() -> LogFormat:
    return "console" if sys.stderr.isatty() else "json"


def limit(
    env: str,
    doc: str,
    *,
    rest: str = "—",
    mcp: str = "—",
    default_doc: str = "",
    parse: Callable[[str, str], object] = parse_positive_int,
) -> Setting:
    """The declaration of one field of :class:`Limits`: its variable, what it bounds, and what
    happens over it on REST and on MCP (the docs' limits table). Its value is a positive
    integer, or positive seconds with ``parse=parse_positive_float``; its default is the
    :class:`Limits` field's."""
    return Setting(env=env, parse=parse, doc=doc, default_doc=default_doc, columns=(rest, mcp))


def _strong_ring(
    instance: object, attribute: attrs.Attribute[tuple[bytes, ...]], value: tuple[bytes, ...]
) -> None:
    check_key_ring(value, setting_of(attribute).env)


def _strong_secret(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    check_webhook_secret(value, setting_of(attribute).env)


def _receipt_keys(value: str, name: str) -> tuple[tuple[str, bytes], ...]:
    """``kid:base64`` entries, or (a value starting with ``/`` or ``.``) a file of them."""
    if value.startswith(("/", ".")):
        try:
            value = Path(value).read_text(encoding="ascii")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValidationError(f"{name}: cannot read {value}: {exc}", field=name) from None
    return parse_receipt_keys(value, name)


def _text(value: str, name: str) -> str:
    """A setting taken as written."""
    return value


def _on_off(enabled: bool) -> str:
    return "enabled" if enabled else "disabled"


def _days(seconds: float) -> str:
    return f"{seconds / 86400:g}d"


_KEY_RING = (
    "comma-separated base64, ≥ 32 bytes each and none degenerate — all zeros, one byte or a "
    "block of ≤ 4 bytes repeated"
)
_SECRET = "≥ 16 characters, not one character or a short block repeated; `openssl rand -hex 32`"


@attrs.frozen
class Settings:
    """Everything the composition root needs to build a Clarion service.

    Each field made by :func:`~clarion.app.root.declared_settings.setting` is a setting of
    ``clarion serve``: its variable, flag, parser and docs line are declared there, once, and
    :meth:`from_env`, the flags and the table in docs/operations.md (``make settings-docs``)
    are generated from it. Fields are in the order the variables are read.
    """

    database_url: str = setting(
        DEFAULT_DATABASE_URL,
        env="CLARION_DATABASE_URL",
        parse=_text,
        doc="database",
        default_doc="(created and migrated on first start)",
        flag="--database-url",
        help="database URL",
    )
    host: str = setting(
        "127.0.0.1",
        env="CLARION_HOST",
        parse=_text,
        doc="bind address",
        flag="--host",
        help="bind address",
    )
    port: int = setting(
        8765,
        env="CLARION_PORT",
        parse=parse_port,
        doc="port",
        default_doc="(`0`: any free port, named in the banner)",
        flag="--port",
        help="bind port, 0-65535; 0 = any free port",
    )
    auth_enabled: bool = setting(
        False,
        env="CLARION_AUTH",
        parse=parse_auth,
        doc="authentication",
        flag="--auth",
        choices=("enabled", "disabled"),
        help="authentication",
        show=_on_off,
    )
    resume_webhook: str = setting(
        "",
        env="CLARION_RESUME_WEBHOOK",
        parse=_text,
        doc="where detached answers go",
        accepts="a URL",
        default_doc="unset: the durable outbox",
        flag="--resume-webhook",
        help="POST detached resumes to this URL",
    )
    resume_webhook_secret: str = setting(  # signs webhook POSTs
        "",
        env="CLARION_RESUME_WEBHOOK_SECRET",
        parse=_text,
        doc="secret that signs webhook resumes",
        accepts=_SECRET,
        default_doc="unset: resumes are not signed",
        secret=True,
        validator=_strong_secret,
    )
    # argparse converts --ask-timeout (its errors are argparse's); the variable must be > 0.
    ask_timeout_s: float = setting(
        7200.0,
        env="CLARION_ASK_TIMEOUT_S",
        parse=parse_positive_float,
        doc="how long an asking agent may wait, in seconds",
        flag="--ask-timeout",
        flag_type=float,
        help="seconds an agent waits",
    )
    log_format: LogFormat = setting(
        factory=_default_log_format,
        env="CLARION_LOG_FORMAT",
        parse=parse_log_format,
        doc="log format",
        default_doc="`console` on a terminal, else `json`",
        flag="--log-format",
        choices=("json", "console"),
        help="log format",
    )
    tool_suffix: str = "_kandev"
    resume_timeout_s: float = 30.0
    progress_interval_s: float = 15.0
    # Live delivery to waiting agents: "memory" (one process), "postgres" (LISTEN/NOTIFY, several
    # processes on one PostgreSQL), or "auto" = postgres on a PostgreSQL database, else memory.
    live_delivery: LiveDelivery = setting(
        "auto",
        env="CLARION_LIVE_DELIVERY",
        parse=parse_live_delivery,
        doc="live delivery between processes",
        default_doc="(`postgres` on PostgreSQL, else `memory`; "
        "[replicas](#running-several-replicas))",
        flag="--live-delivery",
        choices=("auto", "postgres", "memory"),
        help="how answers reach waiting agents: postgres (several processes), memory (one), "
        "auto = postgres on a PostgreSQL database",
    )
    # SQLite's durability: FULL (default: a commit survives power loss) or NORMAL (faster; the
    # last commits can be lost on power loss, never corrupted).
    sqlite_synchronous: SqliteSynchronous = setting(
        "FULL",
        env="CLARION_SQLITE_SYNCHRONOUS",
        parse=parse_sqlite_synchronous,
        doc="SQLite durability",
        accepts="`full` or `normal`",
        show=str.lower,
    )
    # PostgreSQL recovery, every interval: a delivery whose process is gone (its liveness lease
    # is free, issue #28) is rolled back at once; one by a live process only once it is older
    # than the grace period (longer than any delivery can take).
    recovery_grace_s: float = setting(
        120.0,
        env="CLARION_RECOVERY_GRACE_S",
        parse=parse_positive_float,
        doc="PostgreSQL: age of an unconfirmed delivery **by a live process** (or an unrecorded "
        "one) before recovery rolls it back, in seconds; a dead process's deliveries are rolled "
        "back at the next round ([restarts and crashes]"
        "(#when-a-replica-dies-or-loses-its-database-connection))",
        default_doc="(keep it above the 35 s a delivery can take)",
    )
    recovery_interval_s: float = setting(
        2.0,
        env="CLARION_RECOVERY_INTERVAL_S",
        parse=parse_positive_float,
        doc="PostgreSQL: how often recovery runs (and the liveness lease is checked), in "
        "seconds — a bundle whose delivering process was killed is answerable again after "
        "about this long",
    )
    allowed_hosts: tuple[str, ...] = setting(  # extra Host names served besides loopback
        (),
        env="CLARION_ALLOWED_HOSTS",
        parse=parse_host_list,
        doc="extra host names served",
        accepts="comma-separated",
        default_doc="loopback names only",
        flag="--allowed-hosts",
        help="comma-separated Host names served besides loopback: name (any port) or name:port",
    )
    # Connections (clarion.app.root.serving): beyond limit_concurrency open connections, or
    # max_connections_per_client from one remote address, a new connection gets 503 (429) —
    # /healthz excepted; a connection waiting for a request head longer than header_timeout_s,
    # idle between requests longer than keep_alive_timeout_s, or whose request body is not in
    # body_timeout_s after its head (408), is closed.
    limit_concurrency: int = setting(
        1000,
        env="CLARION_LIMIT_CONCURRENCY",
        parse=parse_positive_int,
        doc="open connections served before new requests get 503 (`/healthz` excepted)",
        default_doc="(lowered to fit the open-file limit)",
        flag="--limit-concurrency",
        help="open connections before new requests get 503, /healthz excepted",
    )
    max_connections_per_client: int = setting(
        100,
        env="CLARION_MAX_CONNECTIONS_PER_CLIENT",
        parse=parse_positive_int,
        doc="open connections one remote address may hold before its new requests get 429 "
        "(`/healthz` excepted)",
        flag="--max-connections-per-client",
        help="open connections one remote address may hold before its new ones get 429",
    )
    body_timeout_s: float = setting(
        10.0,
        env="CLARION_BODY_TIMEOUT_S",
        parse=parse_positive_float,
        doc="seconds a request body may take to arrive whole, from its head (then 408)",
        flag="--body-timeout",
        help="seconds a request body may take to arrive whole, from its head; then 408",
    )
    header_timeout_s: float = setting(
        10.0,
        env="CLARION_HEADER_TIMEOUT_S",
        parse=parse_positive_float,
        doc="seconds a connection may take to send a request head",
        flag="--header-timeout",
        help="seconds a connection may take to send a request head, from when it opens or its "
        "last response ended",
    )
    keep_alive_timeout_s: float = setting(
        5.0,
        env="CLARION_KEEP_ALIVE_TIMEOUT_S",
        parse=parse_positive_float,
        doc="seconds a connection may stay idle between requests",
        flag="--keep-alive-timeout",
        help="seconds a connection may stay idle between requests",
    )
    agent_workspace: str = setting(  # where /mcp/agent creates tasks; "" = each caller's "Agents"
        "",
        env="CLARION_AGENT_WORKSPACE",
        parse=_text,
        strip=True,
        doc="where `/mcp/agent` creates agents' tasks",
        accepts="a workspace id",
        default_doc="unset: each caller's own `Agents` workspace, created on first use "
        "([MCP tools](mcp-tools.md#agent-surface-mcpagent))",
        flag="--agent-workspace",
        help="the workspace id /mcp/agent creates agents' tasks in; default: each caller's own "
        '"Agents" workspace',
    )
    # Every bound Clarion enforces (docs/operations.md#limits): one declaration per field of
    # Limits, which keeps the defaults; embedding hosts pass ``limits=Limits(...)``.
    limits: Limits = setting_group(
        Limits,
        max_title=limit(
            "CLARION_MAX_TITLE",
            "question `title`",
            rest="400 `questions[0].title is too long: 201 characters, the limit for a title is "
            "200`",
            mcp="`VALIDATION_ERROR`, same text, `field`",
        ),
        max_prompt=limit(
            "CLARION_MAX_PROMPT",
            "question `prompt`",
            rest="400, as above (`…the limit for a prompt is 2000`)",
            mcp="`VALIDATION_ERROR`",
        ),
        max_option_label=limit(
            "CLARION_MAX_OPTION_LABEL",
            "option `label`",
            rest="400 naming `questions[i].options[j].label`",
            mcp="`VALIDATION_ERROR`",
        ),
        max_option_description=limit(
            "CLARION_MAX_OPTION_DESCRIPTION",
            "option `description`",
            rest="400 naming `questions[i].options[j].description`",
            mcp="`VALIDATION_ERROR`",
        ),
        max_context=limit(
            "CLARION_MAX_CONTEXT",
            "`context` (after joining paragraphs)",
            rest="400 naming `context`",
            mcp="`VALIDATION_ERROR`",
        ),
        max_context_paragraph=limit(
            "CLARION_MAX_CONTEXT_PARAGRAPH",
            "each of `context_paragraphs` (MCP ask)",
            mcp="`VALIDATION_ERROR` naming `context_paragraphs[i]`",
        ),
        max_id=limit(
            "CLARION_MAX_ID",
            "question `id`, option `option_id`",
            rest="400 naming `questions[i].id` / `questions[i].options[j].option_id`",
            mcp="`VALIDATION_ERROR`",
        ),
        max_body_bytes=limit(
            "CLARION_MAX_BODY_BYTES",
            "request body, every route (REST, `/mcp`, `/mcp/session/…`, inbox)",
            default_doc="(1 MiB)",
            rest="413 `request body too large: the limit is 1048576 bytes "
            "(CLARION_MAX_BODY_BYTES)`",
            mcp="the same HTTP 413",
        ),
        max_active_bundles_per_session=limit(
            "CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION",
            "active bundles in one session",
            rest="429 `too many active clarification requests in this session: the limit is 10 "
            "(CLARION_MAX_ACTIVE_BUNDLES_PER_SESSION)`",
            mcp="`LIMIT_EXCEEDED`, same text, `limit`",
        ),
        max_active_bundles_per_identity=limit(
            "CLARION_MAX_ACTIVE_BUNDLES_PER_IDENTITY",
            "active bundles one identity asked",
            rest="429 `too many active clarification requests for this identity: …`",
            mcp="`LIMIT_EXCEEDED`",
        ),
        max_page_size=limit(
            "CLARION_MAX_PAGE_SIZE",
            "page size of the pending list; of the host lists (`GET /api/v1/workspaces`, "
            "`/tasks`, a session's `/messages` and `/resumes`)",
            rest="pending list: a larger `limit` is clamped to it (L10), never refused; absent: "
            "50 (L10). Host lists: 400 `limit: must be between 1 and 200 "
            "(CLARION_MAX_PAGE_SIZE), got 201` (also for 0 or less)",
            mcp="pending list: the same; `list_tasks_kandev` takes no `limit` (its input is "
            "pinned): it returns at most this many tasks, the oldest",
        ),
        max_list_bytes=limit(
            "CLARION_MAX_LIST_BYTES",
            "bytes of one page of the pending or resolved list (REST `GET …/pending`, "
            "`GET …/resolved`; MCP `list_pending_questions`)",
            default_doc="(1 MiB)",
            rest="the page stops before the bundle that would take it past this many bytes of "
            "bundle JSON (always at least one bundle, however large) and its `next_cursor` "
            "continues from there: `limit` is the most a page holds, and only an empty "
            "`next_cursor` means the end",
            mcp="the same (the MCP result carries the JSON twice: as text and as structured "
            "content)",
        ),
        default_page_size=limit(
            "CLARION_DEFAULT_PAGE_SIZE",
            "page size of the host lists when no `limit` is given",
            default_doc="(a value above the maximum acts as the maximum)",
        ),
        max_event_streams=limit(
            "CLARION_MAX_EVENT_STREAMS",
            "open event streams per identity",
            rest="429 `too many event streams: the limit is 16 per identity "
            "(CLARION_MAX_EVENT_STREAMS)`",
        ),
        max_mcp_sessions=limit(
            "CLARION_MAX_MCP_SESSIONS",
            "open legacy MCP sessions per identity, per endpoint (`/mcp`; all "
            "`/mcp/session/…` together)",
            mcp="HTTP 429 `too many MCP sessions: the limit is 100 per identity "
            "(CLARION_MAX_MCP_SESSIONS)`",
        ),
        mcp_session_idle_s=limit(
            "CLARION_MCP_SESSION_IDLE_S",
            "idle time of a legacy MCP session, seconds",
            parse=parse_positive_float,
            mcp="the session is closed; its id then answers 404 like an unknown one",
        ),
        max_login_sessions=limit(
            "CLARION_MAX_LOGIN_SESSIONS",
            "live browser sessions of one user (`POST /api/v1/auth/login`)",
            rest="a sign-in beyond it ends the user's oldest sessions (their cookies then get 401)",
        ),
        max_login_failures=limit(
            "CLARION_MAX_LOGIN_FAILURES",
            "failed sign-ins per client address or token id, within the window",
            rest="429 `too many failed logins: retry after N s` with `Retry-After: N`",
        ),
        login_failure_window_s=limit(
            "CLARION_LOGIN_FAILURE_WINDOW_S",
            "the window of failed sign-ins, seconds",
            parse=parse_positive_float,
        ),
    )
    # Crash tests only (clarion.app.root.crashpoints): SIGKILL this process right after the named
    # step of the answer path. Empty — the default — disables it.
    test_crash_after: str = setting(
        "",
        env="CLARION_TEST_CRASH_AFTER",
        parse=parse_crash_point,
        doc="crash tests only: the process kills itself with SIGKILL right after this step of "
        "the answer path, so `tests/integration/crash` can check what recovery makes of it; "
        "never set it on a real server",
        accepts=one_of(CRASH_POINTS),
        default_doc="unset",
    )
    # What the ask tool offers in the asking MCP client besides every other surface (issue
    # #31): "auto" a form where the client declared form elicitation, else a link to the
    # answer page where it declared URL elicitation; "form" forms only; "url" the link where
    # the client declared URL elicitation, else a form; "off" nothing (the plain ask).
    elicitation: ElicitationMode = setting(
        "auto",
        env="CLARION_ELICITATION",
        parse=parse_elicitation,
        doc="offer asks in the agent's own MCP client too: `auto` a form where the client "
        "declared form elicitation, else a link to the answer page where it declared URL "
        "elicitation; `form` forms only; `url` the link where declared, else a form; `off` "
        "nothing",
        default_doc="([MCP tools](mcp-tools.md#answering-in-the-asking-agents-own-client-"
        "elicitation))",
        flag="--elicitation",
        choices=("auto", "form", "url", "off"),
        help="offer asks in the asking MCP client too: auto (a form, else an answer-page link), "
        "form, url (the link where the client supports it, else a form) or off",
    )
    # A decline or cancel of an offered question faster than this is a host that could not
    # show it ("not shown": the question stays open, nothing is recorded), not a person.
    elicitation_min_human_ms: int = setting(
        250,
        env="CLARION_ELICITATION_MIN_HUMAN_MS",
        parse=parse_non_negative_int,
        strip=True,
        doc="a decline or cancel of a question offered in the agent's client faster than this "
        '(milliseconds) is a client that could not show it ("not shown": the question stays '
        "open, no rejection is recorded), not a person",
        accepts="a whole number ≥ 0",
        default_doc="([not shown](mcp-tools.md#not-shown-a-host-is-not-a-person-saying-no))",
        flag="--elicitation-min-human-ms",
        help="a decline faster than this is a client that could not show the question, not a "
        "person",
    )
    # The key ring that seals a 2026-07-28 form round's request state: the first key seals,
    # every key unseals (rotation). Empty: one random key per process, so a retry must reach
    # the process that offered the form. Replicas share one ring.
    elicitation_keys: tuple[bytes, ...] = setting(
        (),
        env="CLARION_ELICITATION_KEYS",
        parse=parse_key_ring,
        strip=True,
        secret=True,
        validator=_strong_ring,
        doc="keys that seal a 2026-07-28 form round, shared by replicas",
        accepts=f"{_KEY_RING}; the first seals",
        default_doc="unset: a random key per process ([MCP tools]"
        "(mcp-tools.md#2026-07-28-an-input_required-round-and-the-clients-retry))",
    )
    # Signed single-use answer links (e-mail): the key ring works like elicitation_keys (the
    # first key signs, every key verifies; empty: one random key per process, so links stop
    # working at a restart), and a link stays valid this long after it is made.
    answer_link_keys: tuple[bytes, ...] = setting(
        (),
        env="CLARION_ANSWER_LINK_KEYS",
        parse=parse_key_ring,
        strip=True,
        secret=True,
        validator=_strong_ring,
        doc="keys that sign answer links (e-mail), shared by replicas",
        accepts=f"{_KEY_RING}; the first signs, every one verifies",
        default_doc="unset: a random key per process — links stop working at a restart "
        "([answer links](notifications.md#answer-links))",
    )
    answer_link_ttl_s: float = setting(
        7 * 24 * 3600.0,
        env="CLARION_ANSWER_LINK_TTL",
        parse=parse_duration,
        strip=True,
        doc="how long an answer link stays valid",
        accepts="seconds, or `30m`, `12h`, `7d`",
        show=_days,
    )
    # Issue #34: the Ed25519 keys that sign receipts (docs/receipts.md). The first signs,
    # every one is published; unset: a key file beside a SQLite database, else one per process.
    receipt_keys: tuple[tuple[str, bytes], ...] = setting(
        (),
        env="CLARION_RECEIPT_KEYS",
        parse=_receipt_keys,
        strip=True,
        secret=True,
        doc="Ed25519 keys that sign receipts, shared by replicas",
        accepts="comma-separated `kid:base64` 32-byte private keys (`clarion receipts new-key`), "
        "the first signs and all are published; or the path of a file holding them",
        default_doc="unset: a key kept in `<database>.receipt-key` beside a SQLite file, else "
        "a random key per process ([receipts](receipts.md#keys-and-rotation))",
    )
    # Notifications (docs/notifications.md). The public base URL of the inbox, for links in
    # notifications; "" = http://<host>:<port> of ``clarion serve``.
    public_url: str = setting(
        "",
        env="CLARION_PUBLIC_URL",
        parse=parse_public_url,
        strip=True,
        doc="public base URL of the inbox, for links in notifications",
        default_doc="`http://<host>:<port>` ([notifications](notifications.md))",
    )
    # Signs notification webhooks like the resume webhook; "" = the resume webhook's secret.
    notify_webhook_secret: str = setting(
        "",
        env="CLARION_NOTIFY_WEBHOOK_SECRET",
        parse=_text,
        secret=True,
        validator=_strong_secret,
        doc="one secret that signs every notification webhook (instead of each route's own)",
        accepts="the same rule as `CLARION_RESUME_WEBHOOK_SECRET`",
        default_doc="`CLARION_RESUME_WEBHOOK_SECRET`; neither set: each webhook route signs "
        "with its own secret ([signature](notifications.md#signature))",
    )
    notify_poll_s: float = setting(  # how often the worker looks for due notifications
        2.0,
        env="CLARION_NOTIFY_POLL_S",
        parse=parse_positive_float,
        doc="how often the notification worker looks for due work, in seconds",
    )
    notify_max_attempts: int = setting(  # deliveries given up after this many attempts
        8,
        env="CLARION_NOTIFY_MAX_ATTEMPTS",
        parse=parse_positive_int,
        doc="notification delivery attempts before giving up",
    )
    # Issue #29 S2: each delivery attempt's whole deadline, and how many run at once.
    notify_timeout_s: float = setting(
        10.0,
        env="CLARION_NOTIFY_TIMEOUT_S",
        parse=parse_notify_timeout,
        doc="deadline of one whole notification delivery attempt, in seconds (at most 60)",
    )
    notify_concurrency: int = setting(
        8,
        env="CLARION_NOTIFY_CONCURRENCY",
        parse=parse_positive_int,
        doc="notification deliveries in progress at once",
    )
    # Issue #29 S4: the internal destinations (IP networks, addresses, host names; comma-
    # separated) notification webhooks and the resume webhook may reach; "" = none.
    outbound_allow: str = setting(
        "",
        env="CLARION_OUTBOUND_ALLOW",
        parse=parse_outbound_allow,
        strip=True,
        doc="internal destinations notification webhooks and the resume webhook may reach",
        accepts="comma-separated IP networks, addresses and host names, e.g. "
        "`127.0.0.1,::1,localhost` or `10.0.0.0/8,hooks.corp`",
        default_doc="unset: none — loopback, private, link-local and other internal addresses "
        "are refused ([outbound destinations](#outbound-destinations))",
    )
    # E-mail: no SMTP host, no e-mail channel. security: starttls | tls | none.
    smtp_host: str = setting(
        "",
        env="CLARION_SMTP_HOST",
        parse=_text,
        strip=True,
        doc="SMTP server for e-mail notifications",
        default_doc="unset: no e-mail channel",
    )
    smtp_port: int = setting(
        587,
        env="CLARION_SMTP_PORT",
        parse=parse_port,
        doc="SMTP server port",
    )
    smtp_security: SmtpSecurity = setting(
        "starttls",
        env="CLARION_SMTP_SECURITY",
        parse=parse_smtp_security,
        doc="SMTP transport security",
        accepts="`starttls`, `tls` or `none`",
    )
    smtp_username: str = setting(
        "", env="CLARION_SMTP_USERNAME", parse=_text, doc="SMTP login", default_doc="no login"
    )
    smtp_password: str = setting(
        "",
        env="CLARION_SMTP_PASSWORD",
        parse=_text,
        secret=True,
        doc="SMTP password",
    )
    smtp_from: str = setting(
        "clarion@localhost",
        env="CLARION_SMTP_FROM",
        parse=_text,
        strip=True,
        doc="sender of e-mail notifications",
    )
    # Slack (docs/slack.md): no bot token, no slack channel; no signing secret, no interaction
    # endpoint. The API URL is Slack's Web API base (tests point it at a local fake).
    slack_bot_token: str = setting(
        "",
        env="CLARION_SLACK_BOT_TOKEN",
        parse=_text,
        strip=True,
        secret=True,
        doc="Slack bot token",
        default_doc="unset: no Slack channel ([Slack](slack.md))",
    )
    slack_signing_secret: str = setting(
        "",
        env="CLARION_SLACK_SIGNING_SECRET",
        parse=_text,
        strip=True,
        secret=True,
        doc="Slack signing secret",
        default_doc="unset: no interaction endpoint ([Slack](slack.md))",
    )
    slack_api_url: str = setting(
        "https://slack.com/api/",
        env="CLARION_SLACK_API_URL",
        parse=parse_base_url,
        strip=True,
        doc="Slack Web API base URL (the operator's choice: not held to `CLARION_OUTBOUND_ALLOW`)",
    )

    @property
    def base_url(self) -> str:
        """``public_url``, else the address ``clarion serve`` listens on."""
        return self.public_url.rstrip("/") or f"http://{self.host}:{self.port}"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, /, **overrides: object) -> Settings:
        """Read the ``CLARION_*`` variables, then apply ``overrides`` (flags) that are not None.

        Raises:
            ValidationError: a variable or flag has a value that cannot be used; ``field``
                names it.
        """
        values = read_environment(cls, os.environ if environ is None else environ)
        values.update({key: value for key, value in overrides.items() if value is not None})
        return cls(**values)  # type: ignore[arg-type]
