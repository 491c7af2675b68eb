"""Route one hour of one feed on Spark and record it: the driver's side of ``route-batch``.

1. load the feed's latest plan build (digest-checked) and list the hour's input objects;
2. run the Spark job (:mod:`feedrouter.spark.job`): tasks route the objects, quarantine refused
   messages and write every matching subscription's folder (parts, manifest, ``_SUCCESS``);
3. clean up what earlier runs of the hour left and this one replaces: folders of subscriptions that
   no longer receive anything (withdrawn), quarantine entries of messages that now route;
4. record the ``batches`` and ``deliveries`` rows in one transaction (:mod:`feedrouter.spark.ledger`).

An hour without input objects is an ``empty`` batch (no Spark job). A failure after the plan is
loaded marks the batch ``failed`` with its error and is raised again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from feedrouter.catalog import CompiledPlan, PlanBuildResult, repository
from feedrouter.catalog.artifact import decode
from feedrouter.catalog.models import Feed
from feedrouter.delivery import PlanRef, delivery_dir, format_hour, is_input_key
from feedrouter.delivery.layout import utc_hour
from feedrouter.delivery.parts import DEFAULT_MAX_PART_BYTES
from feedrouter.engine.document import DEFAULT_MAX_BYTES
from feedrouter.spark import ledger
from feedrouter.spark.errors import DeliveryConflictError, NoPlanBuildError
from feedrouter.spark.job import JobOutput, Slicing, run_job
from feedrouter.spark.progress import ProgressCallback
from feedrouter.spark.publish import Delivered, withdraw
from feedrouter.spark.quarantine import prune
from feedrouter.spark.session import batch_session, check_no_speculation
from feedrouter.spark.spec import Fault, JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.storage import ObjectStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("feedrouter.spark")


@dataclass(frozen=True)
class BatchOptions:
    """How to run a batch.

    Attributes:
        master: the Spark master when no session is given (None: ``local[2]``).
        input_tasks, output_tasks: tasks of the routing and the delivery stage (None: by cores).
        max_part_bytes: part files are cut before they pass this size.
        max_message_bytes: larger messages are quarantined unread.
        fault: a test hook (:class:`~feedrouter.spark.spec.Fault`).
    """

    master: str | None = None
    input_tasks: int | None = None
    output_tasks: int | None = None
    max_part_bytes: int = DEFAULT_MAX_PART_BYTES
    max_message_bytes: int = DEFAULT_MAX_BYTES
    fault: Fault | None = None


@dataclass(frozen=True)
class BatchReport:
    """What a batch did; :meth:`summary` is JSON-ready (Airflow's XCom)."""

    batch_id: int
    feed: str
    hour: str
    status: str
    plan_build_id: int
    objects: int
    documents: int
    bytes: int
    matches: int
    deliveries: int
    quarantined: int
    withdrawn: int
    seconds: float

    def summary(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        return (
            f"batch {self.batch_id} of {self.feed} {self.hour} {self.status} with plan build "
            f"{self.plan_build_id}: {self.objects} objects, {self.documents} documents "
            f"({self.bytes} bytes), {self.matches} matches, {self.deliveries} deliveries, "
            f"{self.quarantined} quarantined, {self.withdrawn} withdrawn in {self.seconds:.1f}s"
        )


@dataclass(frozen=True)
class Cleanup:
    """What a run took back from earlier runs of its hour."""

    withdrawn: int = 0  # delivery folders emptied
    pruned: int = 0  # stale quarantine objects deleted
    rows: tuple[ledger.DeliveryRow, ...] = ()  # ledger rows of withdrawn, no longer served ones


@dataclass(frozen=True)
class LoadedPlan:
    """The feed's latest plan build: its row, artifact bytes (to broadcast) and decoded plan."""

    feed_id: int
    build: PlanBuildResult
    artifact: bytes
    plan: CompiledPlan

    @property
    def ref(self) -> PlanRef:
        return PlanRef(self.build.id, self.build.digest, self.build.catalog_version)


def route_batch(
    engine: Engine,
    feed: str,
    hour: datetime,
    *,
    plans_store: ObjectStore,
    spark: SparkSession | None = None,
    options: BatchOptions | None = None,
    stores: StoreOpener | None = None,
    progress: ProgressCallback | None = None,
) -> BatchReport:
    """Route ``feed``'s ``hour`` with its latest plan build, deliver, and record the ledger.

    Args:
        engine: the catalog.
        feed: the feed's name.
        hour: the hour (UTC; naive values are taken as UTC).
        plans_store: where plan artifacts live.
        spark: a running session; None: the running one, else a new one on ``options.master``.
        options: tasks, part size, message limit.
        stores: how the driver and the tasks open stores (default: S3 settings from the environment).
        progress: called with (finished tasks, all tasks) while the job runs.

    Raises:
        NoPlanBuildError: [FR601] the feed has no plan build.
        CatalogError: [FR400] no such feed. CompileError: [FR305] the artifact was refused.
        DeliveryConflictError: [FR602] two subscriptions share a folder.
        BatchBusyError: [FR605] another run of the hour is in progress (transient).
        SparkVersionError: [FR603] pyspark does not match its JVM, or speculation is on.
        StorageError: the stores failed (TransientStorageError: a retry may help).
    """
    started, clock = datetime.now(timezone.utc), time.perf_counter()
    options, stores = options or BatchOptions(), stores or StoreOpener.from_env()
    loaded = load_plan_build(engine, feed, plans_store)
    check_targets(loaded.plan)
    spec = job_spec(loaded, utc_hour(hour), stores, options)
    with ledger.hour_lock(engine, feed, spec.hour):
        try:
            keys = list_inputs(stores.open(spec.input_uri))
            output = _run(spec, loaded, keys, spark, options, progress) if keys else JobOutput()
            cleanup = _clean_up(engine, spec, loaded, output)
            entry = _entry(spec, loaded, keys, output, cleanup.rows, started)
            batch_id = ledger.record(engine, entry)
        except Exception as exc:
            _record_failure(engine, spec, loaded, started, exc)
            raise
    report = _report(batch_id, spec, entry, keys, output, cleanup.withdrawn, time.perf_counter() - clock)
    log.info("%s", report.describe())
    return report


def load_plan_build(engine: Engine, feed: str, plans_store: ObjectStore) -> LoadedPlan:
    """The feed's latest plan build, its artifact checked against the digest the catalog recorded."""
    with engine.connect() as conn:
        record = repository.get_feed(conn, feed)
        build = repository.latest_build(conn, feed)
    if build is None:
        raise NoPlanBuildError(
            f"feed {feed!r} has no plan build: run `feedrouter build-plan --feed {feed}` first"
        )
    artifact = plans_store.get(plans_store.key_of(build.artifact_uri))
    return LoadedPlan(record.id, build, artifact, decode(artifact, build.digest, source=build.artifact_uri))


def check_targets(plan: CompiledPlan) -> None:
    """Refuse a plan in which two subscriptions would write one folder (same prefix and name)."""
    seen: dict[tuple[str, str], str] = {}
    for target in plan.targets.values():
        where = (target.output_prefix.rstrip("/"), target.subscription)
        other = seen.setdefault(where, target.subscriber)
        if other != target.subscriber:
            raise DeliveryConflictError(
                f"subscribers {other!r} and {target.subscriber!r} both deliver subscription "
                f"{target.subscription!r} to {where[0]}: give them distinct output prefixes"
            )


def job_spec(loaded: LoadedPlan, hour: datetime, stores: StoreOpener, options: BatchOptions) -> JobSpec:
    """The tasks' view of the batch; prefixes come from the feed as the plan build saw it."""
    feed = loaded.plan.feed
    layout = Feed(input_prefix=feed.input_prefix, layout=feed.layout)
    quarantine = feed.quarantine_prefix or f"{feed.input_prefix.rstrip('/')}/_quarantine"
    return JobSpec(
        feed=feed.name,
        hour=hour,
        input_uri=layout.batch_prefix(hour),
        quarantine_uri=quarantine,
        plan=loaded.ref,
        stores=stores,
        max_part_bytes=options.max_part_bytes,
        max_message_bytes=options.max_message_bytes,
        fault=options.fault,
    )


def list_inputs(store: ObjectStore) -> list[str]:
    """The hour's input keys in order; a prefix with nothing under it is an empty hour."""
    return sorted(key for key in store.list("") if is_input_key(key))


def _run(
    spec: JobSpec,
    loaded: LoadedPlan,
    keys: list[str],
    spark: SparkSession | None,
    options: BatchOptions,
    progress: ProgressCallback | None,
) -> JobOutput:
    with batch_session(spark, options.master) as session:
        check_no_speculation(session)
        slicing = Slicing.default(session.sparkContext, len(keys), options.input_tasks, options.output_tasks)
        log.info("routing %d objects of %s %s in %s", len(keys), spec.feed, spec.hour_text, slicing)
        return run_job(session, spec, loaded.artifact, keys, slicing, progress)


def _clean_up(engine: Engine, spec: JobSpec, loaded: LoadedPlan, output: JobOutput) -> Cleanup:
    """Withdraw folders that earlier runs of the hour filled and this one does not; prune stale
    quarantine entries. Subscriptions the plan no longer serves get a ledger row saying so."""
    with engine.connect() as conn:
        prior = ledger.prior_deliveries(conn, loaded.feed_id, spec.hour)
    current = {(d.prefix_uri, d.folder) for d in output.deliveries}
    served = {(t.subscriber, t.subscription) for t in loaded.plan.targets.values()}
    withdrawn, rows = 0, []
    for (subscriber, subscription), delivery in prior.items():
        where = _location(delivery.object_keys, subscription, spec)
        if where is None or where in current:
            continue
        withdraw(spec.stores.open(where[0]), where[1])
        withdrawn += 1
        if (subscriber, subscription) not in served:
            rows.append(ledger.DeliveryRow(delivery.subscription_id, subscriber, subscription))
    keep = (key for stats in output.stats for key in stats.quarantine_keys)
    pruned = prune(spec.stores.open(spec.quarantine_uri), spec.feed, spec.hour, keep)
    return Cleanup(withdrawn, pruned, tuple(rows))


def _location(object_keys: Iterable[str], subscription: str, spec: JobSpec) -> tuple[str, str] | None:
    """(output prefix URI, folder key) of a recorded delivery, or None when it had no objects."""
    first = next(iter(object_keys), None)
    if first is None:
        return None
    folder = delivery_dir(subscription, spec.feed, spec.hour)
    cut = first.find(f"/{folder}/")
    return (first[:cut], folder) if cut > 0 else None


def _entry(
    spec: JobSpec,
    loaded: LoadedPlan,
    keys: list[str],
    output: JobOutput,
    withdrawn: Iterable[ledger.DeliveryRow],
    started: datetime,
) -> ledger.BatchEntry:
    stats = output.stats
    return ledger.BatchEntry(
        feed_id=loaded.feed_id,
        hour=spec.hour,
        plan_build_id=loaded.build.id,
        status="succeeded" if keys else "empty",
        started_at=started,
        finished_at=datetime.now(timezone.utc),
        documents=sum(s.documents for s in stats),
        bytes=sum(s.bytes for s in stats),
        quarantined=sum(s.quarantined for s in stats),
        deliveries=(*_delivery_rows(loaded.plan, output.deliveries), *withdrawn),
    )


def _delivery_rows(plan: CompiledPlan, deliveries: list[Delivered]) -> list[ledger.DeliveryRow]:
    """One row per served subscription: what it received, or nothing."""
    delivered = {d.router_id: d for d in deliveries}
    rows = []
    for sid, target in sorted(plan.targets.items(), key=lambda item: item[1].subscription_id):
        found = delivered.get(sid)
        names = (target.subscription_id, target.subscriber, target.subscription)
        if found is None:
            rows.append(ledger.DeliveryRow(*names))
            continue
        manifest = found.manifest
        rows.append(
            ledger.DeliveryRow(*names, found.object_uris, manifest.results, manifest.bytes, manifest.digest)
        )
    return rows


def _record_failure(
    engine: Engine, spec: JobSpec, loaded: LoadedPlan, started: datetime, exc: Exception
) -> None:
    entry = ledger.BatchEntry(
        feed_id=loaded.feed_id,
        hour=spec.hour,
        plan_build_id=loaded.build.id,
        status="failed",
        started_at=started,
        finished_at=datetime.now(timezone.utc),
        error_message=f"{type(exc).__name__}: {exc}"[:4000],
    )
    try:
        ledger.record_failure(engine, entry)
    except Exception:  # the original error matters more than the failed bookkeeping
        log.exception("could not record the failure of %s %s in the ledger", spec.feed, spec.hour_text)


def _report(
    batch_id: int,
    spec: JobSpec,
    entry: ledger.BatchEntry,
    keys: list[str],
    output: JobOutput,
    withdrawn: int,
    seconds: float,
) -> BatchReport:
    return BatchReport(
        batch_id=batch_id,
        feed=spec.feed,
        hour=format_hour(spec.hour),
        status=entry.status,
        plan_build_id=entry.plan_build_id,
        objects=len(keys),
        documents=entry.documents,
        bytes=entry.bytes,
        matches=sum(s.matches for s in output.stats),
        deliveries=len(output.deliveries),
        quarantined=entry.quarantined,
        withdrawn=withdrawn,
        seconds=round(seconds, 3),
    )
