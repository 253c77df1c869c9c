"""Settings: CLARION_* variables, flags over the environment, clear errors naming the setting."""

from __future__ import annotations

import pytest

from clarion.app.settings import DEFAULT_DATABASE_URL, Settings
from clarion.domain.errors import ValidationError


def test_defaults_match_the_documented_interface() -> None:
    settings = Settings.from_env({})
    assert settings.database_url == DEFAULT_DATABASE_URL == "sqlite:///./clarion.db"
    assert (settings.host, settings.port) == ("127.0.0.1", 8765)
    assert settings.auth_enabled is False
    assert settings.resume_webhook == ""
    assert settings.ask_timeout_s == 7200.0


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
        }
    )
    assert settings.database_url == "postgresql+psycopg://u@h/db"
    assert (settings.host, settings.port) == ("0.0.0.0", 9000)
    assert settings.auth_enabled is True
    assert settings.resume_webhook == "http://hook"
    assert settings.ask_timeout_s == 60.0
    assert settings.log_format == "json"
    assert settings.allowed_hosts == ("clarion.internal", "other:8080")


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
    ],
)
def test_a_bad_value_names_the_variable(name: str, value: str) -> None:
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({name: value})
    assert caught.value.field == name


def test_elicitation_is_auto_by_default_and_off_when_asked() -> None:
    assert Settings.from_env({}).elicitation == "auto"
    assert Settings.from_env({"CLARION_ELICITATION": "off"}).elicitation == "off"
    assert (
        Settings.from_env({"CLARION_ELICITATION": "off"}, elicitation="auto").elicitation == "auto"
    )
    with pytest.raises(ValidationError) as caught:
        Settings.from_env({"CLARION_ELICITATION": "on"})
    assert caught.value.field == "CLARION_ELICITATION"
