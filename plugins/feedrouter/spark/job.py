"""The Spark job of one batch, as the driver builds it: DataFrames only, so it runs on classic
Spark (local, standalone, YARN, Kubernetes) and on Spark Connect (``sc://``) alike.

::

    objects (ordinal, key)     the hour's listing, a DataFrame made on the driver
      ──repartition(inputs)──mapInArrow(route_arrow)──►  (sid, ordinal, idx, source, digest, body)
                                                         + one statistics row per object
      ──repartition(outputs, sid)──sortWithinPartitions(sid, ordinal, idx)──►
      ──mapInArrow(deliver_arrow)──►  (kind, payload): Delivered / Undelivered / ObjectStats
      ──collect──► driver

No RDD, broadcast variable or SparkContext: the routing tasks read the plan's artifact from the
plans store by URI (digest-checked, cached per worker process, :func:`~feedrouter.spark.tasks.
plan_for`), the delivery tasks find the subscriptions' targets in the job spec. Everything the
driver collects is small (manifests and counts, never results); the Arrow batches between the
stages are bounded by bytes (:mod:`feedrouter.spark.frames`).

The job's operations carry a job tag (:func:`job_tag`, :func:`tagged`): a run that loses its
hour's lease cancels them (:func:`interrupt`), on classic Spark and on Connect.

:func:`run_inline` runs the same two stages in the driver process without Spark (one partition
each, the shuffle done by sorting in memory): for tests and hours small enough for one process.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

from feedrouter.spark.frames import (
    ARROW_CONF,
    OBJECTS,
    REPORTED,
    ROUTED,
    deliver_arrow,
    reported,
    route_arrow,
)
from feedrouter.spark.progress import ProgressCallback, is_connect, watching
from feedrouter.spark.publish import Delivered
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.tasks import ObjectStats, Undelivered, WitnessReport, deliver_partition, route_partition

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

#: Cores assumed when neither ``spark.default.parallelism``, a ``local[N]`` master, nor the
#: executors' conf says how many the session has.
DEFAULT_PARALLELISM = 4


@dataclass
class JobOutput:
    """What the tasks reported: one entry per delivered subscription, per subscription whose
    store refused its delivery, and per input object."""

    deliveries: list[Delivered] = field(default_factory=list)
    stats: list[ObjectStats] = field(default_factory=list)
    failures: list[Undelivered] = field(default_factory=list)
    witnesses: WitnessReport | None = None  # the hour's join witnesses, when the plan has joins


@dataclass(frozen=True)
class Slicing:
    """How many tasks: ``inputs`` route the objects, ``outputs`` write the deliveries."""

    inputs: int
    outputs: int

    @classmethod
    def default(cls, spark: Any, objects: int, inputs: int | None, outputs: int | None) -> Slicing:
        # A few input tasks per core even out uneven objects; outputs: two per core.
        cores = parallelism(spark)
        return cls(max(1, min(objects, inputs or 4 * cores)), max(1, outputs or 2 * cores))


def parallelism(spark: Any) -> int:
    """The session's cores, from its conf (both classic and Connect sessions answer ``spark.conf``):
    ``spark.default.parallelism``, else a ``local[N]`` master's N (``*``: this machine's cores),
    else ``spark.cores.max``, else executor instances times cores, else :data:`DEFAULT_PARALLELISM`."""
    conf = _conf_reader(spark)
    if (given := _whole(conf("spark.default.parallelism"))) is not None:
        return given
    local = re.fullmatch(r"local\[(\d+|\*)(?:,\s*\d+)?\]", conf("spark.master") or "")
    if local is not None:
        import os

        return int(local.group(1)) if local.group(1) != "*" else os.cpu_count() or DEFAULT_PARALLELISM
    if (cores := _whole(conf("spark.cores.max"))) is not None:
        return cores
    instances, per_executor = _whole(conf("spark.executor.instances")), _whole(conf("spark.executor.cores"))
    if instances is not None:
        return instances * (per_executor or 1)
    return DEFAULT_PARALLELISM


def job_tag(spec: JobSpec) -> str:
    """A tag naming this run's Spark operations (no commas: Spark refuses them in tags)."""
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"feedrouter-{spec.feed}-{spec.hour_text}")
    return f"{name}-{uuid.uuid4().hex[:8]}"


def run_job(
    spark: SparkSession,
    spec: JobSpec,
    keys: list[str],
    slicing: Slicing,
    progress: ProgressCallback | None = None,
    tag: str | None = None,
) -> JobOutput:
    """Route and deliver the objects ``keys`` (sorted) of one batch on ``spark``; its operations
    carry ``tag`` (default: a new :func:`job_tag`)."""
    tag = tag or job_tag(spec)
    frame = pipeline(spark, spec, keys, slicing)
    total = slicing.inputs + slicing.outputs
    with session_conf(spark, ARROW_CONF), tagged(spark, tag), watching(spark, tag, total, progress):
        rows = frame.collect()
    return _output(reported(row["payload"] for row in rows))


def pipeline(spark: SparkSession, spec: JobSpec, keys: list[str], slicing: Slicing) -> DataFrame:
    """The batch's DataFrame: objects → routed rows → shuffled by subscription → outcomes."""
    objects = spark.createDataFrame(list(enumerate(keys)), OBJECTS).repartition(slicing.inputs)
    routed = objects.mapInArrow(partial(route_arrow, spec.without_targets()), ROUTED)
    ordered = routed.repartition(slicing.outputs, "sid").sortWithinPartitions("sid", "ordinal", "idx")
    return ordered.mapInArrow(partial(deliver_arrow, spec), REPORTED)


@dataclass(frozen=True)
class _Local:
    """The artifact's bytes, handed to the tasks' code in :func:`run_inline`."""

    value: bytes


def run_inline(spec: JobSpec, artifact: bytes, keys: list[str]) -> JobOutput:
    """Route and deliver the objects ``keys`` (sorted) in this process, with the tasks' own code.

    Holds every result of the hour in memory between the two stages: for tests and small hours.
    """
    plan = _Local(artifact)
    routed = sorted(route_partition(spec, plan, enumerate(keys)), key=lambda record: record[0])
    return _output(value for _, value in deliver_partition(spec, routed, plan))


@contextmanager
def tagged(spark: Any, tag: str) -> Iterator[None]:
    """Tag the operations this thread starts on ``spark`` within the block, so :func:`interrupt`
    can cancel them from another thread (the lease heartbeat's).

    Connect: a session operation tag (``addTag``). Classic: a job tag of the context as well,
    because a classic session's tags are per thread (``interruptTag`` called from another
    thread finds none of them), while ``cancelJobsWithTag`` cancels from anywhere.
    """
    if is_connect(spark):
        spark.addTag(tag)
        try:
            yield
        finally:
            spark.removeTag(tag)
        return
    context = spark.sparkContext
    context.addJobTag(tag)
    try:
        yield
    finally:
        context.removeJobTag(tag)


def interrupt(spark: Any, tag: str) -> None:
    """Cancel the running operations :func:`tagged` ``tag`` on ``spark`` (from any thread)."""
    if is_connect(spark):
        spark.interruptTag(tag)
    else:
        spark.sparkContext.cancelJobsWithTag(tag)


@contextmanager
def session_conf(spark: Any, conf: Mapping[str, str]) -> Iterator[None]:
    """Runtime SQL conf for the block, the session's own values restored after it."""
    before = {key: spark.conf.get(key, None) for key in conf}
    for key, value in conf.items():
        spark.conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


def _conf_reader(spark: Any) -> Any:
    def read(key: str) -> str | None:
        try:
            value = spark.conf.get(key, None)
        except Exception:  # a conf the server will not show: as if unset
            return None
        return None if value is None else str(value)

    return read


def _whole(value: str | None) -> int | None:
    return int(value) if value is not None and value.strip().isdigit() and int(value) > 0 else None


def _output(values: Iterable[object]) -> JobOutput:
    output = JobOutput()
    for value in values:
        if isinstance(value, Delivered):
            output.deliveries.append(value)
        elif isinstance(value, Undelivered):
            output.failures.append(value)
        elif isinstance(value, WitnessReport):
            output.witnesses = value
        else:
            assert isinstance(value, ObjectStats), value
            output.stats.append(value)
    output.deliveries.sort(key=lambda delivered: delivered.subscription_id)
    output.failures.sort(key=lambda failed: failed.subscription_id)
    output.stats.sort(key=lambda stats: stats.ordinal)
    return output
