"""Writing the join stage's folders (feedrouter.spark.joindelivery): several at a time, rows in the
deliveries' order, a bounded number of subscriptions' results held, the first failure raised with
the rest not written; a subscriber's refusing store costs that subscription alone."""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from feedrouter.catalog import Target
from feedrouter.delivery import PlanRef, delivery_dir
from feedrouter.delivery.parts import Provenance
from feedrouter.errors import StorageError, TransientStorageError
from feedrouter.join.stage import JoinDelivery
from feedrouter.spark import joindelivery
from feedrouter.spark.joins import JoinReport
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.storage import FileStore
from tests.unit.join.support import join_set

HOUR = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)


def deliver(deliveries: Iterator[JoinDelivery], threads: int) -> list[joindelivery.Written]:
    """:func:`deliver_joins` with every subscription's target and plan a placeholder (the
    writing itself is the test's)."""
    anything: Any = defaultdict(object)
    return joindelivery.deliver_joins(anything, anything, anything, deliveries, anything, threads)


def drawn_deliveries(count: int, drawn: list[str]) -> Iterator[JoinDelivery]:
    for number in range(count):
        drawn.append(str(number))
        yield JoinDelivery(str(number), HOUR, count=number)


def test_folders_are_written_several_at_a_time_and_rows_keep_the_deliveries_order(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running, most = [0], [0]
    lock = threading.Lock()

    def write(spec: Any, target: Any, plan: Any, found: JoinDelivery, witnesses: Any) -> str:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02 if int(found.sid) % 3 == 0 else 0.001)  # finishing out of order
        with lock:
            running[0] -= 1
        return f"row {found.sid}"

    monkeypatch.setattr(joindelivery, "deliver_join", write)
    drawn: list[str] = []
    written = deliver(drawn_deliveries(20, drawn), threads=4)
    assert [one.row for one in written] == [f"row {n}" for n in range(20)]
    assert [(one.sid, one.pairs) for one in written] == [(str(n), n) for n in range(20)]
    assert 1 < most[0] <= 4
    most[0] = 0
    one_by_one = deliver(drawn_deliveries(20, []), threads=1)  # no pool: this thread writes them
    assert one_by_one == written and most[0] == 1


def test_at_most_twice_the_writers_are_drawn_ahead_of_the_writes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The hour's deliveries are assembled as writers free up: while every write waits, the
    stage has drawn (and holds the results of) at most 2 x threads subscriptions."""
    release = threading.Event()

    def write(spec: Any, target: Any, plan: Any, found: JoinDelivery, witnesses: Any) -> str:
        release.wait(10)
        return found.sid

    monkeypatch.setattr(joindelivery, "deliver_join", write)
    drawn: list[str] = []
    done: list[Any] = []
    worker = threading.Thread(target=lambda: done.append(deliver(drawn_deliveries(50, drawn), 3)))
    worker.start()
    deadline = time.monotonic() + 5
    while len(drawn) < 6 and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.1)  # time to draw more, were it not bounded
    assert len(drawn) == 6
    release.set()
    worker.join(10)
    assert done and [one.row for one in done[0]] == [str(n) for n in range(50)]


def test_the_first_failure_is_raised_and_the_rest_are_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    written: list[str] = []

    def write(spec: Any, target: Any, plan: Any, found: JoinDelivery, witnesses: Any) -> str:
        if found.sid == "2":
            raise OSError("the store is down")
        time.sleep(0.01)
        written.append(found.sid)
        return found.sid

    monkeypatch.setattr(joindelivery, "deliver_join", write)
    drawn: list[str] = []
    with pytest.raises(OSError, match="the store is down"):
        deliver(drawn_deliveries(1000, drawn), threads=2)
    assert len(drawn) < 10  # stopped drawing at the failure


class _Provenances:
    """The witness hours as delivering reads them: a node's message."""

    def provenance(self, feed: str, node: tuple[datetime, int, int]) -> Provenance:
        return Provenance(feed, "2026-05-01T08", f"m{node[1]}.xml", 0, "0" * 64)


class _RefusingStore(FileStore):
    """A subscriber's store that refuses every write the way ``error`` says."""

    error: Exception = StorageError("S3 refused s3://gone/…: NoSuchBucket")

    def _put(self, key: str, data: bytes) -> None:
        raise self.error

    def delete(self, key: str) -> None:
        raise self.error


def test_a_refused_subscriber_store_costs_that_subscription_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    joins = join_set(
        *[
            "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k "
            "and fr:within($a, $b, 'PT1H') return <p>{ $a/n }</p>"
        ]
        * 3
    )
    refusing = _RefusingStore(tmp_path / "gone")
    stores = {"gone": refusing, "ok": FileStore(tmp_path / "ok")}
    monkeypatch.setattr(StoreOpener, "open", lambda self, uri: stores[uri.rsplit("/", 1)[-1]])
    spec = JobSpec("f", HOUR, "", None, PlanRef(3, "d" * 64, 7), StoreOpener(), 1 << 20, 1 << 20)
    targets = {
        "s0": Target(1, "first", "alice", (tmp_path / "ok").as_uri()),
        "s1": Target(2, "second", "bob", (tmp_path / "gone").as_uri()),
        "s2": Target(3, "third", "carol", (tmp_path / "ok").as_uri()),
    }
    pair = ((HOUR, 0, 0), (HOUR, 1, 0))
    found = [JoinDelivery(sid, HOUR, [b"<p/>"], [pair], count=1) for sid in targets]
    written = joindelivery.deliver_joins(spec, targets, joins.plans, found, _Provenances(), 2)
    rows = {one.sid: one.row for one in written}
    assert rows["s1"].status == "failed" and rows["s1"].error_code == "FR607"
    assert "NoSuchBucket" in (rows["s1"].error_message or "")
    assert [rows[sid].result_count for sid in ("s0", "s2")] == [1, 1]
    assert all(rows[sid].status == "delivered" and rows[sid].object_keys for sid in ("s0", "s2"))

    # withheld past the cap: its row says so even when taking back its folder is refused
    earlier = tmp_path / "gone" / delivery_dir("second", "f", HOUR) / "_SUCCESS"
    earlier.parent.mkdir(parents=True)
    earlier.write_bytes(b"")  # an earlier run's folder, which a withheld hour takes back
    capped = JoinDelivery("s1", HOUR, count=5, withheld="[FR313] more than 4 pairs in the hour")
    (one,) = joindelivery.deliver_joins(spec, targets, joins.plans, [capped], _Provenances(), 1)
    assert (one.row.status, one.row.error_code) == ("withheld", "FR313")
    assert "NoSuchBucket" in (one.row.error_message or "")
    # no pair this hour: its earlier folder is taken back, and a refusal is its failed row
    (empty,) = joindelivery.deliver_joins(
        spec, targets, joins.plans, [JoinDelivery("s1", HOUR)], _Provenances(), 1
    )
    assert (empty.row.status, empty.row.error_code) == ("failed", "FR607")
    assert "taking back its folder" in (empty.row.error_message or "")
    report = JoinReport("f", "2026-05-01T08", "joined", 1, failed=("bob/second",))
    assert "1 deliveries failed [FR607]" in report.describe()

    refusing.error = TransientStorageError("S3 unavailable")
    with pytest.raises(TransientStorageError):  # the store as a whole: the stage fails, is retried
        joindelivery.deliver_joins(spec, targets, joins.plans, found, _Provenances(), 2)


def test_pairs_left_out_past_the_result_limit_are_named_in_a_delivered_row(tmp_path: Path) -> None:
    """A delivery some of whose pairs' results passed the feed's max_result_bytes is written with
    the others and its row says how many were left out and why (FR310): delivered, not failed, as
    an ordinary subscription's other documents are delivered; none left: no folder, the same row."""
    joins = join_set(
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k "
        "and fr:within($a, $b, 'PT1H') return <p>{ $a/n }</p>"
    )
    spec = JobSpec("f", HOUR, "", None, PlanRef(3, "d" * 64, 7), StoreOpener(), 1 << 20, 1 << 20)
    (sid,) = joins.plans
    targets = {sid: Target(1, "first", "alice", (tmp_path / "ok").as_uri())}
    why = "[FR310] the result of the pair of f … is 40 bytes, more than the feed's max_result_bytes (31)"
    pair = ((HOUR, 0, 0), (HOUR, 1, 0))
    some = JoinDelivery(sid, HOUR, [b"<p/>"], [pair], count=3, refused=2, refusal=why)
    (one,) = joindelivery.deliver_joins(spec, targets, joins.plans, [some], _Provenances(), 1)
    assert (one.row.status, one.row.result_count, one.row.error_code) == ("delivered", 1, "FR310")
    assert one.row.error_message == "2 pairs left out, the first: " + why and one.row.object_keys
    assert len(list((tmp_path / "ok").rglob("_SUCCESS"))) == 1
    (none,) = joindelivery.deliver_joins(
        spec,
        targets,
        joins.plans,
        [JoinDelivery(sid, HOUR, count=1, refused=1, refusal=why)],
        _Provenances(),
        1,
    )
    assert (none.row.status, none.row.result_count, none.row.object_keys) == ("delivered", 0, ())
    assert (none.row.error_code, none.row.error_message) == ("FR310", why)
    assert list((tmp_path / "ok").rglob("_SUCCESS")) == []  # the first call's folder, taken back
    report = JoinReport("f", "2026-05-01T08", "joined", 1, refused=("first",))
    assert "pairs left out (a result past max_result_bytes) [FR310]: first" in report.describe()


def test_no_folder_is_written_here_once_the_hour_lease_is_lost() -> None:
    from feedrouter.errors import LockLostError
    from feedrouter.spark.joins import _while_held
    from feedrouter.spark.lease import JobCanceller

    cancel = JobCanceller()
    spec: Any = type("Spec", (), {"feed": "f", "hour_text": "2026-05-01T08"})()
    drawn: list[str] = []
    held = _while_held(drawn_deliveries(10, drawn), spec, cancel)
    assert next(held).sid == "0"
    cancel()  # the heartbeat found another run holding the hour
    with pytest.raises(LockLostError, match="FR606"):
        next(held)
    assert len(drawn) == 2  # the one drawn when the loss was seen is not handed to a writer


@pytest.mark.parametrize("engine", ["partitioned", "spark"])
def test_a_session_with_speculation_on_is_refused_before_any_folder_is_written(engine: str) -> None:
    """Two attempts of one task would write the same folders at once: the join stage refuses such
    a session (FR603) before it pairs or writes anything, as routing does."""
    from feedrouter.errors import SparkVersionError
    from feedrouter.spark.joins import JoinOptions, _delivered

    class Conf:
        def get(self, name: str, default: str | None = None) -> str | None:
            return "true" if name == "spark.speculation" else default

    session: Any = type("Session", (), {"conf": Conf()})()
    stage: Any = type("Stage", (), {"plans": [object()]})()
    spec: Any = type("Spec", (), {"hour": HOUR, "feed": "f", "hour_text": "2026-05-01T08"})()
    with pytest.raises(SparkVersionError, match=r"FR603.*speculation"):
        _delivered(stage, spec, {}, None, JoinOptions(engine=engine), session)
