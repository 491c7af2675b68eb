"""The task functions of a batch, run without Spark: routing records, delivery folders, the
plan cache, quarantine, retries of a half-written delivery."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from feedrouter.catalog import CompiledPlan, FeedConfig, Target
from feedrouter.catalog.artifact import encode
from feedrouter.catalog.joins import JoinsOfFeed
from feedrouter.delivery import MANIFEST, SUCCESS, PlanRef, read_part
from feedrouter.delivery.messages import Message
from feedrouter.delivery.routing import Routed
from feedrouter.errors import StorageError, TransientStorageError
from feedrouter.join.batches import BatchedHour
from feedrouter.join.plan import clock_block
from feedrouter.join.relations import HourWitnesses, MessageRef, message_rows, message_witnesses
from feedrouter.join.selections import witness_plans
from feedrouter.limits import ResultLimits
from feedrouter.router import Router
from feedrouter.spark import tasks
from feedrouter.spark import witnesses as witness_tables
from feedrouter.spark.errors import InjectedFailure
from feedrouter.spark.publish import withdraw
from feedrouter.spark.spec import Fault, JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.storage import FileStore
from tests.unit.join.support import join_set

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
FOLDER = "titles/news/dt=2026-11-22/hour=16"


@dataclass
class Shipped:
    """The artifact's bytes, as an in-process run hands them to the tasks."""

    value: Any


@pytest.fixture
def batch(tmp_path: Path) -> tuple[JobSpec, Shipped]:
    router = Router.compile([("1", "//title"), ("2", "//nothing")])
    feed = FeedConfig("news", (tmp_path / "in").as_uri(), "{prefix}/dt={date}/hour={hour}/", "nitf")
    out = (tmp_path / "out" / "alice").as_uri()
    targets = {"1": Target(1, "titles", "alice", out), "2": Target(2, "none", "alice", out)}
    artifact = encode(CompiledPlan(feed, 7, router, targets))
    inputs = FileStore(tmp_path / "in" / "dt=2026-11-22" / "hour=16")
    inputs.put("a.xml", b"<nitf><title>1</title></nitf>")
    inputs.put("b.xml.gz", gzip.compress(b"<c><nitf><title>2</title></nitf><nitf><oops></c>"))
    spec = JobSpec(
        feed="news",
        hour=HOUR,
        input_uri=inputs.uri,
        quarantine_uri=(tmp_path / "quarantine").as_uri(),
        plan=PlanRef(3, artifact.digest, 7),
        stores=StoreOpener(),
        max_part_bytes=1 << 20,
        max_message_bytes=1 << 20,
    )
    return spec, Shipped(artifact.data)


def routed(spec: JobSpec, artifact: Shipped) -> list[tuple[Any, Any]]:
    return list(tasks.route_partition(spec, artifact, [(0, "a.xml"), (1, "b.xml.gz")]))


def test_routing_emits_results_by_subscription_and_statistics(batch: tuple[JobSpec, Shipped]) -> None:
    spec, artifact = batch
    records = routed(spec, artifact)
    keys = [key for key, _ in records]
    assert keys == [("1", 0, 0), ("", 0, 0), ("1", 1, 0), ("", 1, 0)]
    stats = [value for key, value in records if key[0] == tasks.STATS]
    assert [(s.documents, s.matches, s.quarantined) for s in stats] == [(1, 1, 0), (2, 1, 1)]
    quarantine = FileStore(Path(spec.quarantine_uri.removeprefix("file://")))
    report = json.loads(quarantine.get(stats[1].quarantine_keys[-1]))
    assert (report["source"], report["index"], report["scope"]) == ("b.xml.gz", 1, "rest of object")
    assert quarantine.get(stats[1].quarantine_keys[0])[:2] == b"\x1f\x8b"  # the object, as stored


def test_the_plan_is_decoded_once_per_process(batch: tuple[JobSpec, Shipped]) -> None:
    spec, artifact = batch
    tasks._PLANS.clear()
    first = tasks.plan_for(spec, artifact)
    assert tasks.plan_for(spec, Shipped(b"not even read")) is first


def test_delivering_writes_parts_manifest_and_success(batch: tuple[JobSpec, Shipped], tmp_path: Path) -> None:
    spec, artifact = batch
    records = sorted(routed(spec, artifact), key=lambda record: record[0])
    out = list(tasks.deliver_partition(spec, records, artifact))
    assert [kind for kind, _ in out] == ["stats", "stats", "delivery"]
    delivered = out[-1][1]
    store = FileStore(tmp_path / "out" / "alice")
    assert sorted(store.list()) == sorted(
        f"{FOLDER}/{name}" for name in (MANIFEST, SUCCESS, "part-00000.xml")
    )
    bodies = [(r.source, r.body) for r in read_part(store.get(f"{FOLDER}/part-00000.xml"))]
    assert bodies == [("a.xml", b"<title>1</title>"), ("b.xml.gz", b"<title>2</title>")]
    manifest = json.loads(store.get(f"{FOLDER}/{MANIFEST}"))
    assert manifest["plan_build"]["id"] == 3 and manifest["results"] == delivered.manifest.results == 2
    assert delivered.object_uris[-1] == store.uri_for(f"{FOLDER}/{SUCCESS}")


def test_a_delivery_failing_half_way_is_untrusted_until_its_retry(
    batch: tuple[JobSpec, Shipped], tmp_path: Path
) -> None:
    spec, artifact = batch
    store = FileStore(tmp_path / "out" / "alice")
    records = sorted(routed(spec, artifact), key=lambda record: record[0])
    list(tasks.deliver_partition(spec, records, artifact))
    complete = {key: store.get(key) for key in store.list()}
    store.put(f"{FOLDER}/part-00007.xml", b"left over")
    flag = tmp_path / "flag"
    flag.touch()
    failing = JobSpec(**{**spec.__dict__, "fault": Fault("deliver", str(flag))})

    with pytest.raises(InjectedFailure):
        list(tasks.deliver_partition(failing, records, artifact))
    assert not store.exists(f"{FOLDER}/{SUCCESS}")  # withdrawn while the folder is rewritten
    list(tasks.deliver_partition(failing, records, artifact))  # the retry
    assert {key: store.get(key) for key in store.list()} == complete

    assert withdraw(store, FOLDER) == 1 and list(store.list()) == []


class _RefusingStore(FileStore):
    """A subscriber's store whose writes fail the way ``error`` says."""

    error: Exception = StorageError("S3 refused s3://gone/…: NoSuchBucket")

    def _put(self, key: str, data: bytes) -> None:
        raise self.error


def test_a_refused_subscriber_store_costs_that_subscription_alone(
    batch: tuple[JobSpec, Shipped], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec, artifact = batch
    refusing = _RefusingStore(tmp_path / "out" / "alice")
    monkeypatch.setattr(
        StoreOpener,
        "open",
        lambda self, uri: refusing if "/out/" in uri else FileStore(Path(uri.removeprefix("file://"))),
    )
    records = sorted(routed(spec, artifact), key=lambda record: record[0])
    out = list(tasks.deliver_partition(spec, records, artifact))
    [(kind, failed)] = [(kind, value) for kind, value in out if kind != "stats"]
    assert kind == "failure" and isinstance(failed, tasks.Undelivered)
    assert (failed.subscription_id, failed.subscription, failed.code) == ("1", "titles", "FR500")
    assert "NoSuchBucket" in failed.reason

    refusing.error = TransientStorageError("S3 unavailable")
    with pytest.raises(TransientStorageError):  # the store as a whole: the task fails, is retried
        list(tasks.deliver_partition(spec, records, artifact))


def test_a_result_refused_by_its_limit_is_reported_and_the_others_delivered(tmp_path: Path) -> None:
    """Items 3/15 on the batch path: a subscription whose result passes the per-subscription limit
    gets a quarantine report (kept by the prune), the message's other subscriptions their results."""
    router = Router.compile(
        [("1", "//title"), ("2", "//body")], result_limits=ResultLimits(per_subscription=20)
    )
    feed = FeedConfig("news", (tmp_path / "in").as_uri(), "{prefix}/dt={date}/hour={hour}/", None)
    out = (tmp_path / "out" / "alice").as_uri()
    targets = {"1": Target(1, "titles", "alice", out), "2": Target(2, "bodies", "alice", out)}
    artifact = encode(CompiledPlan(feed, 7, router, targets))
    inputs = FileStore(tmp_path / "in" / "dt=2026-11-22" / "hour=16")
    inputs.put("a.xml", b"<nitf><title>1</title><body>" + b"x" * 100 + b"</body></nitf>")
    spec = JobSpec(
        feed="news",
        hour=HOUR,
        input_uri=inputs.uri,
        quarantine_uri=(tmp_path / "quarantine").as_uri(),
        plan=PlanRef(3, artifact.digest, 7),
        stores=StoreOpener(),
        max_part_bytes=1 << 20,
        max_message_bytes=1 << 20,
    )
    records = list(tasks.route_partition(spec, Shipped(artifact.data), [(0, "a.xml")]))
    assert [key for key, _ in records] == [("1", 0, 0), ("", 0, 0)]
    [stats] = [value for key, value in records if key[0] == tasks.STATS]
    assert (stats.documents, stats.matches, stats.quarantined, stats.refused) == (1, 1, 0, 1)
    quarantine = FileStore(tmp_path / "quarantine")
    [report] = [json.loads(quarantine.get(key)) for key in stats.quarantine_keys]
    assert report["code"] == "FR310"


def test_delivery_tasks_take_the_targets_from_the_spec_and_never_decode_the_plan(
    batch: tuple[JobSpec, Shipped], tmp_path: Path
) -> None:
    """Issue 13, step 6: the delivery stage needs the targets only; the router stays unpickled."""
    spec, artifact = batch
    records = sorted(routed(spec, artifact), key=lambda record: record[0])
    out = (tmp_path / "out" / "bob").as_uri()
    carried = JobSpec(**{**spec.__dict__, "targets": {"1": Target(1, "titles", "bob", out)}})
    tasks._PLANS.clear()
    delivered = list(tasks.deliver_partition(carried, records, Shipped(b"not a plan")))
    assert [kind for kind, _ in delivered] == ["stats", "stats", "delivery"] and tasks._PLANS == {}
    assert delivered[-1][1].prefix_uri == out  # the spec's target, not the plan's (alice)
    assert carried.without_targets().targets is None and spec.without_targets() is spec


def _filing_case() -> tuple[JoinsOfFeed, Router, list[Message]]:
    """A feed's joins, a router with their witness plans and clock, and 2 batches and 3 of its
    messages (the eighth refused by the task: no event time)."""
    joins_set = join_set(
        'for $a in fr:stream()//item[@lang = "en"], $b in fr:stream()//item '
        'where $a/author = $b/author and fr:followed-by($a, $b, "PT1H") return <r/>'
    )
    reading = joins_set.specs_for("f")
    joins = JoinsOfFeed(
        joins_set.plans, joins_set.specs, tuple(s.id for s in reading), witness_plans(reading)
    )
    joins.clock, joins.event_format = clock_block("f", "//time"), "iso8601"
    router = Router.compile([], on_error="collect")
    for spec in [*joins.witnessing.bases.values(), joins.clock]:
        router.add_witness(spec)
    router.reindex()
    messages = []
    for n in range(2 * tasks.FILING_BATCH + 3):
        lang, time = "en" if n % 2 else "de", f"2026-11-22T16:{n % 60:02d}:00Z"
        data = f'<item lang="{lang}"><author>a{n % 5}</author><time>{time}</time></item>'
        messages.append(Message(f"m{n}.xml", 0, data.encode()))
    return joins, router, messages


def _filed(filing: tasks._Filing, router: Router, messages: list[Message]) -> list[tuple[Any, Any]]:
    """The records ``filing`` gives for ``messages``, checking that they leave when a batch fills."""
    out = []
    for n, message in enumerate(messages):
        # as the task routes: format 2's walked rows packed into the filing's batch as they are read
        witnesses = router.route_outcome(message.data, sink=filing.sink).witnesses
        routed = Routed(message, witnesses=witnesses, error=ValueError("refused") if n == 7 else None)
        records = filing.add(n, routed)
        full = (n + 1) % tasks.FILING_BATCH == 0
        assert len(records) == (0 if not full else tasks.FILING_BATCH if filing.by_block else 1)
        out += records
    out += filing.flush()
    assert filing.flush() == []
    return out


def _message_refs(messages: list[Message]) -> list[MessageRef]:
    return [
        MessageRef(f"m{n}.xml", 0, None if n == 7 else HOUR + timedelta(minutes=n % 60), m.digest)
        for n, m in enumerate(messages)
    ]


def test_a_task_files_its_messages_witnesses_a_batch_at_a_time() -> None:
    """Format 1: witness records leave in batches of FILING_BATCH messages (and the rest at the
    end), a record a message, each the record filing that message alone gives, with its admitted
    event time; a refused message has none."""
    joins, router, messages = _filing_case()
    out = _filed(tasks._Filing(joins, HOUR, timedelta(hours=1), by_block=True), router, messages)
    assert [key for key, _ in out] == [(tasks.WITNESSES, n, 0) for n in range(len(messages))]
    for ref, message, (_, found) in zip(_message_refs(messages), messages, out, strict=True):
        alone = message_witnesses(ref, router.route_outcome(message.data).witnesses, joins.witnessing)
        assert found == alone and found.bound


def test_a_task_sends_a_batch_of_messages_witnesses_as_one_record_of_columns() -> None:
    """Format 2: a record a batch (keyed as its first message), its columns what the messages'
    rows whole give; the hour written from the batches, in whatever order they come, is byte for
    byte the hour written from the messages filed one by one (with their admitted event times)."""
    joins, router, messages = _filing_case()
    out = _filed(tasks._Filing(joins, HOUR, timedelta(hours=1)), router, messages)
    assert [key for key, _ in out] == [(tasks.WITNESSES, n, 0) for n in (0, 32, 64)]
    assert [len(batch) for _, batch in out] == [32, 32, 3]
    assert out[0][1].messages.times[7] is None and out[0][1].messages.times[8] is not None
    one_by_one = HourWitnesses("f", HOUR)
    for ref, message in zip(_message_refs(messages), messages, strict=True):
        one_by_one.append(message_rows(ref, router.route_outcome(message.data).witnesses, joins.witnessing))
    expected = witness_tables.encode(one_by_one)
    for order in ([0, 1, 2], [2, 0, 1]):
        batched = BatchedHour("f", HOUR, (), [out[at][1] for at in order])
        assert witness_tables.encode(batched) == expected
        assert batched.message_count == len(messages) and batched.timed_count == len(messages) - 1


def test_an_hour_whose_witnesses_come_both_as_batches_and_as_messages_is_refused() -> None:
    """The hour's writer takes one format from its tasks: a mix is a bug, not an hour to write."""
    joins, router, messages = _filing_case()
    batches = _filed(tasks._Filing(joins, HOUR, timedelta(hours=1)), router, messages)
    one_by_one = _filed(tasks._Filing(joins, HOUR, timedelta(hours=1), by_block=True), router, messages)
    spec = SimpleNamespace(feed="f", hour_text="2026-11-22T16")
    with pytest.raises(ValueError, match="came as batches and as messages"):
        tasks.write_witnesses(spec, [batches[0][1], one_by_one[0][1]])  # type: ignore[arg-type]
