"""The adapter's settings: connection ids, the input policy, the [feedrouter] Airflow config section."""

from __future__ import annotations

import re
from configparser import ConfigParser
from datetime import timedelta

import pytest

from feedrouter.airflow.hours import HOUR_PATTERN
from feedrouter.airflow.settings import (
    Connections,
    InputPolicy,
    airflow_environment,
    airflow_settings,
    catalog_poll_seconds,
)
from feedrouter.errors import SettingsError


def test_unset_connection_ids_mean_the_library_defaults() -> None:
    assert Connections.from_env({}) == Connections(None, None, None, None)


def test_the_ui_reads_through_the_catalog_connection_unless_told_otherwise() -> None:
    env = {"FEEDROUTER_CATALOG_CONN_ID": "cat", "FEEDROUTER_S3_CONN_ID": "s3"}
    assert Connections.from_env(env) == Connections(catalog="cat", ui_catalog="cat", s3="s3")
    env["FEEDROUTER_UI_CATALOG_CONN_ID"] = "cat_ro"
    assert Connections.from_env(env).ui_catalog == "cat_ro"


def test_the_input_policy_defaults_and_overrides() -> None:
    assert InputPolicy.from_env({}) == InputPolicy(None, timedelta(minutes=10), timedelta(hours=6))
    env = {"FEEDROUTER_INPUT_MARKER": "_SUCCESS", "FEEDROUTER_INPUT_GRACE": "0"}
    env["FEEDROUTER_INPUT_DEADLINE"] = "90"
    assert InputPolicy.from_env(env) == InputPolicy("_SUCCESS", timedelta(0), timedelta(minutes=90))
    assert catalog_poll_seconds({}) == 30


def test_the_trigger_form_accepts_exactly_the_hours_the_dag_parses() -> None:
    form = re.compile(f"^$|{HOUR_PATTERN}")
    assert all(form.match(text) for text in ["", "2026-11-22T16", "2026-11-22T16:00:00"])
    assert not any(form.match(text) for text in ["2026-11-22", "2026-11-22T16:30", "16"])


def _config(text: str) -> ConfigParser:
    from airflow.configuration import AirflowConfigParser

    config = AirflowConfigParser()
    config.read_string(text)
    return config


def test_the_airflow_config_section_supplies_settings() -> None:
    config = _config("[feedrouter]\ninput_marker = _SUCCESS\ns3_read_timeout = 12\n")
    settings = airflow_settings({}, config)
    assert settings.input_marker == "_SUCCESS" and settings.s3_read_timeout == 12.0


def test_the_environment_wins_over_the_airflow_config() -> None:
    config = _config("[feedrouter]\ninput_grace = 5\n")
    assert airflow_settings({"FEEDROUTER_INPUT_GRACE": "7"}, config).input_grace == timedelta(minutes=7)


def test_airflow_environment_variables_fill_the_section() -> None:
    env = {"AIRFLOW__FEEDROUTER__SPARK_CONN_ID": "spark_prod"}
    assert airflow_settings(env, _config("")).spark_conn_id == "spark_prod"
    assert airflow_environment(env, _config(""))["FEEDROUTER_SPARK_CONN_ID"] == "spark_prod"


def test_a_bad_config_value_fails_naming_the_option() -> None:
    with pytest.raises(SettingsError) as caught:
        airflow_settings({}, _config("[feedrouter]\ns3_read_timeout = soon\n"))
    message = str(caught.value)
    assert caught.value.code == "FR700"
    named = "[feedrouter] s3_read_timeout (airflow.cfg or AIRFLOW__FEEDROUTER__S3_READ_TIMEOUT)='soon'"
    assert named in message


def test_a_bad_environment_value_fails_naming_the_variable() -> None:
    with pytest.raises(SettingsError, match=r"FEEDROUTER_CATALOG_POLL='0': must be greater than 0"):
        airflow_settings({"FEEDROUTER_CATALOG_POLL": "0"}, _config(""))


def test_an_unknown_config_option_is_refused() -> None:
    with pytest.raises(SettingsError, match=r"\[feedrouter\] s3_read_timout: not a feedrouter setting"):
        airflow_settings({}, _config("[feedrouter]\ns3_read_timout = 3\n"))
    with pytest.raises(SettingsError, match=r"input_gracee: not a feedrouter setting"):
        airflow_settings({"AIRFLOW__FEEDROUTER__INPUT_GRACEE": "3"}, _config(""))


def test_the_process_config_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW__FEEDROUTER__INPUT_MARKER", "_DONE")
    monkeypatch.delenv("FEEDROUTER_INPUT_MARKER", raising=False)
    assert airflow_settings().input_marker == "_DONE"
    assert InputPolicy.from_env().marker == "_DONE"
