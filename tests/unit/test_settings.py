"""The typed settings object: defaults, parsing, and errors that name the setting."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest

from feedrouter.errors import SettingsError
from feedrouter.settings import env_name, load_settings


def test_defaults_match_the_documented_ones() -> None:
    settings = load_settings({"XDG_STATE_HOME": "/state"})
    assert settings.home == Path("/state/feedrouter")
    assert settings.database_url is None and settings.plans_uri is None
    assert (settings.s3_connect_timeout, settings.s3_read_timeout, settings.s3_max_attempts) == (5.0, 30.0, 5)
    assert settings.input_grace == timedelta(minutes=10)
    assert settings.input_deadline == timedelta(hours=6)
    assert settings.catalog_poll == timedelta(seconds=30)
    assert settings.route_start == date(2026, 11, 1)
    assert settings.log_format == "text"
    assert settings.join_engine == "partitioned"


def test_a_relative_xdg_state_home_is_ignored() -> None:
    assert load_settings({"XDG_STATE_HOME": "state"}).home == Path.home() / ".local/state/feedrouter"


def test_environment_values_are_parsed() -> None:
    settings = load_settings(
        {
            "FEEDROUTER_HOME": "/srv/feedrouter",
            "FEEDROUTER_INPUT_GRACE": "0",
            "FEEDROUTER_INPUT_DEADLINE": "90",
            "FEEDROUTER_CATALOG_POLL": "2.5",
            "FEEDROUTER_S3_MAX_ATTEMPTS": "3",
            "FEEDROUTER_ROUTE_START": "2026-01-02",
            "FEEDROUTER_LOG_FORMAT": "json",
            "FEEDROUTER_JOIN_ENGINE": "python",
        }
    )
    assert settings.home == Path("/srv/feedrouter")
    assert settings.input_grace == timedelta(0)
    assert settings.input_deadline == timedelta(minutes=90)
    assert settings.catalog_poll == timedelta(seconds=2.5)
    assert settings.s3_max_attempts == 3
    assert settings.route_start == date(2026, 1, 2)
    assert settings.log_format == "json"
    assert settings.join_engine == "python"


def test_an_empty_variable_counts_as_unset() -> None:
    settings = load_settings({"FEEDROUTER_S3_READ_TIMEOUT": "", "FEEDROUTER_SPARK_MASTER": ""})
    assert settings.s3_read_timeout == 30.0 and settings.spark_master is None


def test_the_ui_connection_defaults_to_the_catalog_connection() -> None:
    assert load_settings({"FEEDROUTER_CATALOG_CONN_ID": "cat"}).ui_catalog_conn_id == "cat"
    both = {"FEEDROUTER_CATALOG_CONN_ID": "cat", "FEEDROUTER_UI_CATALOG_CONN_ID": "ro"}
    assert load_settings(both).ui_catalog_conn_id == "ro"


def test_overrides_win_and_none_overrides_are_ignored() -> None:
    settings = load_settings({"FEEDROUTER_S3_CONN_ID": "env"}, s3_conn_id="arg", spark_conn_id=None)
    assert settings.s3_conn_id == "arg" and settings.spark_conn_id is None


def test_settings_are_frozen() -> None:
    settings = load_settings({})
    with pytest.raises(Exception, match="frozen"):
        settings.s3_read_timeout = 1.0  # type: ignore[misc]


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("FEEDROUTER_S3_READ_TIMEOUT", "soon", "valid number"),
        ("FEEDROUTER_S3_READ_TIMEOUT", "0", "greater than 0"),
        ("FEEDROUTER_S3_MAX_ATTEMPTS", "2.5", "valid integer"),
        ("FEEDROUTER_HOME", "relative/dir", "relative path"),
        ("FEEDROUTER_INPUT_GRACE", "-1", "negative"),
        ("FEEDROUTER_INPUT_DEADLINE", "later", "number of minutes"),
        ("FEEDROUTER_CATALOG_POLL", "0", "greater than 0"),
        ("FEEDROUTER_ROUTE_START", "November", "valid date"),
        ("FEEDROUTER_LOG_FORMAT", "xml", "'text' or 'json'"),
        ("FEEDROUTER_S3_ADDRESSING_STYLE", "sideways", "'path', 'virtual' or 'auto'"),
        ("FEEDROUTER_JOIN_ENGINE", "flink", "'partitioned', 'spark' or 'python'"),
    ],
)
def test_an_invalid_value_fails_with_the_setting_name(name: str, value: str, problem: str) -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({name: value})
    assert caught.value.code == "FR700"
    assert f"{name}={value!r}" in str(caught.value)
    assert problem in str(caught.value)


def test_every_invalid_value_is_reported_at_once() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"FEEDROUTER_S3_READ_TIMEOUT": "x", "FEEDROUTER_INPUT_GRACE": "y"})
    assert "FEEDROUTER_S3_READ_TIMEOUT" in str(caught.value) and "FEEDROUTER_INPUT_GRACE" in str(caught.value)


def test_a_database_url_is_never_repeated_in_an_error() -> None:
    with pytest.raises(SettingsError) as caught:
        load_settings({"FEEDROUTER_DATABASE_URL": "postgresql://u:hunter2@db/x"}, database_url=42)
    assert "hunter2" not in str(caught.value) and "42" not in str(caught.value)
    assert "FEEDROUTER_DATABASE_URL" in str(caught.value)


def test_origins_name_where_a_value_came_from() -> None:
    origins = {"s3_read_timeout": "[feedrouter] s3_read_timeout (Airflow config)"}
    with pytest.raises(SettingsError, match=r"\[feedrouter\] s3_read_timeout \(Airflow config\)='x'"):
        load_settings({"FEEDROUTER_S3_READ_TIMEOUT": "x"}, origins=origins)


def test_an_unknown_override_is_refused() -> None:
    with pytest.raises(SettingsError, match="s3_timeout: not a feedrouter setting"):
        load_settings({}, s3_timeout=3)


def test_the_process_environment_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEEDROUTER_SPARK_MASTER", "local[3]")
    assert load_settings().spark_master == "local[3]"
    assert load_settings({}).spark_master is None


def test_env_name() -> None:
    assert env_name("s3_read_timeout") == "FEEDROUTER_S3_READ_TIMEOUT"
