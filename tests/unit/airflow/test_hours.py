"""Batches as the route DAG passes them (no Airflow import: these are plain values). Reading and
writing the hour itself is tested in tests/unit/test_hours.py."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from feedrouter import hours
from feedrouter.airflow.hours import HourBatch, HourError, format_hour, parse_hour, to_hour


def test_the_dag_files_see_the_one_hour_module() -> None:
    assert (parse_hour, to_hour, format_hour, HourError) == (
        hours.parse_hour,
        hours.to_hour,
        hours.format_hour,
        hours.HourError,
    )


def test_a_batch_round_trips_through_xcom_form() -> None:
    batch = HourBatch("news", parse_hour("2026-11-22T16"))
    assert HourBatch.from_dict(batch.to_dict()) == batch
    assert batch.label == "news 2026-11-22T16"
    assert batch.end == datetime(2026, 11, 22, 17, tzinfo=timezone.utc)


def test_a_batch_with_a_date_for_an_hour_is_refused() -> None:
    with pytest.raises(HourError, match="'2026-11-23' is not an hour"):
        HourBatch.from_dict({"feed": "news", "hour": "2026-11-23"})
