"""The join stage's writing of the hour's folders (feedrouter.spark.joins._deliver_all): several
at a time, rows in the deliveries' order, a bounded number of subscriptions' results held, the
first failure raised with the rest not written."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from typing import Any

import pytest

from feedrouter.join.stage import JoinDelivery
from feedrouter.spark import joins

HOUR = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)


def drawn_deliveries(count: int, drawn: list[str]) -> Iterator[JoinDelivery]:
    for number in range(count):
        drawn.append(str(number))
        yield JoinDelivery(str(number), HOUR, count=number)


def test_folders_are_written_several_at_a_time_and_rows_keep_the_deliveries_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def write(spec: Any, loaded: Any, found: JoinDelivery, witnesses: Any) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02 if int(found.sid) % 3 == 0 else 0.001)  # finishing out of order
        with lock:
            running[0] -= 1
        return f"row {found.sid}"

    monkeypatch.setattr(joins, "_deliver", write)
    drawn: list[str] = []
    rows, paired = joins._deliver_all(None, None, drawn_deliveries(20, drawn), None, threads=4)
    assert rows == [f"row {n}" for n in range(20)]
    assert paired == sum(range(20))
    assert 1 < most[0] <= 4


def test_at_most_twice_the_writers_are_drawn_ahead_of_the_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hour's deliveries are assembled as writers free up: while every write waits, the
    stage has drawn (and holds the results of) at most 2 x threads subscriptions."""
    release = threading.Event()

    def write(spec: Any, loaded: Any, found: JoinDelivery, witnesses: Any) -> str:
        release.wait(10)
        return found.sid

    monkeypatch.setattr(joins, "_deliver", write)
    drawn: list[str] = []
    done: list[Any] = []
    worker = threading.Thread(
        target=lambda: done.append(joins._deliver_all(None, None, drawn_deliveries(50, drawn), None, 3))
    )
    worker.start()
    deadline = time.monotonic() + 5
    while len(drawn) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # time to draw more, were it not bounded
    assert len(drawn) == 6
    release.set()
    worker.join(10)
    assert done and done[0][0] == [str(n) for n in range(50)]


def test_the_first_failure_is_raised_and_the_rest_are_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []

    def write(spec: Any, loaded: Any, found: JoinDelivery, witnesses: Any) -> str:
        if found.sid == "2":
            raise OSError("the store is down")
        time.sleep(0.01)
        written.append(found.sid)
        return found.sid

    monkeypatch.setattr(joins, "_deliver", write)
    drawn: list[str] = []
    with pytest.raises(OSError, match="the store is down"):
        joins._deliver_all(None, None, drawn_deliveries(1000, drawn), None, threads=2)
    assert len(drawn) < 10  # stopped drawing at the failure
    assert "999" not in written
