"""The driver's side of the hour lease: hour_lock holds it for a run, the heartbeat keeps it alive
(the lease's rows are tested in tests/unit/catalog/test_lease.py)."""

from __future__ import annotations

import threading
from datetime import timedelta
from types import SimpleNamespace

import pytest
from sqlalchemy import Engine, update

from feedrouter.catalog import lease as leases
from feedrouter.catalog.models import HourLease
from feedrouter.errors import BatchBusyError
from feedrouter.spark.lease import Heartbeat, JobCanceller, hour_lock
from tests.unit.catalog.test_lease import HOUR, engine, expire

__all__ = ["engine"]  # the catalog's fixture: feed news with one plan build


def test_the_heartbeat_keeps_a_short_lease_and_notices_a_takeover(engine: Engine) -> None:
    held = leases.acquire(engine, "news", HOUR, timedelta(seconds=0.3))
    canceller = JobCanceller()
    interrupted: list[str] = []
    called = threading.Event()
    cancel = SimpleNamespace(cancelJobsWithTag=lambda tag: (interrupted.append(tag), called.set()))
    spark = SimpleNamespace(sparkContext=cancel)  # a classic session: its context cancels by tag
    with Heartbeat(engine, held, on_lost=canceller) as beat, canceller.armed(spark, "the-run"):
        expire(engine)
        with engine.begin() as conn:  # another run takes the expired lease over
            conn.execute(update(HourLease).values(token=held.token + 1))
        assert beat.lost.wait(30)
        assert canceller.fired.wait(30) and called.wait(30)
    assert interrupted == ["the-run"]  # the run's Spark operations, by their tag


def test_the_embedded_catalog_locks_the_hour_too(engine: Engine) -> None:
    with (
        hour_lock(engine, "news", HOUR),
        pytest.raises(BatchBusyError) as caught,
        hour_lock(engine, "news", HOUR),
    ):
        pass
    assert caught.value.code == "FR605" and caught.value.transient
    with hour_lock(engine, "news", HOUR) as lease:  # released: free again, with a new token
        assert lease.token == 2
