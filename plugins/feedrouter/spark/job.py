"""The Spark job of one batch, as the driver builds it (two stages, one shuffle by subscription).

::

    (ordinal, key) ──mapPartitions(route_partition)──► ((sid, ordinal, index), (digest, result))
                   ──repartitionAndSortWithinPartitions(by sid)──►
                   ──mapPartitions(deliver_partition)──► Delivered per subscription, ObjectStats
                   ──collect──► driver

The plan's artifact bytes and the list of input keys are broadcast (shipped once per executor) and
the routing tasks decode the plan; the delivery tasks find the subscriptions' targets in the job
spec and never unpickle the router. Everything a task returns to the driver is small (manifests and
counts, never results).

:func:`run_inline` runs the same two stages in the driver process without Spark (one partition
each, the shuffle done by sorting in memory): for tests and hours small enough for one process.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from feedrouter.spark.progress import ProgressCallback, watching
from feedrouter.spark.publish import Delivered
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.tasks import (
    ObjectStats,
    Undelivered,
    deliver_partition,
    route_partition,
    subscription_partition,
)

if TYPE_CHECKING:
    from pyspark import RDD, SparkContext
    from pyspark.sql import SparkSession


@dataclass
class JobOutput:
    """What the tasks reported: one entry per delivered subscription, per subscription whose
    store refused its delivery, and per input object."""

    deliveries: list[Delivered] = field(default_factory=list)
    stats: list[ObjectStats] = field(default_factory=list)
    failures: list[Undelivered] = field(default_factory=list)


@dataclass(frozen=True)
class Slicing:
    """How many tasks: ``inputs`` route the objects, ``outputs`` write the deliveries."""

    inputs: int
    outputs: int

    @classmethod
    def default(cls, sc: SparkContext, objects: int, inputs: int | None, outputs: int | None) -> Slicing:
        # A few input tasks per core even out uneven objects; outputs: two per core.
        parallelism = max(1, sc.defaultParallelism)
        return cls(max(1, min(objects, inputs or 4 * parallelism)), max(1, outputs or 2 * parallelism))


def run_job(
    spark: SparkSession,
    spec: JobSpec,
    artifact: bytes,
    keys: list[str],
    slicing: Slicing,
    progress: ProgressCallback | None = None,
) -> JobOutput:
    """Route and deliver the objects ``keys`` (sorted) of one batch on ``spark``."""
    sc = spark.sparkContext
    shipped_plan, shipped_keys = sc.broadcast(artifact), sc.broadcast(keys)
    group = f"feedrouter-{spec.feed}-{spec.hour_text}-{uuid.uuid4().hex[:8]}"
    sc.setJobGroup(group, f"feedrouter route-batch {spec.feed} {spec.hour_text}")
    try:
        rdd = _pipeline(sc, spec, shipped_plan, shipped_keys, keys, slicing)
        with watching(sc, group, slicing.inputs + slicing.outputs, progress):
            rows = rdd.collect()
    finally:
        shipped_plan.destroy()
        shipped_keys.destroy()
    return _output(rows)


@dataclass(frozen=True)
class _Local:
    """Stands in for a broadcast variable in :func:`run_inline`."""

    value: object


def run_inline(spec: JobSpec, artifact: bytes, keys: list[str]) -> JobOutput:
    """Route and deliver the objects ``keys`` (sorted) in this process, with the tasks' own code.

    Holds every result of the hour in memory between the two stages: for tests and small hours.
    """
    plan, sources = _Local(artifact), _Local(keys)
    routed = sorted(route_partition(spec, plan, enumerate(keys)), key=lambda record: record[0])
    return _output(list(deliver_partition(spec, plan, sources, routed)))


def _pipeline(
    sc: SparkContext, spec: JobSpec, plan: object, sources: object, keys: list[str], slicing: Slicing
) -> RDD:
    items = sc.parallelize(list(enumerate(keys)), slicing.inputs)
    routed = items.mapPartitions(partial(route_partition, spec.without_targets(), plan))
    ordered = routed.repartitionAndSortWithinPartitions(slicing.outputs, partitionFunc=subscription_partition)
    return ordered.mapPartitions(partial(deliver_partition, spec, plan, sources))


def _output(rows: list[tuple[str, object]]) -> JobOutput:
    output = JobOutput()
    for _, value in rows:  # the tag ("delivery", "failure", "stats") names the value's class
        if isinstance(value, Delivered):
            output.deliveries.append(value)
        elif isinstance(value, Undelivered):
            output.failures.append(value)
        else:
            assert isinstance(value, ObjectStats), value
            output.stats.append(value)
    output.deliveries.sort(key=lambda delivered: delivered.subscription_id)
    output.failures.sort(key=lambda failed: failed.subscription_id)
    output.stats.sort(key=lambda stats: stats.ordinal)
    return output
