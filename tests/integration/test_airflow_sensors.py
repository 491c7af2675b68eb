"""The input sensor on moto's S3 server: reschedule and deferrable modes, grace, marker, deadline."""

from __future__ import annotations

import asyncio
import importlib.util
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Engine, text

from tests.integration.airflow_support import *  # noqa: F403 (fixtures; configures Airflow)
from tests.integration.rows import WIRE_DTD, add_dtd

pytestmark = pytest.mark.integration

HOUR = datetime(2026, 11, 1, 10, tzinfo=timezone.utc)
BATCH = {"feed": "wire", "hour": "2026-11-01T10"}
KEYS = "input/wire/dt=2026-11-01/hour=10"


@pytest.fixture
def wire(catalog: Engine, feedrouter_conns: dict[str, str]) -> dict[str, str]:
    """Feed wire reading s3://<bucket>/input/wire, with two messages of the hour there."""
    from feedrouter.airflow.hooks import s3_client

    bucket = feedrouter_conns["bucket"]
    with catalog.begin() as conn:
        add_dtd(conn, "wire", WIRE_DTD)
        conn.execute(
            text(
                "INSERT INTO feedrouter.feeds (name, input_prefix, dtd_id)"
                " SELECT 'wire', :p, id FROM feedrouter.dtds WHERE name = 'wire'"
            ),
            {"p": f"s3://{bucket}/input/wire"},
        )
    for i in range(2):
        s3_client("feedrouter_s3").put_object(Bucket=bucket, Key=f"{KEYS}/msg-{i}.xml", Body=b"<nitf/>")
    return feedrouter_conns


def _policy(grace: timedelta = timedelta(0), deadline: timedelta = timedelta(days=9999)) -> Any:
    from feedrouter.airflow.settings import InputPolicy

    return InputPolicy("_SUCCESS", grace=grace, deadline=deadline)


def _sensor(**kwargs: Any) -> Any:
    from feedrouter.airflow.sensors import HourInputSensor

    return HourInputSensor(task_id="wait", batch=BATCH, deferrable=True, poke_interval=7, **kwargs)


def _deferral(sensor: Any) -> Any:
    from airflow.sdk.exceptions import TaskDeferred

    with pytest.raises(TaskDeferred) as caught:
        sensor.check({})
    return caught.value


def _mark(wire: dict[str, str]) -> None:
    from feedrouter.airflow.hooks import s3_client

    s3_client("feedrouter_s3").put_object(Bucket=wire["bucket"], Key=f"{KEYS}/_SUCCESS", Body=b"")


def test_deferrable_waits_out_the_grace_period_in_the_triggerer(wire: dict[str, str]) -> None:
    from airflow.providers.standard.triggers.temporal import DateTimeTrigger

    deferred = _deferral(_sensor(policy=_policy(grace=timedelta(days=9999))))
    assert isinstance(deferred.trigger, DateTimeTrigger) and deferred.method_name == "check"
    assert deferred.trigger.moment == HOUR + timedelta(hours=1) + timedelta(days=9999)


def test_deferrable_completes_at_once_when_the_marker_is_there(wire: dict[str, str]) -> None:
    _mark(wire)
    prefix = f"s3://{wire['bucket']}/{KEYS}/"
    assert _sensor(policy=_policy()).check({}) == {"prefix": prefix, "objects": 2}


@pytest.mark.skipif(importlib.util.find_spec("aiobotocore") is None, reason="aiobotocore is not installed")
def test_deferrable_waits_for_the_marker_with_the_providers_s3_key_trigger(wire: dict[str, str]) -> None:
    from airflow.providers.amazon.aws.triggers.s3 import S3KeyTrigger

    deferred = _deferral(_sensor(policy=_policy()))
    trigger = deferred.trigger
    assert isinstance(trigger, S3KeyTrigger)
    assert (trigger.bucket_name, trigger.bucket_key) == (wire["bucket"], f"{KEYS}/_SUCCESS")
    assert trigger.aws_conn_id == "feedrouter_s3" and deferred.timeout > timedelta(days=9000)
    _mark(wire)

    async def first_event() -> Any:
        return await anext(trigger.run())

    event = asyncio.run(asyncio.wait_for(first_event(), timeout=60))
    assert event.payload["status"] == "success"
    assert _sensor(policy=_policy()).check({}, event=event.payload)["objects"] == 2


def test_without_aiobotocore_deferrable_polls_on_a_timer(
    wire: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.providers.standard.triggers.temporal import DateTimeTrigger

    # aiobotocore is in the test extra: hide it from the sensor's check to test the timer fallback
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "aiobotocore" else find_spec(name, *a)
    )
    before = datetime.now(timezone.utc)
    deferred = _deferral(_sensor(policy=_policy()))
    assert isinstance(deferred.trigger, DateTimeTrigger)
    assert (
        before + timedelta(seconds=7)
        <= deferred.trigger.moment
        <= datetime.now(timezone.utc) + timedelta(seconds=7)
    )


def test_the_deadline_fails_naming_the_prefix_unless_the_marker_just_came(wire: dict[str, str]) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    sensor = _sensor(policy=_policy())
    prefix = f"s3://{wire['bucket']}/{KEYS}/"
    timeout = {"error": "Trigger timeout"}
    with pytest.raises(AirflowFailException, match=f"no _SUCCESS marker under {prefix}"):
        sensor.resume_execution("__fail__", timeout, {})
    with pytest.raises(AirflowFailException, match=f"no _SUCCESS marker under {prefix}"):
        _sensor(policy=_policy(deadline=timedelta(0))).check({})
    _mark(wire)
    assert sensor.resume_execution("__fail__", timeout, {}) == {"prefix": prefix, "objects": 2}


def test_reschedule_mode_keeps_poking(wire: dict[str, str]) -> None:
    from feedrouter.airflow.sensors import HourInputSensor

    sensor = HourInputSensor(task_id="wait", batch=BATCH, policy=_policy())
    assert sensor.mode == "reschedule" and sensor.poke({}) is False
    _mark(wire)
    assert sensor.poke({}).xcom_value["objects"] == 2


def test_the_policy_comes_from_the_settings(wire: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from feedrouter.airflow.sensors import HourInputSensor

    monkeypatch.setenv("AIRFLOW__FEEDROUTER__INPUT_MARKER", "_SUCCESS")
    monkeypatch.setenv("FEEDROUTER_INPUT_GRACE", "0")
    monkeypatch.setenv("AIRFLOW__FEEDROUTER__INPUT_DEADLINE", str(9999 * 24 * 60))
    monkeypatch.delenv("FEEDROUTER_INPUT_MARKER", raising=False)
    assert HourInputSensor(task_id="wait", batch=BATCH).poke({}) is False  # no marker yet
    _mark(wire)
    assert HourInputSensor(task_id="wait", batch=BATCH).poke({})
