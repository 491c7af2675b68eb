"""The code Spark runs in its tasks: route objects (stage 1), write deliveries (stage 2).

Stage 1 (:func:`route_partition`) fetches its input objects with boto3, cuts them into messages,
routes each one with the feed's plan and emits one record per result, keyed by
``(subscription id, object ordinal, message index)``, plus one statistics record per object (key
``STATS``). Refused messages are quarantined on the spot.

The shuffle partitions by subscription and sorts by the whole key, so stage 2
(:func:`deliver_partition`) sees each subscription's results together, in input order, and writes
its folder (:mod:`feedrouter.spark.publish`). Statistics records pass through to the driver.

A subscriber's store that refuses our writes (a terminal ``StorageError``: a missing bucket, a
policy, a full disk) costs that subscription its delivery only: the task reports it as
:class:`Undelivered` and goes on with the other subscriptions. A transient storage error (the store
as a whole unavailable after the client's retries) still fails the task, and so the batch, for a
retry.

The plan arrives as broadcast artifact bytes and is decoded (digest-checked) once per Python worker
process, then served from :data:`_PLANS` to every later task of that process.
"""

from __future__ import annotations

import itertools
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from feedrouter import heap
from feedrouter.delivery import CountingReader, Result, Splitter, dtd_text_of, route_message
from feedrouter.errors import StorageError, TransientStorageError
from feedrouter.spark.publish import Delivered, publish
from feedrouter.spark.quarantine import Quarantine
from feedrouter.spark.spec import JobSpec, maybe_fail
from feedrouter.spark.stores import open_stream
from feedrouter.storage import ObjectStore

if TYPE_CHECKING:
    from feedrouter.catalog import CompiledPlan, Target

#: The key of statistics records: sorts before every subscription id, which is never empty.
STATS = ""
#: Decoded plans of this worker process, by artifact digest (the newest one only).
_PLANS: dict[str, CompiledPlan] = {}

Key = tuple[str, int, int]


@dataclass
class ObjectStats:
    """What routing one input object found (small: travels to the driver)."""

    ordinal: int
    documents: int = 0
    bytes: int = 0
    matches: int = 0
    quarantined: int = 0
    refused: int = 0  # (message, subscription) pairs refused a result (FR310/FR311/FR312)
    quarantine_keys: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Undelivered:
    """A subscription whose delivery the store refused (small: travels to the driver)."""

    router_id: str
    subscriber: str
    subscription: str
    output_prefix: str
    code: str
    reason: str


def plan_for(spec: JobSpec, artifact: Any) -> CompiledPlan:
    """The batch's plan, decoded from the broadcast ``artifact`` at most once per process."""
    plan = _PLANS.get(spec.plan.digest)
    if plan is None:
        from feedrouter.catalog.artifact import decode

        plan = decode(artifact.value, spec.plan.digest, source=f"plan build {spec.plan.id}", feed=spec.feed)
        if _PLANS:
            heap.release()  # the old plan goes: let the collector reach it again
        _PLANS.clear()  # a new build replaces the old one: keep one plan in memory
        _PLANS[spec.plan.digest] = plan
        heap.settle()  # this worker routes with it until the next build
    return plan


def splitter_for(plan: CompiledPlan, max_message_bytes: int) -> Splitter:
    """How the feed's objects are cut into messages: its record element, its DTD's entities."""
    return Splitter(plan.feed.record_element, dtd_text_of(plan.router), max_message_bytes)


def subscription_partition(key: Key) -> int:
    """The shuffle partition of a record: by subscription, stable in every process (no hash seed)."""
    return zlib.crc32(key[0].encode("utf-8"))


def route_partition(
    spec: JobSpec, artifact: Any, items: Iterable[tuple[int, str]]
) -> Iterator[tuple[Key, Any]]:
    """Stage 1: route the objects ``(ordinal, key)`` of one partition."""
    plan = plan_for(spec, artifact)
    splitter = splitter_for(plan, spec.max_message_bytes)
    inputs = spec.stores.open(spec.input_uri)
    quarantine = Quarantine(spec, inputs)
    for ordinal, key in items:
        yield from _route_object(plan, splitter, inputs, quarantine, ordinal, key)
    maybe_fail(spec.fault, "route")


def _route_object(
    plan: CompiledPlan,
    splitter: Splitter,
    inputs: ObjectStore,
    quarantine: Quarantine,
    ordinal: int,
    key: str,
) -> Iterator[tuple[Key, Any]]:
    stats = ObjectStats(ordinal)
    with open_stream(inputs, key) as raw:
        counted = CountingReader(raw)
        for message in splitter.messages(key, counted):  # type: ignore[arg-type]
            routed = route_message(plan, message)
            stats.documents += 1
            if routed.error is not None:
                stats.quarantined += 1
                stats.quarantine_keys.extend(quarantine.put(routed))
                continue
            if routed.failures:  # the others got their results; these get a report each
                stats.refused += len(routed.failures)
                stats.quarantine_keys.extend(quarantine.put(routed))
            stats.matches += len(routed.results)
            for sid, body in routed.results.items():
                yield (sid, ordinal, message.index), (message.digest, body)
        stats.bytes = counted.count
    yield (STATS, ordinal, 0), stats


def deliver_partition(
    spec: JobSpec, artifact: Any, sources: Any, records: Iterable[tuple[Key, Any]]
) -> Iterator[tuple[str, ObjectStats | Delivered | Undelivered]]:
    """Stage 2: write the folders of this partition's subscriptions; pass statistics through."""
    plan = plan_for(spec, artifact)
    for sid, group in itertools.groupby(records, key=lambda record: record[0][0]):
        if sid == STATS:
            yield from (("stats", stats) for _, stats in group)
            continue
        keys = sources.value
        results = (Result(keys[o], i, digest, body) for (_, o, i), (digest, body) in group)
        yield deliver_one(spec, plan.targets[sid], sid, results)


def deliver_one(
    spec: JobSpec, target: Target, sid: str, results: Iterable[Result]
) -> tuple[str, Delivered | Undelivered]:
    """Publish one subscription's folder; a terminal storage error becomes an :class:`Undelivered`
    for that subscription alone (a transient one is raised: the task is retried)."""
    try:
        return "delivery", publish(spec, target, sid, results)
    except TransientStorageError:
        raise
    except StorageError as exc:
        reason = f"delivery to {target.output_prefix} failed: {exc}"[:2000]
        failed = Undelivered(
            sid, target.subscriber, target.subscription, target.output_prefix, exc.code, reason
        )
        return "failure", failed
