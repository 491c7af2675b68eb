"""The adapter's environment: connection ids and the input policy (no Airflow import)."""

from __future__ import annotations

import re
from datetime import timedelta

from feedrouter.airflow.hours import HOUR_PATTERN
from feedrouter.airflow.settings import Connections, InputPolicy, catalog_poll_seconds


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
