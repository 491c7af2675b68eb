"""Route one hour of one feed on Spark and record it: the driver's side of ``route-batch``.

1. load the feed's latest plan build (digest-checked), take the hour's lease
   (:mod:`feedrouter.spark.lease`), list the hour's input objects (once: the listing is passed on)
   and commit the batch as ``running``;
2. run the Spark job (:mod:`feedrouter.spark.job`): tasks route the objects, quarantine refused
   messages and write every matching subscription's folder (parts, manifest, ``_SUCCESS``); a
   subscriber whose store refuses the writes gets a ``failed`` delivery row, the others go on;
3. reconcile the store with what earlier runs of the hour left and this one replaces: folders of
   subscriptions that no longer receive anything are withdrawn, whether a finished run recorded
   them or a killed or failed run left them unrecorded; quarantine entries of messages that now
   route are pruned;
4. record the ``batches`` and ``deliveries`` rows in one transaction (:mod:`feedrouter.catalog.ledger`)
   that also checks the lease is still this run's.

An hour without input objects is an ``empty`` batch (no Spark job). A failure after the plan is
loaded marks the batch ``failed`` with its error and is raised again; a run that lost its lease
(LockLostError) writes nothing more, and its running Spark operations are interrupted by their job
tag (:class:`~feedrouter.spark.lease.JobCanceller`). Log records of a run carry its feed, hour and
batch id as fields (:mod:`feedrouter.spark.batchlog`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

from feedrouter.catalog import PlanBuildResult, PlanSummary, Target, ledger, repository
from feedrouter.catalog import lease as leases
from feedrouter.catalog.artifact import decode_summary
from feedrouter.catalog.joins import JoinsOfFeed
from feedrouter.catalog.settings import state_uri
from feedrouter.delivery import PlanRef, delivery_dir, is_input_key
from feedrouter.delivery.parts import DEFAULT_MAX_PART_BYTES
from feedrouter.engine.document import DEFAULT_MAX_BYTES
from feedrouter.errors import (
    FeedrouterError,
    LockLostError,
    StorageError,
    TransientStorageError,
    error,
)
from feedrouter.hours import batch_prefix, format_hour, to_hour
from feedrouter.join.relations import HourWitnesses
from feedrouter.spark.batchlog import batch_fields, log, set_batch_id
from feedrouter.spark.errors import DeliveryConflictError
from feedrouter.spark.job import JobOutput, Slicing, job_tag, run_inline, run_job
from feedrouter.spark.lease import JobCanceller, hour_lock
from feedrouter.spark.progress import ProgressCallback
from feedrouter.spark.publish import Delivered, withdraw
from feedrouter.spark.quarantine import prune
from feedrouter.spark.session import batch_session, check_no_speculation
from feedrouter.spark.spec import ArtifactRef, Fault, JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.tasks import Undelivered, write_witness_hour
from feedrouter.spark.witnesses import coverage, plan_coverage
from feedrouter.storage import ObjectStore

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: Opens the Spark session of a batch that has input (a caller's own, e.g. with worker settings).
SessionFactory = Callable[[], AbstractContextManager["SparkSession"]]


@dataclass(frozen=True)
class BatchOptions:
    """How to run a batch.

    Attributes:
        master: the Spark master when no session is given (None: ``local[2]``).
        input_tasks, output_tasks: tasks of the routing and the delivery stage (None: by cores).
        max_part_bytes: part files are cut before they pass this size.
        max_message_bytes: larger messages are quarantined unread.
        lease_seconds: how long the hour's lease lives without a renewal (renewed every third of it
            while the run goes on); a run stalled longer can be overtaken and then commits nothing.
        inline: run the tasks' code in this process without Spark (tests, small hours).
        fault: a test hook (:class:`~feedrouter.spark.spec.Fault`).
        state_uri: where the hour's join witnesses go when the plan has join blocks (None: the
            ``FEEDROUTER_STATE_URI`` setting).
    """

    master: str | None = None
    input_tasks: int | None = None
    output_tasks: int | None = None
    max_part_bytes: int = DEFAULT_MAX_PART_BYTES
    max_message_bytes: int = DEFAULT_MAX_BYTES
    lease_seconds: float = leases.DEFAULT_LEASE_SECONDS
    inline: bool = False
    fault: Fault | None = None
    state_uri: str | None = None


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
    refused: int = 0  # (message, subscription) pairs refused a result, reported in the quarantine
    failed: int = 0
    #: "subscriber/subscription: [code] reason" of each delivery the store refused.
    failures: tuple[str, ...] = field(default=(), repr=False)

    def summary(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        text = (
            f"batch {self.batch_id} of {self.feed} {self.hour} {self.status} with plan build "
            f"{self.plan_build_id}: {self.objects} objects, {self.documents} documents "
            f"({self.bytes} bytes), {self.matches} matches, {self.deliveries} deliveries, "
            f"{self.quarantined} quarantined, {self.withdrawn} withdrawn in {self.seconds:.1f}s"
        )
        if self.refused:
            text += f"; {self.refused} results refused (reports in the quarantine)"
        if self.failed:
            text += f"; {self.failed} deliveries failed [FR607] (retried by the next run of the hour)"
        return text


@dataclass(frozen=True)
class Cleanup:
    """What a run took back from earlier runs of its hour."""

    withdrawn: int = 0  # delivery folders emptied
    pruned: int = 0  # stale quarantine objects deleted
    rows: tuple[ledger.DeliveryRow, ...] = ()  # ledger rows of withdrawn, no longer served ones


@dataclass(frozen=True)
class EarlierRuns:
    """What the ledger knew of the hour before this run started: where recorded deliveries put
    their folders, and the plan builds of runs that never finished (killed, failed)."""

    recorded: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (subscription, object URIs) per row
    unfinished: frozenset[int] = frozenset()


@dataclass(frozen=True)
class LoadedPlan:
    """The feed's latest plan build: its row, artifact bytes (for in-process runs), where the tasks
    read them, and its summary (the driver reads the feed settings and targets, never the router)."""

    feed_id: int
    build: PlanBuildResult
    artifact: bytes
    plan: PlanSummary
    location: ArtifactRef | None = None

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
    session: SessionFactory | None = None,
) -> BatchReport:
    """Route ``feed``'s ``hour`` with its latest plan build, deliver, and record the ledger.

    Args:
        engine: the catalog.
        feed: the feed's name.
        hour: a whole hour (naive values are taken as UTC).
        plans_store: where plan artifacts live.
        spark: a running session; None: the running one, else a new one on ``options.master``.
        options: tasks, part size, message limit.
        stores: how the driver and the tasks open stores (default: S3 settings from the environment).
        progress: called with (finished tasks, all tasks) while the job runs.
        session: opens the session when the hour has input (instead of ``spark``/``options.master``);
            an empty hour starts no Spark at all.

    Raises:
        HourError: [FR608] ``hour`` is not a whole hour.
        NoPlanBuildError: [FR601] the feed has no plan build.
        CatalogError: [FR405] no such feed. CompileError: [FR305] the artifact was refused.
        DeliveryConflictError: [FR602] two subscriptions share a folder.
        BatchBusyError: [FR605] another run of the hour is in progress (transient).
        LockLostError: [FR606] the run lost the hour's lease; it recorded nothing (transient).
        SparkVersionError: [FR603] pyspark does not match its JVM, or speculation is on.
        StorageError: the stores failed (TransientStorageError: a retry may help). A subscriber's
            store refusing its delivery is not raised: the report and the ledger list it (FR607).
    """
    started, clock = datetime.now(timezone.utc), time.perf_counter()
    hour = to_hour(hour, strict=True)  # before anything is opened: a wrong hour costs nothing
    options, stores = options or BatchOptions(), stores or StoreOpener.from_env()
    with batch_fields(feed, format_hour(hour)):
        loaded = load_plan_build(engine, feed, plans_store)
        check_targets(loaded.plan)
        spec = job_spec(loaded, hour, stores, options)
        cancel = JobCanceller()
        ttl = timedelta(seconds=options.lease_seconds)
        with hour_lock(engine, feed, spec.hour, ttl, on_lost=cancel) as lease:
            try:
                keys = list_inputs(stores.open(spec.input_uri))  # the one listing of the hour's input
                earlier = earlier_runs(engine, loaded.feed_id, spec.hour)
                set_batch_id(ledger.mark_running(engine, _running(spec, loaded, started), lease))
                sessions = session or (lambda: batch_session(spark, options.master))
                output = JobOutput()
                if keys:
                    output = run_routing(spec, loaded, keys, sessions, options, progress, cancel)
                elif spec.state_uri is not None:  # an empty hour has witnesses too: none
                    write_witness_hour(spec, HourWitnesses(spec.feed, spec.hour, spec.witness_blocks))
                # before withdrawing anything: a new holder's folders are its own
                leases.confirm(engine, lease)
                cleanup = _clean_up(engine, spec, loaded, output, earlier, plans_store)
                entry = _entry(spec, loaded, keys, output, cleanup.rows, started)
                batch_id = ledger.record(engine, entry, lease)
            except Exception as exc:
                _record_failure(engine, spec, loaded, started, exc, lease)
                raise
        report = _report(batch_id, spec, entry, keys, output, cleanup.withdrawn, time.perf_counter() - clock)
        log.info("%s", report.describe())
    return report


def earlier_runs(engine: Engine, feed_id: int, hour: datetime) -> EarlierRuns:
    """What the ledger knows of the hour's earlier runs (read before this run marks itself running)."""
    with engine.connect() as conn:
        recorded = ledger.recorded_deliveries(conn, feed_id, hour)
        unfinished = ledger.unfinished_builds(conn, feed_id, hour)
    return EarlierRuns(tuple(recorded), frozenset(unfinished))


def load_plan_build(engine: Engine, feed: str, plans_store: ObjectStore) -> LoadedPlan:
    """The feed's latest plan build, its artifact checked against the digest the catalog recorded.

    Raises:
        CatalogError: [FR405] no such feed. NoPlanBuildError: [FR601] the feed has no plan build.
    """
    with engine.connect() as conn:
        record = repository.require_feed(conn, feed)
        build = repository.require_plan_build(conn, feed)
    artifact = plans_store.get(plans_store.key_of(build.artifact_uri))
    # the artifact must be this feed's: a plan_builds row pointed at another feed's file is refused
    plan = decode_summary(artifact, build.digest, source=build.artifact_uri, feed=feed, feed_id=record.id)
    location = ArtifactRef(plans_store.uri, plans_store.key_of(build.artifact_uri))
    return LoadedPlan(record.id, build, artifact, plan, location)


def check_targets(plan: PlanSummary) -> None:
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
    joins = loaded.plan.joins
    state = (options.state_uri or state_uri()) if joins is not None and joins.blocks else None
    return JobSpec(
        feed=feed.name,
        hour=hour,
        input_uri=batch_prefix(feed.layout, feed.input_prefix, hour),
        quarantine_uri=feed.quarantine_uri,
        plan=loaded.ref,
        stores=stores,
        max_part_bytes=options.max_part_bytes,
        max_message_bytes=options.max_message_bytes,
        fault=options.fault,
        targets=loaded.plan.targets,  # the delivery tasks read their targets here, not from the plan
        artifact=loaded.location,  # the routing tasks read the plan from the plans store
        state_uri=state,
        witness_blocks=joins.blocks if state is not None and joins is not None else (),
        witness_coverage=(
            coverage(joins.specs[b] for b in joins.blocks) if state is not None and joins is not None else ()
        ),
        witness_roots=witness_roots(joins) if state is not None and joins is not None else (),
        witness_plans=plan_coverage(joins.witnessing) if state is not None and joins is not None else (),
    )


def witness_roots(joins: JoinsOfFeed) -> tuple[tuple[str, str], ...]:
    """Per block the feed's router computes, the witness plan it is filed from (:meth:`~feedrouter.
    join.selections.WitnessPlans.roots`), as an hour of format 2 records it."""
    roots = joins.witnessing.roots()
    return tuple(sorted((block, roots[block]) for block in joins.blocks))


def list_inputs(store: ObjectStore) -> list[str]:
    """The hour's input keys in order; a prefix with nothing under it is an empty hour."""
    return sorted(key for key in store.list("") if is_input_key(key))


def run_routing(
    spec: JobSpec,
    loaded: LoadedPlan,
    keys: list[str],
    sessions: SessionFactory,
    options: BatchOptions,
    progress: ProgressCallback | None,
    cancel: JobCanceller | None = None,
) -> JobOutput:
    if options.inline:
        log.info("routing %d objects of %s %s in this process", len(keys), spec.feed, spec.hour_text)
        return run_inline(spec, loaded.artifact, keys)
    cancel = cancel or JobCanceller()
    with sessions() as session:
        check_no_speculation(session)
        slicing = Slicing.default(session, len(keys), options.input_tasks, options.output_tasks)
        tag = job_tag(spec)
        log.info(
            "routing %d objects of %s %s in %s (tag %s)", len(keys), spec.feed, spec.hour_text, slicing, tag
        )
        try:
            with cancel.armed(session, tag):
                check_held(spec, cancel)
                return run_job(session, spec, keys, slicing, progress, tag)
        except Exception as exc:
            check_held(spec, cancel, exc)
            raised = task_error(exc)
            if raised is None:
                raise
            raise raised from exc


def check_held(spec: JobSpec, cancel: JobCanceller, cause: Exception | None = None) -> None:
    """Raise LockLostError (FR606, transient) once the run's lease was lost: its Spark operations
    were interrupted (or must not start)."""
    if cancel.fired.is_set() and not isinstance(cause, LockLostError):
        lost = error("FR606", f"the run of {spec.feed} {spec.hour_text} lost its hour lease to another run")
        raise lost from cause


#: The last line of a Python traceback that ends in one of feedrouter's errors.
_TASK_ERROR = re.compile(r"feedrouter\.errors\.\w+: (?:[^\n]*?)\[(FR\d{3})\] ([^\n]*)")


def task_error(exc: BaseException) -> FeedrouterError | None:
    """The feedrouter error a Spark task died of, rebuilt on the driver with its code and class
    (so a task's TransientStorageError is still transient here), or None for any other failure."""
    if isinstance(exc, FeedrouterError):
        return None
    found = _TASK_ERROR.findall(str(exc))
    if not found:
        return None
    code, message = found[-1]
    try:
        return error(code, f"a Spark task failed: {message}")
    except ValueError:  # a code this driver does not know: leave the error as it is
        return None


def _clean_up(
    engine: Engine,
    spec: JobSpec,
    loaded: LoadedPlan,
    output: JobOutput,
    earlier: EarlierRuns,
    plans_store: ObjectStore,
) -> Cleanup:
    """Reconcile the hour's folders with this run: withdraw every folder that an earlier run of the
    hour filled (recorded or not) and this one does not; prune stale quarantine entries.
    Subscriptions the plan no longer serves get a ledger row saying so."""
    with engine.connect() as conn:
        prior = ledger.prior_deliveries(conn, loaded.feed_id, spec.hour)
    current = {(d.prefix_uri, d.folder) for d in output.deliveries} | _join_folders(spec, loaded)
    withdrawn = 0
    for prefix, folder in sorted(_candidates(engine, spec, loaded, earlier, plans_store) - current):
        withdrawn += _withdraw_if_present(spec, prefix, folder)
    served = {(t.subscriber, t.subscription) for t in loaded.plan.targets.values()}
    served |= {(t.subscriber, t.subscription) for t in _join_targets(loaded.plan).values()}
    rows = [
        ledger.DeliveryRow(delivery.catalog_id, subscriber, subscription)
        for (subscriber, subscription), delivery in prior.items()
        if (subscriber, subscription) not in served and (delivery.object_keys or delivery.status == "failed")
    ]
    keep = (key for stats in output.stats for key in stats.quarantine_keys)
    pruned = prune(spec.stores.open(spec.quarantine_uri), spec.feed, spec.hour, keep)
    return Cleanup(withdrawn, pruned, tuple(rows))


def _join_targets(plan: PlanSummary) -> dict[str, Target]:
    """The targets of the plan's join subscriptions: the join stage delivers and records them."""
    joins = plan.joins
    return {sid: target for sid, target in plan.targets.items() if joins is not None and sid in joins.plans}


def _join_folders(spec: JobSpec, loaded: LoadedPlan) -> set[tuple[str, str]]:
    """The join subscriptions' folders of the hour: the join stage's, never withdrawn here."""
    found = set()
    for target in _join_targets(loaded.plan).values():
        uri = _store_uri(spec, target.output_prefix.rstrip("/"))
        if uri is not None:
            found.add((uri, delivery_dir(target.subscription, spec.feed, spec.hour)))
    return found


def _candidates(
    engine: Engine, spec: JobSpec, loaded: LoadedPlan, earlier: EarlierRuns, plans_store: ObjectStore
) -> set[tuple[str, str]]:
    """(store URI, folder) of every folder an earlier run of the hour may have filled: those its
    recorded deliveries name and, when a run never finished, every target of its plan build and of
    this one (it may have written any of them before it died, unrecorded)."""
    places = []
    for subscription, object_keys in earlier.recorded:
        where = _location(object_keys, subscription, spec)
        if where is not None:
            places.append(where)
    if earlier.unfinished:
        others = earlier.unfinished - {loaded.build.id}
        for plan in [loaded.plan, *_plans_of(engine, others, spec, plans_store)]:
            for target in plan.targets.values():
                folder = delivery_dir(target.subscription, spec.feed, spec.hour)
                places.append((target.output_prefix.rstrip("/"), folder))
    found = set()
    for prefix, folder in places:
        uri = _store_uri(spec, prefix)
        if uri is not None:
            found.add((uri, folder))
    return found


def _store_uri(spec: JobSpec, prefix: str) -> str | None:
    """The canonical URI of the store at ``prefix`` (how tasks name it), or None for a prefix that
    can no longer be opened (refused since: nothing this run could write there)."""
    try:
        return spec.stores.open(prefix).uri
    except TransientStorageError:
        raise
    except StorageError as exc:
        log.warning("not reconciling %s: %s", prefix, exc)
        return None


def _plans_of(
    engine: Engine, builds: Iterable[int], spec: JobSpec, plans_store: ObjectStore
) -> list[PlanSummary]:
    """The plans of earlier, unfinished runs' builds (their targets may differ from today's)."""
    plans = []
    for build_id in sorted(builds):
        try:
            with engine.connect() as conn:
                uri, digest = repository.build_artifact(conn, build_id)
            data = plans_store.get(plans_store.key_of(uri))
            plans.append(decode_summary(data, digest, source=uri, feed=spec.feed))
        except Exception as exc:  # a deleted build: the recorded rows and today's targets remain
            log.warning(
                "cannot read plan build %d to reconcile %s %s: %s", build_id, spec.feed, spec.hour_text, exc
            )
    return plans


def _withdraw_if_present(spec: JobSpec, prefix: str, folder: str) -> int:
    """Withdraw ``folder`` under ``prefix`` if anything is in it; 1 if it was, else 0.

    A subscriber's store that refuses us (terminal) is logged and skipped: nothing can be in a
    missing bucket, and its delivery row says what happened. A transient error fails the batch.
    """
    try:
        store = spec.stores.open(prefix)
        if not any(True for _ in store.list(folder + "/")):
            return 0
        withdraw(store, folder)
        return 1
    except TransientStorageError:
        raise
    except StorageError as exc:
        log.warning("cannot reconcile %s/%s: %s", prefix, folder, exc)
        return 0


def _location(object_keys: Iterable[str], subscription: str, spec: JobSpec) -> tuple[str, str] | None:
    """(output prefix URI, folder key) of a recorded delivery, or None when it had no objects."""
    first = next(iter(object_keys), None)
    if first is None:
        return None
    folder = delivery_dir(subscription, spec.feed, spec.hour)
    cut = first.find(f"/{folder}/")
    return (first[:cut], folder) if cut > 0 else None


def _running(spec: JobSpec, loaded: LoadedPlan, started: datetime) -> ledger.BatchEntry:
    return ledger.BatchEntry(
        feed_id=loaded.feed_id,
        hour=spec.hour,
        plan_build_id=loaded.build.id,
        status="running",
        started_at=started,
        finished_at=None,
    )


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
        untimed=output.witnesses.messages - output.witnesses.timed if output.witnesses else 0,
        deliveries=(*_delivery_rows(loaded.plan, output.deliveries, output.failures), *withdrawn),
    )


def _delivery_rows(
    plan: PlanSummary, deliveries: list[Delivered], failures: Iterable[Undelivered] = ()
) -> list[ledger.DeliveryRow]:
    """One row per served subscription: what it received, nothing, or why its store refused it."""
    delivered = {d.subscription_id: d for d in deliveries}
    failed = {f.subscription_id: f for f in failures}
    joins = _join_targets(plan)
    rows = []
    for sid, target in sorted(plan.targets.items(), key=lambda item: item[1].catalog_id):
        if sid in joins:
            continue  # the join stage records its own
        found = delivered.get(sid)
        names = (target.catalog_id, target.subscriber, target.subscription)
        if sid in failed:
            rows.append(failed[sid].ledger_row(target.catalog_id))
            continue
        if found is None:
            rows.append(ledger.DeliveryRow(*names))
            continue
        manifest = found.manifest
        rows.append(
            ledger.DeliveryRow(*names, found.object_uris, manifest.results, manifest.bytes, manifest.digest)
        )
    return rows


def _record_failure(
    engine: Engine,
    spec: JobSpec,
    loaded: LoadedPlan,
    started: datetime,
    exc: Exception,
    lease: leases.Lease | None = None,
) -> None:
    if isinstance(exc, LockLostError):
        return  # the hour is another run's now: its ledger rows are not ours to touch
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
        ledger.record_failure(engine, entry, lease)
    except LockLostError as lost:
        log.warning("not recording the failure of %s %s: %s", spec.feed, spec.hour_text, lost)
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
        refused=sum(s.refused for s in output.stats),
        failed=len(output.failures),
        failures=tuple(
            f"{f.subscriber}/{f.subscription}: [{f.code}] {f.reason.splitlines()[0]}" for f in output.failures
        ),
    )
