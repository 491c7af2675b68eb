"""The code Spark runs in its tasks: route objects (stage 1), write deliveries (stage 2).

Stage 1 (:func:`route_partition`) opens its input objects as streams (:meth:`ObjectStore.open
<feedrouter.storage.base.ObjectStore.open>`), runs the routing loop on them
(:func:`~feedrouter.delivery.routing.route_objects`, shared with local runs and the command line)
and emits one record per result, keyed by ``(subscription id, object ordinal, message index)`` with
the value ``(message digest, result bytes, source key)``, plus one statistics record per object
(key ``STATS``). Refused messages, and results refused to one subscription, are quarantined on the
spot.

The shuffle partitions by subscription and sorts by the whole key, so stage 2
(:func:`deliver_partition`) sees each subscription's results together, in input order, and writes
its folder (:mod:`feedrouter.spark.publish`). Statistics records pass through to the driver.

A subscriber's store that refuses our writes (a terminal ``StorageError``: a missing bucket, a
policy, a full disk) costs that subscription its delivery only: the task reports it as
:class:`Undelivered` and goes on with the other subscriptions. A transient storage error (the store
as a whole unavailable after the client's retries) still fails the task, and so the batch, for a
retry.

The plan is read from the plans store by the URI in the spec (:attr:`JobSpec.artifact
<feedrouter.spark.spec.JobSpec.artifact>`) and decoded (digest-checked) once per Python worker
process, then served from :data:`_PLANS` to every later task of that process. Only stage 1 decodes
it: stage 2 finds each subscription's delivery target in the job spec (:attr:`JobSpec.targets
<feedrouter.spark.spec.JobSpec.targets>`). Results carry their source key, so no task needs the
hour's listing. The Arrow side (what ``mapInArrow`` passes) is :mod:`feedrouter.spark.frames`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, cast

from feedrouter import heap
from feedrouter.catalog import ledger
from feedrouter.delivery import Result, Splitter, dtd_text_of
from feedrouter.delivery.messages import Message
from feedrouter.delivery.routing import Routed, route_objects
from feedrouter.errors import StorageError, TransientStorageError, error
from feedrouter.join.batches import BatchBuilder, BatchedHour, RowSink, WitnessBatch
from feedrouter.join.collect import admitted_bounds, joinable_micros, joinable_time
from feedrouter.join.relations import HourWitnesses, MessageRef, MessageWitnesses, message_witnesses
from feedrouter.join.witness import WitnessRow
from feedrouter.spark.publish import Delivered, publish
from feedrouter.spark.quarantine import Quarantine
from feedrouter.spark.spec import JobSpec, maybe_fail
from feedrouter.spark.witnesses import WrittenHour, write_hour
from feedrouter.storage import ObjectStore

if TYPE_CHECKING:
    from feedrouter.catalog import CompiledPlan, Target
    from feedrouter.catalog.joins import JoinsOfFeed

#: The key of statistics records: sorts before every subscription id, which is never empty.
STATS = ""
#: The key of join witness records (one per message of the hour when the plan has join blocks):
#: no subscription id starts with a space, so they group apart and reach one delivery task,
#: which writes the hour's witness relations.
WITNESSES = " witnesses"
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

    def read(self, source: str, size: int) -> None:
        """The object's stored size, once it has been read."""
        self.bytes = size

    def count(self, routed: Routed) -> None:
        """Count one message: its results, its refused results, or itself as quarantined."""
        self.documents += 1
        self.matches += len(routed.results)
        self.refused += len(routed.failures)  # the message's other subscriptions were served
        if routed.error is not None:
            self.quarantined += 1


@dataclass(frozen=True)
class WitnessReport:
    """What the task that wrote the hour's witnesses reports (small: travels to the driver)."""

    messages: int
    timed: int  # messages with an event time joins may use
    roots: int  # the roots table's rows: nodes of every witness plan (format 2), of every block (format 1)
    bytes: int  # the relations' Parquet bytes


@dataclass(frozen=True)
class Undelivered:
    """A subscription whose delivery the store refused (small: travels to the driver)."""

    subscription_id: str  # the router's key of the subscription
    subscriber: str
    subscription: str  # its name
    output_prefix: str
    code: str
    reason: str

    def ledger_row(self, catalog_id: int | None) -> ledger.DeliveryRow:
        """Its ``failed`` delivery row (FR607, the store's error code and reason in the message)."""
        return ledger.DeliveryRow(
            catalog_id,
            self.subscriber,
            self.subscription,
            status="failed",
            error_code="FR607",
            error_message=f"[{self.code}] {self.reason}",
        )


def plan_for(spec: JobSpec, artifact: Any = None) -> CompiledPlan:
    """The batch's plan, decoded at most once per process from ``artifact.value`` (bytes a caller
    holds already) or, when ``artifact`` is None, read from the plans store the spec names."""
    plan = _PLANS.get(spec.plan.digest)
    if plan is None:
        from feedrouter.catalog.artifact import decode

        data = artifact.value if artifact is not None else read_artifact(spec)
        plan = decode(data, spec.plan.digest, source=f"plan build {spec.plan.id}", feed=spec.feed)
        if _PLANS:
            heap.release()  # the old plan goes: let the collector reach it again
        _PLANS.clear()  # a new build replaces the old one: keep one plan in memory
        _PLANS[spec.plan.digest] = plan
        heap.settle()  # this worker routes with it until the next build
    return plan


def read_artifact(spec: JobSpec) -> bytes:
    """The plan build's artifact bytes from the plans store (the digest is checked on decoding)."""
    if spec.artifact is None:
        raise error("FR600", f"the job spec of {spec.feed} {spec.hour_text} names no plan artifact")
    return spec.stores.open(spec.artifact.store_uri).get(spec.artifact.key)


def splitter_for(plan: CompiledPlan, max_message_bytes: int) -> Splitter:
    """How the feed's objects are cut into messages: its record element, its DTD's entities."""
    return Splitter(plan.feed.record_element, dtd_text_of(plan.router), max_message_bytes)


def route_partition(
    spec: JobSpec, artifact: Any, items: Iterable[tuple[int, str]]
) -> Iterator[tuple[Key, Any]]:
    """Stage 1: route the objects ``(ordinal, key)`` of one partition.

    ``artifact``: None (the plan is read from the plans store), or an object whose ``value`` is
    the artifact's bytes (in-process runs that hold them already).
    """
    plan = plan_for(spec, artifact)
    splitter = splitter_for(plan, spec.max_message_bytes)
    inputs = spec.stores.open(spec.input_uri)
    quarantine = Quarantine(spec, inputs)
    filing = (
        _Filing(plan.joins, spec.hour, plan.feed.allowed_lateness, by_block=not spec.witness_roots)
        if plan.joins
        else None
    )
    for ordinal, key in items:
        yield from _route_object(
            plan, splitter, inputs, quarantine, ordinal, key, filing, spec.witnesses_only
        )
    if filing is not None:
        yield from filing.flush()
    maybe_fail(spec.fault, "route")


def _route_object(
    plan: CompiledPlan,
    splitter: Splitter,
    inputs: ObjectStore,
    quarantine: Quarantine,
    ordinal: int,
    key: str,
    filing: _Filing | None,
    witnesses_only: bool = False,
) -> Iterator[tuple[Key, Any]]:
    stats = ObjectStats(ordinal)
    with inputs.open(key) as stream:
        # the worker settled its heap when it decoded the plan (plan_for): not again per object
        routed_messages = route_objects(
            plan,
            splitter,
            [(key, stream)],
            settle=False,
            on_read=stats.read,
            sink=None if filing is None else filing.sink,
        )
        for routed in routed_messages:
            stats.count(routed)
            if witnesses_only:  # a back-fill: the hour's deliveries and quarantine stand as they are
                pass
            elif routed.error is not None or routed.failures:  # set aside, with why, in the quarantine
                stats.quarantine_keys.extend(quarantine.put(routed))
            for sid, body in () if witnesses_only else routed.results.items():
                yield (sid, ordinal, routed.message.index), (routed.message.digest, body, key)
            if filing is not None:
                yield from filing.add(ordinal, routed)
    yield (STATS, ordinal, 0), stats


#: messages whose witnesses a routing task files together: routing a message pushes the filing's
#: structures (value look-ups, deciders, needles) out of the caches, so filing each message as it
#: is routed pays those misses every time; a batch pays them once (the records go out later, in
#: the same partition: the shuffle orders them by key)
FILING_BATCH = 32


class _Filing:
    """A routing task's messages' witnesses, :data:`FILING_BATCH` messages at a time, with the
    event time joins may use (none for a refused message): each witness plan's rows whole, a
    batch's as one record of columns (format 2: :class:`~feedrouter.join.batches.WitnessBatch`;
    the join stage files them by block where it reads them), or, ``by_block``, each message's
    filed by block here, a record a message (format 1: :func:`~feedrouter.join.relations.
    message_witnesses`). It keeps a message's witnesses until then, not its results.

    Format 2's blocks read by a walk pack their rows into :attr:`sink` as each message is routed
    (the task routes with it): it numbers the next message to be routed by its place in the
    batch."""

    def __init__(
        self, joins: JoinsOfFeed, hour: datetime, lateness: timedelta, by_block: bool = False
    ) -> None:
        self.joins, self.hour, self.lateness, self.by_block = joins, hour, lateness, by_block
        self.pending: list[tuple[int, Message, bool, dict[str, list[WitnessRow]]]] = []
        plans = joins.witnessing
        #: per witness plan the build serves, its leaf and fragment names (format 2's batches)
        self.names = {plan: plans.names(plan) for plan in plans.served}
        #: the event times joins may use, in microseconds (format 2's batches)
        self.bounds = admitted_bounds(hour, lateness)
        #: where the batch's walked rows are packed as its messages are routed (format 2)
        self.sink = None if by_block else RowSink(self.names)

    def add(self, ordinal: int, routed: Routed) -> list[tuple[Key, MessageWitnesses | WitnessBatch]]:
        """Take one routed message; the records of a full batch, if this filled it."""
        self.pending.append((ordinal, routed.message, routed.error is None, routed.witnesses))
        found = self.flush() if len(self.pending) >= FILING_BATCH else []
        if self.sink is not None:
            self.sink.message = len(self.pending)  # the next message's number in the batch
        return found

    def flush(self) -> list[tuple[Key, MessageWitnesses | WitnessBatch]]:
        """The records of the messages taken since the last flush: one a message (format 1), or
        one for them all, keyed as its first message (format 2; the writer orders the messages
        by their own keys)."""
        pending, self.pending = self.pending, []
        if self.by_block:
            return [
                ((WITNESSES, ordinal, message.index), self._filed(message, routed, rows))
                for ordinal, message, routed, rows in pending
            ]
        if not pending:
            return []
        batch = BatchBuilder(self.names, self.sink)
        joins, (earliest, end) = self.joins, self.bounds
        clock, fmt = joins.clock, joins.event_format
        for ordinal, message, routed, rows in pending:
            time = joinable_micros(rows, clock, fmt, earliest, end) if routed and clock is not None else None
            batch.add(ordinal, message.source, message.index, time, message.digest, rows)
        first, message = pending[0][0], pending[0][1]
        return [((WITNESSES, first, message.index), batch.batch())]

    def _time(self, routed: bool, witnesses: dict[str, list[WitnessRow]]) -> datetime | None:
        joins = self.joins
        if routed and joins.clock is not None:
            return joinable_time(witnesses, joins.clock, joins.event_format, self.hour, self.lateness)
        return None

    def _filed(
        self, message: Message, routed: bool, witnesses: dict[str, list[WitnessRow]]
    ) -> MessageWitnesses:
        ref = MessageRef(message.source, message.index, self._time(routed, witnesses), message.digest)
        return message_witnesses(ref, witnesses, self.joins.witnessing)


def deliver_partition(
    spec: JobSpec, records: Iterable[tuple[Key, Any]], artifact: Any = None
) -> Iterator[tuple[str, ObjectStats | Delivered | Undelivered | WitnessReport]]:
    """Stage 2: write the folders of this partition's subscriptions (``records`` sorted by key);
    pass statistics through.

    The targets come from the spec; only a spec made without them (``targets=None``) has the
    plan decoded here for them (from ``artifact`` as in :func:`route_partition`).
    """
    targets = spec.targets
    for sid, group in itertools.groupby(records, key=lambda record: record[0][0]):
        if sid == STATS:
            yield from (("stats", stats) for _, stats in group)
            continue
        if sid == WITNESSES:
            yield "witnesses", write_witnesses(spec, (found for _, found in group))
            continue
        if targets is None:
            targets = plan_for(spec, artifact).targets
        results = (Result(source, i, digest, body) for (_, _, i), (digest, body, source) in group)
        yield deliver_one(spec, targets[sid], sid, results)


def write_witnesses(spec: JobSpec, records: Iterable[MessageWitnesses | WitnessBatch]) -> WitnessReport:
    """Write the hour's witness relations to the state store: from the routing tasks' batches
    (format 2), or from their messages filed one by one, in stream order (format 1)."""
    records = list(records)
    batches = [record for record in records if isinstance(record, WitnessBatch)]
    if batches:
        if len(batches) != len(records):
            raise ValueError(f"the witnesses of {spec.feed} {spec.hour_text} came as batches and as messages")
        batched = BatchedHour(spec.feed, spec.hour, spec.witness_blocks, batches)
        written = write_witness_hour(spec, batched)
        roots = len(batched.root_columns().blocks)
        return WitnessReport(batched.message_count, batched.timed_count, roots, written)
    hour = HourWitnesses(spec.feed, spec.hour, spec.witness_blocks)
    for found in records:
        hour.append(cast(MessageWitnesses, found))
    written = write_witness_hour(spec, hour)
    timed = sum(1 for message in hour.messages if message.time is not None)
    return WitnessReport(len(hour.messages), timed, len(hour.root_columns().blocks), written)


def write_witness_hour(spec: JobSpec, witnesses: WrittenHour) -> int:
    """Write an hour's witnesses to the spec's state location as its plan computes them: its blocks'
    coverage and, in format 2, the witness plan each is filed from (:func:`~feedrouter.spark.
    witnesses.write_hour`); the bytes written."""
    if spec.state_uri is None:
        raise error("FR600", f"the job spec of {spec.feed} {spec.hour_text} names no state location")
    roots = dict(spec.witness_roots) if spec.witness_roots else None
    plans = spec.witness_plans if roots is not None else ()
    return write_hour(spec.stores.open(spec.state_uri), witnesses, spec.witness_coverage, roots, plans)


def deliver_one(
    spec: JobSpec, target: Target, sid: str, results: Iterable[Result], part_format: int = 1
) -> tuple[str, Delivered | Undelivered]:
    """Publish one subscription's folder; a terminal storage error becomes an :class:`Undelivered`
    for that subscription alone (a transient one is raised: the task is retried). ``part_format``
    2: join pairs (:func:`~feedrouter.spark.publish.publish`)."""
    try:
        return "delivery", publish(spec, target, sid, results, part_format)
    except TransientStorageError:
        raise
    except StorageError as exc:
        reason = f"delivery to {target.output_prefix} failed: {exc}"[:2000]
        failed = Undelivered(
            sid, target.subscriber, target.subscription, target.output_prefix, exc.code, reason
        )
        return "failure", failed
