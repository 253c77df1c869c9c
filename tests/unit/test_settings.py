"""Settings: CLARION_* variables, flags over the environment, clear errors naming the setting."""

from __future__ import annotations

import base64

import attrs
import pytest

from clarion.app.root.declared_settings import declared_settings, setting_group
from clarion.app.root.settings import DEFAULT_DATABASE_URL, Settings
from clarion.domain.errors import ValidationError
from clarion.domain.limits import Limits


def test_defaults_match_the_documented_interface() -> None:
    settings = Settings.from_env({})
    assert settings.database_url == DEFAULT_DATABASE_URL == "sqlite:///./clarion.db"
    assert (settings.host, settings.port) == ("127.0.0.1", 8765)
    assert settings.auth_enabled is False
    assert settings.resume_webhook == ""
    assert settings.ask_timeout_s == 7200.0
    assert settings.limit_concurrency == 1000
    assert (settings.header_timeout_s, settings.keep_alive_timeout_s) == (10.0, 5.0)
    assert settings.agent_workspace == ""
    # #29 S1: a body deadline and a per-client connection limit, on by default.
    assert (settings.body_timeout_s, settings.max_connections_per_client) == (10.0, 100)


def test_environment_variables_are_read() -> None:
    settings = Settings.from_env(
        {
            "CLARION_DATABASE_URL": "postgresql+psycopg://u@h/db",
            "CLARION_HOST": "0.0.0.0",
            "CLARION_PORT": "9000",
            "CLARION_AUTH": "enabled",
            "CLARION_RESUME_WEBHOOK": "http://hook",
            "CLARION_ASK_TIMEOUT_S": "60",
            "CLARION_LOG_FORMAT": "json",
            "CLARION_ALLOWED_HOSTS": "clarion.internal, other:8080",
            "CLARION_LIMIT_CONCURRENCY": "250",
            "CLARION_HEADER_TIMEOUT_S": "2.5",
            "CLARION_KEEP_ALIVE_TIMEOUT_S": "30",
            "CLARION_AGENT_WORKSPACE": " ws-1 ",
            "CLARION_BODY_TIMEOUT_S": "7.5",
            "CLARION_MAX_CONNECTIONS_PER_CLIENT": "40",
        }
    )
    assert settings.database_url == "postgresql+psycopg://u@h/db"
    assert (settings.host, settings.port) == ("0.0.0.0", 9000)
    assert settings.auth_enabled is True
    assert settings.resume_webhook == "http://hook"
    assert settings.ask_timeout_s == 60.0
    assert settings.log_format == "json"
    assert settings.allowed_hosts == ("clarion.internal", "other:8080")
    assert settings.limit_concurrency == 250
    assert (settings.header_timeout_s, settings.keep_alive_timeout_s) == (2.5, 30.0)
    assert settings.agent_workspace == "ws-1"
    assert (settings.body_timeout_s, settings.max_connections_per_client) == (7.5, 40)


def test_flags_win_over_the_environment_and_none_means_not_given() -> None:
    settings = Settings.from_env({"CLARION_PORT": "9000"}, port=9100, host=None)
    assert settings.port == 9100
    assert settings.host == "127.0.0.1"


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLARION_PORT", "http"),
        ("CLARION_PORT", "70000"),
        ("CLARION_AUTH", "yes"),
        ("CLARION_ASK_TIMEOUT_S", "-1"),
        ("CLARION_ASK_TIMEOUT_S", "soon"),
        ("CLARION_LOG_FORMAT", "xml"),
        ("CLARION_LIMIT_CONCURRENCY", "0"),
        ("CLARION_LIMIT_CONCURRENCY", "many"),
        ("CLARION_HEADER_TIMEOUT_S", "0"),
        ("CLARION_KEEP_ALIVE_TIMEOUT_S", "-5"),
        ("CLARION_BODY_TIMEOUT_S", "0"),
        ("CLARION_BODY_TIMEOUT_S", "soon"),
        ("CLARION_MAX_CONNECTIONS_PER_CLIENT", "0"),
        ("CLARION_MAX_CONNECTIONS_PER_CLIENT", "lots"),
    ],
)
def test_a_bad_value_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({name: value})
    assert caught.value.field == name


def test_every_limit_has_a_variable_and_defaults_are_the_documented_ones() -> None:
    """#32: each Limits field is one declared setting, ``CLARION_<FIELD>``, in field order."""
    declared = list(declared_settings(Settings, "limits"))
    assert [limit.name for limit in declared] == [field.name for field in attrs.fields(Limits)]
    assert all(limit.setting.env == f"CLARION_{limit.name.upper()}" for limit in declared)
    assert Settings.from_env({}).limits == Limits()
    assert Limits().max_body_bytes == 1024 * 1024


def test_a_group_must_declare_every_field_once_in_order() -> None:
    """#32: a limit added to Limits without its declaration fails at import, not silently."""
    members = {d.name: d.setting for d in declared_settings(Settings, "limits")}
    missing = dict(list(members.items())[1:])
    with pytest.raises(ValueError, match="declare every field of Limits once, in its order"):
        setting_group(Limits, **missing)
    swapped = dict(reversed(list(members.items())))
    with pytest.raises(ValueError, match="in its order"):
        setting_group(Limits, **swapped)


def test_limit_variables_are_read_and_a_bad_one_names_itself() -> None:
    settings = Settings.from_env(
        {"CLARION_MAX_PROMPT": "4000", "CLARION_MCP_SESSION_IDLE_S": "0.5"}
    )
    assert settings.limits == Limits(max_prompt=4000, mcp_session_idle_s=0.5)
    for value in ("0", "-3", "many", "1.5"):
        with pytest.raises(ValidationError) as error:
            Settings.from_env({"CLARION_MAX_EVENT_STREAMS": value})
        assert error.value.field == "CLARION_MAX_EVENT_STREAMS"
        assert error.value.message == (
            f"CLARION_MAX_EVENT_STREAMS must be a positive integer, got {value!r}"
        )


def test_elicitation_is_auto_by_default_and_off_when_asked() -> None:
    assert Settings.from_env({}).elicitation == "auto"
    assert Settings.from_env({"CLARION_ELICITATION": "off"}).elicitation == "off"
    assert (
        Settings.from_env({"CLARION_ELICITATION": "off"}, elicitation="auto").elicitation == "auto"
    )
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"CLARION_ELICITATION": "on"})
    assert caught.value.field == "CLARION_ELICITATION"


@pytest.mark.parametrize("mode", ["auto", "form", "url", "off"])
def test_every_elicitation_mode_is_read(mode: str) -> None:
    """Issue #31: forms only, links preferred, or a form else a link (auto)."""
    assert Settings.from_env({"CLARION_ELICITATION": mode}).elicitation == mode


def test_the_not_shown_threshold_is_250_ms_by_default_and_a_bad_value_names_the_variable() -> None:
    assert Settings.from_env({}).elicitation_min_human_ms == 250
    read = Settings.from_env({"CLARION_ELICITATION_MIN_HUMAN_MS": "0"})
    assert read.elicitation_min_human_ms == 0
    for bad in ("-1", "0.5", "soon"):
        with pytest.raises(ValidationError) as caught:
            Settings.from_env({"CLARION_ELICITATION_MIN_HUMAN_MS": bad})
        assert caught.value.field == "CLARION_ELICITATION_MIN_HUMAN_MS"
        assert "CLARION_ELICITATION_MIN_HUMAN_MS must be a whole number" in str(caught.value)


def test_the_elicitation_key_ring_is_read_from_base64_and_a_short_key_names_the_variable() -> None:
    first, second = bytes(range(32)), bytes(range(1, 41))
    ring = ",".join([base64.b64encode(first).decode(), base64.urlsafe_b64encode(second).decode()])
    settings = Settings.from_env({"CLARION_ELICITATION_KEYS": ring})
    assert settings.elicitation_keys == (first, second)
    assert "elicitation_keys" not in repr(settings)
    assert Settings.from_env({}).elicitation_keys == ()
    for bad in ("not base64!", base64.b64encode(b"short").decode()):
        with pytest.raises(ValidationError) as caught:
            Settings.from_env({"CLARION_ELICITATION_KEYS": bad})
        assert caught.value.field == "CLARION_ELICITATION_KEYS"


def test_the_answer_link_key_ring_is_read_like_the_elicitation_ring() -> None:
    first, second = bytes(range(32)), bytes(range(1, 41))
    ring = ",".join([base64.b64encode(first).decode(), base64.urlsafe_b64encode(second).decode()])
    settings = Settings.from_env({"CLARION_ANSWER_LINK_KEYS": ring})
    assert settings.answer_link_keys == (first, second)
    assert "answer_link_keys" not in repr(settings)
    assert Settings.from_env({}).answer_link_keys == ()
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"CLARION_ANSWER_LINK_KEYS": base64.b64encode(b"short").decode()})
    assert caught.value.field == "CLARION_ANSWER_LINK_KEYS"


WEAK_KEYS = [bytes(32), b"\xff" * 48, b"ab" * 16, b"abc" * 11, b"abcd" * 8]


@pytest.mark.parametrize("name", ["CLARION_ANSWER_LINK_KEYS", "CLARION_ELICITATION_KEYS"])
@pytest.mark.parametrize("weak", WEAK_KEYS)
def test_a_degenerate_key_is_refused_naming_the_ring(name: str, weak: bytes) -> None:
    """#29: an all-zero key (or any one byte or short block repeated) signs nothing; the ring
    is refused with one error naming the variable, wherever the key sits in it."""
    good = base64.b64encode(bytes(range(32))).decode()
    ring = f"{good},{base64.b64encode(weak).decode()}"
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({name: ring})
    assert caught.value.field == name
    assert "key 2" in str(caught.value)
    field = "answer_link_keys" if name == "CLARION_ANSWER_LINK_KEYS" else "elicitation_keys"
    with pytest.raises(ValidationError) as direct:
        Settings(**{field: (weak,)})  # type: ignore[arg-type]
    assert direct.value.field == name


@pytest.mark.parametrize("name", ["CLARION_RESUME_WEBHOOK_SECRET", "CLARION_NOTIFY_WEBHOOK_SECRET"])
@pytest.mark.parametrize("weak", ["s3cret", "0" * 32, "ab" * 12, "short-but-real"])
def test_a_short_or_degenerate_webhook_secret_is_refused_naming_it(name: str, weak: str) -> None:
    """#29: webhook signing secrets must be at least 16 characters and not one character or a
    short block repeated."""
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({name: weak})
    assert caught.value.field == name
    secret = "kq3-Vz8_pW1x-Lr7T0"
    field = name.removeprefix("CLARION_").lower()
    assert getattr(Settings.from_env({name: secret}), field) == secret


@pytest.mark.parametrize(
    ("text", "seconds"),
    [("7d", 604800.0), ("12h", 43200.0), ("30m", 1800.0), ("90s", 90.0), ("3600", 3600.0)],
)
def test_the_answer_link_lifetime_takes_a_duration(text: str, seconds: float) -> None:
    assert Settings.from_env({"CLARION_ANSWER_LINK_TTL": text}).answer_link_ttl_s == seconds
    assert Settings.from_env({}).answer_link_ttl_s == 7 * 86400.0


@pytest.mark.parametrize("text", ["0", "-1d", "soon", "d", "1e999", "nan"])
def test_a_bad_answer_link_lifetime_names_the_variable(text: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"CLARION_ANSWER_LINK_TTL": text})
    assert caught.value.field == "CLARION_ANSWER_LINK_TTL"


def test_notification_settings_are_read_and_links_default_to_the_served_address() -> None:
    """Issue #17: CLARION_PUBLIC_URL, the notification worker and SMTP settings."""
    assert Settings(port=9000).base_url == "http://127.0.0.1:9000"
    settings = Settings.from_env(
        {
            "CLARION_PUBLIC_URL": "https://clarion.example.com/",
            "CLARION_NOTIFY_WEBHOOK_SECRET": "a-notify-secret-of-sorts",
            "CLARION_NOTIFY_POLL_S": "0.5",
            "CLARION_NOTIFY_MAX_ATTEMPTS": "3",
            "CLARION_SMTP_HOST": "smtp.example.com",
            "CLARION_SMTP_PORT": "465",
            "CLARION_SMTP_SECURITY": "TLS",
            "CLARION_SMTP_USERNAME": "clarion",
            "CLARION_SMTP_PASSWORD": "pw",
            "CLARION_SMTP_FROM": "questions@example.com",
        }
    )
    assert settings.base_url == "https://clarion.example.com"
    assert (settings.notify_poll_s, settings.notify_max_attempts) == (0.5, 3)
    assert (settings.smtp_host, settings.smtp_port, settings.smtp_security) == (
        "smtp.example.com",
        465,
        "tls",
    )
    assert (settings.smtp_username, settings.smtp_from) == ("clarion", "questions@example.com")
    assert "pw" not in repr(settings)
    assert "'s'" not in repr(settings)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLARION_PUBLIC_URL", "clarion.example.com"),
        ("CLARION_SMTP_SECURITY", "ssl"),
        ("CLARION_SMTP_PORT", "smtp"),
        ("CLARION_NOTIFY_MAX_ATTEMPTS", "0"),
    ],
)
def test_a_bad_notification_setting_names_its_variable(name: str, value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({name: value})
    assert caught.value.field == name


def test_outbound_and_delivery_settings_are_read() -> None:
    """#29 S2, S4: the delivery deadline, the concurrency and the internal destinations the
    operator allows."""
    settings = Settings.from_env(
        {
            "CLARION_NOTIFY_TIMEOUT_S": "5",
            "CLARION_NOTIFY_CONCURRENCY": "3",
            "CLARION_OUTBOUND_ALLOW": "127.0.0.1, 10.0.0.0/8, hooks.internal",
        }
    )
    assert (settings.notify_timeout_s, settings.notify_concurrency) == (5.0, 3)
    assert settings.outbound_allow == "127.0.0.1, 10.0.0.0/8, hooks.internal"
    assert Settings.from_env({}).outbound_allow == ""  # nothing internal by default


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("CLARION_OUTBOUND_ALLOW", "127.0.0.1,not a host"),
        ("CLARION_OUTBOUND_ALLOW", "10.0.0.0/40"),
        ("CLARION_NOTIFY_TIMEOUT_S", "0"),
        ("CLARION_NOTIFY_TIMEOUT_S", "61"),
        ("CLARION_NOTIFY_CONCURRENCY", "0"),
    ],
)
def test_bad_outbound_settings_name_the_setting(name: str, value: str) -> None:
    with pytest.raises(ValidationError, match=name) as caught:
        Settings.from_env({name: value})
    assert caught.value.field == name


def test_a_resume_webhook_on_an_internal_address_needs_the_operator_to_allow_it() -> None:
    """#29 S4: start-up refuses it, naming the setting, unless CLARION_OUTBOUND_ALLOW allows
    it."""
    from clarion.app.root.compose import build_clarion

    loopback = Settings(database_url="memory://", resume_webhook="http://127.0.0.1:9/resume")
    with pytest.raises(ValidationError, match="CLARION_OUTBOUND_ALLOW") as caught:
        build_clarion(loopback)
    assert caught.value.field == "CLARION_RESUME_WEBHOOK"
    build_clarion(attrs.evolve(loopback, outbound_allow="127.0.0.1")).close()


def test_a_resume_webhook_named_localhost_is_refused_at_start_up() -> None:
    """#29 S4: the start-up check resolves a name, so ``localhost`` is caught too."""
    from clarion.app.root.compose import build_clarion

    settings = Settings(database_url="memory://", resume_webhook="http://localhost:9/resume")
    with pytest.raises(ValidationError, match="CLARION_RESUME_WEBHOOK"):
        build_clarion(settings)
    allowed = attrs.evolve(settings, outbound_allow="127.0.0.1,::1,localhost")
    build_clarion(allowed).close()


def test_only_a_group_field_has_members() -> None:
    with pytest.raises(LookupError, match="port is not a group of settings"):
        list(declared_settings(Settings, "port"))
