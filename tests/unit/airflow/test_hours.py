"""Hours and batches as the route DAG passes them (no Airflow import: these are plain values)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from feedrouter.airflow.hours import HourBatch, HourError, format_hour, parse_hour, to_hour


@pytest.mark.parametrize(
    "text", ["2026-11-22T16", "2026-11-22T16:00", "2026-11-22T16:00:00", "2026-11-22T17:00:00+01:00"]
)
def test_an_hour_is_read_in_utc(text: str) -> None:
    assert parse_hour(text) == datetime(2026, 11, 22, 16, tzinfo=timezone.utc)


@pytest.mark.parametrize("text", ["2026-11-22T16:30", "yesterday", "2026-11-22 16h", ""])
def test_anything_but_a_whole_hour_is_refused_with_the_expected_form(text: str) -> None:
    with pytest.raises(HourError, match="hour"):
        parse_hour(text)


def test_a_run_date_is_truncated_to_its_hour() -> None:
    assert to_hour(datetime(2026, 11, 22, 16, 59, 59)) == datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
    assert format_hour(datetime(2026, 11, 22, 16, 5, tzinfo=timezone.utc)) == "2026-11-22T16"


def test_a_batch_round_trips_through_xcom_form() -> None:
    batch = HourBatch("news", parse_hour("2026-11-22T16"))
    assert HourBatch.from_dict(batch.to_dict()) == batch
    assert batch.label == "news 2026-11-22T16"
    assert batch.end == datetime(2026, 11, 22, 17, tzinfo=timezone.utc)
