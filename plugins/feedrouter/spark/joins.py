"""The join stage of one feed's hour (issue 16, paper 001's stage 2), after the hour is routed.

1. load the feed's latest plan build; nothing to do when it has no join subscription;
2. check that the witnesses of every hour the window reaches back to are written, for every feed
   the joins read, and cover the blocks they need: the stage waits for the *witnesses* of earlier
   hours (stage 1), never for their join results, so hours routed out of order or caught up give
   the same deliveries (:class:`WitnessesNotReady` says what is missing: a transient error, retried);
   an hour routed before a block existed lacks it and is back-filled (:class:`BackfillNeeded`);
3. under the hour's lease (a re-run of the hour's routing never overlaps it), run stage 2
   (:class:`~feedrouter.join.stage.JoinStage`) and write each join subscription's folder with the
   protocol of every delivery (:func:`~feedrouter.spark.publish.publish`), one result per pair
   with both messages' provenance (part format 2); a subscription past its cap of pairs gets no
   folder and a ``withheld`` ledger row saying why;
4. record the join subscriptions' delivery rows in the hour's batch (routed by the same build).

Re-runs write the same bytes and add no delivery version.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

from feedrouter.catalog import ledger
from feedrouter.catalog.joins import JoinsOfFeed
from feedrouter.catalog.settings import state_uri
from feedrouter.delivery import Result, delivery_dir
from feedrouter.delivery.parts import Provenance
from feedrouter.errors import error
from feedrouter.hours import format_hour, to_hour
from feedrouter.join.relations import ONE_HOUR, HourWitnesses
from feedrouter.join.stage import DEFAULT_MAX_PAIRS, JoinDelivery, JoinStage, NodeRef, Pair
from feedrouter.spark.backfill import backfill_witnesses
from feedrouter.spark.batch import BatchOptions, LoadedPlan, job_spec, load_plan_build, task_error
from feedrouter.spark.batchlog import batch_fields, log
from feedrouter.spark.joinparts import partitioned_pairs
from feedrouter.spark.joinsql import WitnessSource, spark_pairs
from feedrouter.spark.lease import hour_lock
from feedrouter.spark.publish import publish, withdraw
from feedrouter.spark.session import batch_session
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.witnesses import DELIVERY_TABLES, blocks_of_hour, read_hour, read_joinable
from feedrouter.storage import ObjectStore


@dataclass(frozen=True)
class JoinOptions:
    """How to run a join stage: where witnesses are, the per-subscription cap of pairs per hour,
    the part size and the hour's lease (as :class:`~feedrouter.spark.batch.BatchOptions`).

    ``stream_start``: the first hour that is ever routed; a window reaching before it finds no
    witnesses there and does not wait for them (None: ``FEEDROUTER_ROUTE_START``, the route DAG's
    first hour, which catchup routes every hour from).
    """

    state_uri: str | None = None
    stream_start: datetime | None = None
    #: where the pairs are computed, each engine giving the same: "partitioned", the shared stage
    #: on Spark's executors, the subscriptions partitioned by value slice
    #: (:mod:`feedrouter.spark.joinparts`); "spark", one Spark SQL query per template
    #: (:mod:`feedrouter.spark.joinsql`); "python", in this process
    #: (:class:`~feedrouter.join.stage.JoinStage`)
    engine: str = "partitioned"
    master: str | None = None  # the Spark master when no session is given (None: local[2])
    #: how an hour lacking a block is back-filled (stage 1 again, witnesses only); None: refuse
    #: with FR610 and leave it to the caller
    backfill: BatchOptions | None = None
    max_pairs: int = DEFAULT_MAX_PAIRS
    max_part_bytes: int | None = None
    lease_seconds: float | None = None
    #: join subscriptions' folders written at once (:func:`_deliver_all`)
    delivery_threads: int = 8


@dataclass(frozen=True)
class JoinReport:
    """What a join stage did; :meth:`summary` is JSON-ready (Airflow's XCom)."""

    feed: str
    hour: str
    status: str  # "joined", or "no-joins" when the plan has no join subscription
    plan_build_id: int
    subscriptions: int = 0
    pairs: int = 0
    deliveries: int = 0
    withheld: tuple[str, ...] = field(default=(), repr=False)
    seconds: float = 0.0
    engine: str = ""  # the engine that computed the pairs ("" when the plan has no join subscription)

    def summary(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        text = (
            f"join stage of {self.feed} {self.hour} with plan build {self.plan_build_id}: {self.status}, "
            f"{self.subscriptions} join subscriptions, {self.pairs} pairs, {self.deliveries} deliveries"
        )
        if self.withheld:
            text += f"; withheld (past the pair cap): {', '.join(self.withheld)}"
        return text


def join_batch(
    engine: Engine,
    feed: str,
    hour: datetime,
    *,
    plans_store: ObjectStore,
    stores: StoreOpener | None = None,
    options: JoinOptions | None = None,
    spark: SparkSession | None = None,
) -> JoinReport:
    """Run the join stage of ``feed``'s ``hour`` with its latest plan build and record it.

    Raises:
        WitnessesNotReady: [FR609] the witnesses of an hour of the window are not written yet
            (transient: retried until stage 1 of that hour has run).
        BackfillNeeded: [FR610] an hour's witnesses lack a block (routed before the block
            existed): back-fill the hour's witnesses (:func:`feedrouter.spark.backfill.backfill`).
        NoPlanBuildError, CatalogError, LockLostError, StorageError: as :func:`route_batch`.
    """
    clock = time.perf_counter()
    hour = to_hour(hour, strict=True)
    options, stores = options or JoinOptions(), stores or StoreOpener.from_env()
    with batch_fields(feed, format_hour(hour)):
        loaded = load_plan_build(engine, feed, plans_store)
        joins = loaded.plan.joins
        if joins is None or not joins.plans:
            return JoinReport(feed, format_hour(hour), "no-joins", loaded.build.id)
        source = WitnessSource(stores, options.state_uri or state_uri())
        state = stores.open(source.state_uri)
        start = options.stream_start or _route_start()
        lateness = loaded.plan.feed.allowed_lateness
        routed = _routed_hours(engine)
        lacking = check_witnesses(state, joins, lateness, hour, start, routed)
        if lacking and options.backfill is not None:
            backfill = replace(options.backfill, state_uri=options.state_uri)
            for name, when in lacking:
                backfill_witnesses(
                    engine, name, when, plans_store=plans_store, options=backfill, stores=stores
                )
            lacking = check_witnesses(state, joins, lateness, hour, start, routed)
        if lacking:
            hours = ", ".join(f"{name} {format_hour(when)}" for name, when in lacking)
            raise error("FR610", f"back-fill the join witnesses of {hours}: routed before blocks they need")
        spec = _spec(loaded, hour, stores, options)
        ttl = timedelta(seconds=options.lease_seconds or 600.0)
        with hour_lock(engine, feed, hour, ttl) as lease:
            batch_id = _routed_batch(engine, loaded, hour)
            stage = JoinStage(
                joins.plans.values(),
                joins.specs,
                lateness=loaded.plan.feed.allowed_lateness,
                max_pairs=options.max_pairs,
            )
            # every engine reads the relations it pairs from itself (as columns): here, what delivery needs
            witnesses = _Witnesses(state)
            pairs = _pairs(stage, hour, witnesses, source, options, spark)
            deliveries = stage.deliveries(hour, witnesses.read, pairs, order=_numeric)
            rows, paired = _deliver_all(spec, loaded, deliveries, witnesses, options.delivery_threads)
            ledger.record_deliveries(engine, batch_id, loaded.feed_id, hour, rows, lease)
    report = JoinReport(
        feed,
        format_hour(hour),
        "joined",
        loaded.build.id,
        subscriptions=len(rows),
        pairs=paired,
        deliveries=sum(1 for row in rows if row.result_count),
        withheld=tuple(sorted(row.subscription for row in rows if row.status == "withheld")),
        engine=options.engine,
        seconds=round(time.perf_counter() - clock, 3),
    )
    log.info("%s", report.describe())
    return report


def _pairs(
    stage: JoinStage,
    hour: datetime,
    witnesses: _Witnesses,
    source: WitnessSource,
    options: JoinOptions,
    spark: SparkSession | None,
) -> dict[str, list[Pair]]:
    """The hour's pairs of every join subscription, from the engine the options name (Spark's
    executors read the witnesses from the state store themselves; in process, they are read as
    columns, without their fragments)."""
    if options.engine == "python":
        return stage.pairs(hour, witnesses.joinable)
    engines = {"spark": spark_pairs, "partitioned": partitioned_pairs}
    if options.engine not in engines:
        raise ValueError(f"no join engine {options.engine!r}: partitioned, spark or python")
    with batch_session(spark, options.master) as session:
        try:
            return engines[options.engine](
                session, stage.plans, hour, source, stage.lateness, options.max_pairs
            )
        except Exception as exc:
            # a task's error, rebuilt with its code and class: a damaged witness hour (FR611) is
            # terminal and says what to do, a store that is down (transient) is retried
            raised = task_error(exc)
            if raised is not None:
                raise raised from exc
            raise


def window_hours(
    joins: JoinsOfFeed, lateness: timedelta, hour: datetime
) -> dict[tuple[str, datetime], set[str]]:
    """Every (feed, hour) of witnesses the hour's join stage reads, with the blocks it needs there."""
    needed: dict[tuple[str, datetime], set[str]] = {}
    for plan in joins.plans.values():
        back = plan.reach(lateness)
        for feed, block in zip(plan.feeds, plan.blocks, strict=True):
            for k in range(back + 1):
                needed.setdefault((feed, hour - ONE_HOUR * k), set()).add(block)
    return needed


def check_witnesses(
    state: ObjectStore,
    joins: JoinsOfFeed,
    lateness: timedelta,
    hour: datetime,
    start: datetime,
    routed: Callable[[str, datetime], bool] = lambda feed, hour: False,
) -> list[tuple[str, datetime]]:
    """The hours of the window (from ``start`` on) to back-fill: their witnesses lack blocks the
    joins need, or there are none though ``routed`` says the hour was routed (with a plan that had
    no join block). Raises WitnessesNotReady (FR609) when an hour is not routed yet."""
    missing: list[str] = []
    lacking: list[tuple[str, datetime]] = []
    for (feed, when), blocks in sorted(window_hours(joins, lateness, hour).items()):
        if when < start:
            continue  # before the stream: never routed, nothing to wait for
        covered = blocks_of_hour(state, feed, when)
        if covered is None and routed(feed, when):
            lacking.append((feed, when))
        elif covered is None:
            missing.append(f"{feed} {format_hour(when)}")
        elif not blocks <= covered:
            lacking.append((feed, when))
    if missing:
        raise error(
            "FR609", f"waiting for the join witnesses of {', '.join(missing)} (stage 1 of those hours)"
        )
    return lacking


def _routed_hours(engine: Engine) -> Callable[[str, datetime], bool]:
    """Whether a feed's hour has a finished batch (with any plan build): routed, so witnesses of it
    are missing only because that plan had no join block."""

    def routed(feed: str, hour: datetime) -> bool:
        with engine.connect() as conn:
            return ledger.routed_hour(conn, feed, hour)

    return routed


def _route_start() -> datetime:
    from feedrouter.settings import load_settings

    return datetime.combine(load_settings().route_start, datetime.min.time(), tzinfo=timezone.utc)


def _spec(loaded: LoadedPlan, hour: datetime, stores: StoreOpener, options: JoinOptions) -> JobSpec:
    batch = BatchOptions(max_part_bytes=options.max_part_bytes) if options.max_part_bytes else BatchOptions()
    return job_spec(loaded, hour, stores, batch)


def _routed_batch(engine: Engine, loaded: LoadedPlan, hour: datetime) -> int:
    """The hour's routed batch (by this plan build if it did): its delivery rows get the join
    subscriptions'."""
    with engine.connect() as conn:
        batch_id = ledger.finished_batch(conn, loaded.feed_id, hour, loaded.build.id)
    if batch_id is None:
        raise error(
            "FR609",
            f"hour {format_hour(hour)} of {loaded.plan.feed.name} is not routed yet: its join stage "
            "runs after its routing",
        )
    return batch_id


def _deliver_all(
    spec: JobSpec,
    loaded: LoadedPlan,
    deliveries: Iterable[JoinDelivery],
    witnesses: _Witnesses,
    threads: int,
) -> tuple[list[ledger.DeliveryRow], int]:
    """Write every join subscription's folder, ``threads`` at a time (each folder is a few
    object-store writes that wait on the network, and one process writes the hour's folders of
    every join subscription); their ledger rows in the deliveries' order, and the pairs counted.

    The deliveries are drawn as writers free up: the results of at most ``2 * threads``
    subscriptions are held at once. The first failure stops the rest (not started ones are
    cancelled) and is raised: the stage is re-run whole, and re-runs write the same bytes."""
    rows: list[ledger.DeliveryRow] = []
    paired = 0
    with ThreadPoolExecutor(max_workers=max(1, threads), thread_name_prefix="join-delivery") as pool:
        pending: deque[Future[ledger.DeliveryRow]] = deque()
        try:
            for found in deliveries:
                paired += found.count
                pending.append(pool.submit(_deliver, spec, loaded, found, witnesses))
                if len(pending) >= 2 * max(1, threads):
                    rows.append(pending.popleft().result())
            while pending:
                rows.append(pending.popleft().result())
        except BaseException:
            for future in pending:
                future.cancel()
            raise
    return rows, paired


def _deliver(
    spec: JobSpec, loaded: LoadedPlan, found: JoinDelivery, witnesses: _Witnesses
) -> ledger.DeliveryRow:
    """Write one join subscription's folder (or take it back when it has nothing); its ledger row.
    Safe in a writer thread: the witness hours its provenance reads were read for its results."""
    target = loaded.plan.targets[found.sid]
    names = (target.catalog_id, target.subscriber, target.subscription)
    joins = loaded.plan.joins
    assert joins is not None
    plan = joins.plans[found.sid]
    if found.withheld is not None or not found.results:
        _withdraw(spec, target.output_prefix, target.subscription)
        if found.withheld is not None:
            return ledger.DeliveryRow(
                *names, status="withheld", error_code="FR313", error_message=found.withheld
            )
        return ledger.DeliveryRow(*names)
    results = (
        Result.of_pair(
            witnesses.provenance(plan.feeds[0], left), witnesses.provenance(plan.feeds[1], right), body
        )
        for (left, right), body in zip(found.pairs, found.results, strict=True)
    )
    delivered = publish(spec, target, found.sid, results, part_format=2)
    manifest = delivered.manifest
    return ledger.DeliveryRow(
        *names, delivered.object_uris, manifest.results, manifest.bytes, manifest.digest
    )


def _withdraw(spec: JobSpec, prefix: str, subscription: str) -> None:
    store = spec.stores.open(prefix)
    folder = delivery_dir(subscription, spec.feed, spec.hour)
    if any(True for _ in store.list(folder + "/")):
        withdraw(store, folder)


class _Witnesses:
    """The witness hours a join stage reads, each read once (the stage and the provenance share them)."""

    def __init__(self, state: ObjectStore) -> None:
        self._state = state
        self._hours: dict[tuple[str, datetime], HourWitnesses | None] = {}
        self._joinable: dict[tuple[str, datetime], HourWitnesses | None] = {}

    def read(self, feed: str, hour: datetime) -> HourWitnesses | None:
        key = (feed, hour)
        if key not in self._hours:
            self._hours[key] = read_hour(self._state, feed, hour, DELIVERY_TABLES)
        return self._hours[key]

    def joinable(self, feed: str, hour: datetime) -> HourWitnesses | None:
        """The hour's witnesses as stage 2 pairs from them (columns, each hour read once)."""
        key = (feed, hour)
        if key not in self._joinable:
            self._joinable[key] = read_joinable(self._state, feed, hour)
        return self._joinable[key]

    def provenance(self, feed: str, node: NodeRef) -> Provenance:
        found = self.read(feed, node[0])
        assert found is not None  # the stage found the node there
        message = found.messages[node[1]]
        return Provenance(feed, format_hour(node[0]), message.key, message.index, message.digest)


def _numeric(sid: str) -> tuple[int, str]:
    return (int(sid), sid) if sid.isdigit() else (0, sid)
