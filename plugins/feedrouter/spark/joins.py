"""The join stage of one feed's hour (issue 16, paper 001's stage 2), after the hour is routed.

1. load the feed's latest plan build; nothing to do when it has no join subscription;
2. check that the witnesses of every hour the window reaches back to are written, for every feed
   the joins read, and cover the blocks they need: the stage waits for the *witnesses* of earlier
   hours (stage 1), never for their join results, so hours routed out of order or caught up give
   the same deliveries (:class:`WitnessesNotReady` says what is missing: a transient error, retried);
   an hour routed before a block existed lacks it and is back-filled (:class:`BackfillNeeded`);
   where one cannot be, its inputs gone (:class:`~feedrouter.errors.InputsGone`), the join
   subscriptions needing what it lacks get a ``failed`` row (FR612) and the others are paired;
3. under the hour's lease (a re-run of the hour's routing never overlaps it), run stage 2
   (:class:`~feedrouter.join.stage.JoinStage`) and write each join subscription's folder with the
   protocol of every delivery (:mod:`feedrouter.spark.joindelivery`), one result per pair with
   both messages' provenance (part format 2): the partitioned engine's tasks write their own
   parts' folders, the other engines' pairs come back to this process, which writes them; a
   subscription past its cap of pairs gets no folder and a ``withheld`` ledger row saying why, one
   whose store refuses its folder a ``failed`` row (FR607), the others going on;
4. record the join subscriptions' delivery rows in the hour's batch (routed by the same build).

Re-runs write the same bytes and add no delivery version.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, replace
from datetime import datetime, timedelta, timezone
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from feedrouter.catalog import Target

from feedrouter.catalog import ledger
from feedrouter.catalog.joins import JoinsOfFeed
from feedrouter.catalog.settings import state_uri
from feedrouter.errors import InputsGone, error
from feedrouter.hours import format_hour, to_hour
from feedrouter.join.filing import BlockFiling
from feedrouter.join.plan import BlockSpec, JoinPlan
from feedrouter.join.relations import ONE_HOUR
from feedrouter.join.stage import JoinDelivery, JoinStage
from feedrouter.spark.backfill import backfill_witnesses
from feedrouter.spark.batch import (
    BatchOptions,
    LoadedPlan,
    check_held,
    job_spec,
    load_plan_build,
    task_error,
)
from feedrouter.spark.batchlog import batch_fields, log
from feedrouter.spark.job import job_tag, tagged
from feedrouter.spark.joindelivery import DELIVERY_THREADS, Written, deliver_joins
from feedrouter.spark.joinparts import partitioned_deliveries
from feedrouter.spark.joinsql import WitnessSource, spark_pairs
from feedrouter.spark.lease import JobCanceller, hour_lock
from feedrouter.spark.session import batch_session, check_no_speculation
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.spark.witnesses import BlocksJson, blocks_json_of_hour, holds
from feedrouter.storage import ObjectStore


@dataclass(frozen=True)
class JoinOptions:
    """How to run a join stage: where witnesses are, the engine, the part size and the hour's lease
    (as :class:`~feedrouter.spark.batch.BatchOptions`). What a subscription may receive is the
    feed's (:attr:`~feedrouter.catalog.compiled.FeedConfig.join_limits`), carried by its plan.

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
    max_part_bytes: int | None = None
    lease_seconds: float | None = None
    #: join subscriptions' folders a process writes at once (the driver, or each partitioned task)
    delivery_threads: int = DELIVERY_THREADS


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
    #: delivered without some pairs, each pair's result past the feed's max_result_bytes (FR310)
    refused: tuple[str, ...] = field(default=(), repr=False)
    #: subscriber/subscription of each folder its store refused (FR607: the next run retries it)
    failed: tuple[str, ...] = field(default=(), repr=False)
    #: subscriber/subscription of each join left out: an hour of its window lacks its blocks and
    #: cannot be back-filled, its inputs gone (FR612: restore them and re-run the hour)
    cut_off: tuple[str, ...] = field(default=(), repr=False)
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
            text += f"; withheld (past the hour's cap of pairs or bytes) [FR313]: {', '.join(self.withheld)}"
        if self.refused:
            text += f"; pairs left out (a result past max_result_bytes) [FR310]: {', '.join(self.refused)}"
        if self.failed:
            text += f"; {len(self.failed)} deliveries failed [FR607] (retried by the next run of the hour)"
        if self.cut_off:
            text += (
                f"; {len(self.cut_off)} join subscriptions left out [FR612] (an hour of their window "
                "lacks what they need and lost its inputs before it could be back-filled: restore them "
                "and re-run the hour)"
            )
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
            (transient: retried until stage 1 of that hour has run), or, back-filled, still lack
            blocks (their feed's plan build is older than the join: retried until it is rebuilt).
        BackfillNeeded: [FR610] an hour's witnesses lack a block (routed before the block
            existed): back-fill the hour's witnesses (:func:`feedrouter.spark.backfill.backfill`).
        InputsGone: [FR612] an hour to back-fill has lost its inputs and every join subscription
            needs what it lacks (where only some do, they get a ``failed`` row and the others
            their pairs).
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
        source = WitnessSource(stores, options.state_uri or state_uri(), filing=BlockFiling(joins.specs))
        state = stores.open(source.state_uri)
        start = options.stream_start or _route_start()
        lateness = loaded.plan.feed.allowed_lateness
        routed, unlisted = routed_hours(engine), unlisted_hours(engine)
        check = partial(check_witnesses, state, joins, lateness, hour, start, routed, unlisted)
        lacking = check()
        cut: dict[str, list[InputsGone]] = {}
        if lacking and options.backfill is not None:
            backfill = replace(options.backfill, state_uri=options.state_uri)
            fill = _hour_filler(engine, plans_store, backfill, stores, {feed: loaded})
            lost = back_fill(lacking, fill, check)
            if lost:
                # one join that can no longer be back-filled must not cost the others their pairs
                cut = cut_off(state, joins, lateness, hour, lost)
                if len(cut) == len(joins.plans):
                    raise next(iter(lost.values()))
                joins = without(joins, cut)
                # the hours are filed by the blocks left: a lost hour may still misfile one only
                # the left-out joins read, which would fail reading it for every join (FR611)
                source = replace(source, filing=BlockFiling(joins.specs))
        elif lacking:
            hours = ", ".join(f"{name} {format_hour(when)}" for name, when in lacking)
            raise error("FR610", f"back-fill the join witnesses of {hours}: routed before blocks they need")
        # every hour of the window from the stream's start is written now: one that goes missing
        # while the stage runs (the retention DAG) fails it (FR609, retried), never pairs without it
        window = window_hours(joins, lateness, hour)
        # (an hour its route run did not list the feed for, and not routed otherwise, has none;
        # the listing is read once an hour, the ledger asked only for hours it leaves out)
        required = frozenset(key for key in window if awaited(*key, start, routed, unlisted))
        source = replace(source, required=required)
        spec = _spec(loaded, hour, stores, options)
        ttl = timedelta(seconds=options.lease_seconds or 600.0)
        cancel = JobCanceller()  # a lost lease stops the writing: the tasks' and this process's
        with hour_lock(engine, feed, hour, ttl, on_lost=cancel) as lease:
            batch_id = _routed_batch(engine, loaded, hour)
            stage = JoinStage(
                joins.plans.values(),
                joins.specs,
                lateness=loaded.plan.feed.allowed_lateness,
                limits=loaded.plan.feed.join_limits,
            )
            # every engine reads the witnesses it pairs from itself (as columns), and whoever writes
            # the folders (the partitioned tasks, or this process) what delivering them needs
            written = _delivered(stage, spec, loaded.plan.targets, source, options, spark, cancel)
            rows = [one.row for one in sorted(written, key=lambda one: _numeric(one.sid))]
            left_out = _cut_off_rows(engine, loaded, hour, cut)
            ledger.record_deliveries(engine, batch_id, loaded.feed_id, hour, rows + left_out, lease)
    report = JoinReport(
        feed,
        format_hour(hour),
        "joined",
        loaded.build.id,
        subscriptions=len(written) + len(cut),  # those left out too, with or without a row
        pairs=sum(one.pairs for one in written),
        deliveries=sum(1 for row in rows if row.result_count),
        withheld=tuple(sorted(row.subscription for row in rows if row.status == "withheld")),
        refused=tuple(sorted(row.subscription for row in rows if row.error_code == "FR310")),
        failed=tuple(sorted(f"{r.subscriber}/{r.subscription}" for r in rows if r.status == "failed")),
        cut_off=tuple(
            sorted(f"{t.subscriber}/{t.subscription}" for t in map(loaded.plan.targets.get, cut) if t)
        ),
        engine=options.engine,
        seconds=round(time.perf_counter() - clock, 3),
    )
    log.info("%s", report.describe())
    return report


def _delivered(
    stage: JoinStage,
    spec: JobSpec,
    targets: Mapping[str, Target],
    source: WitnessSource,
    options: JoinOptions,
    spark: SparkSession | None,
    cancel: JobCanceller | None = None,
) -> list[Written]:
    """Every join subscription's folder of the hour written (``targets``: where, by subscription
    id), by the engine the options name: the partitioned engine's tasks write their own parts'
    folders; the others' pairs come back here, where the folders are written (several at a time,
    one subscription's results assembled at a time). Once ``cancel`` fires (the hour's lease was
    lost), the Spark operations are interrupted and no further folder is written here (FR606).

    A part's task that fails (e.g. FR611, a damaged hour only its feeds read) fails the stage,
    which records nothing; the other tasks may have written their folders by then (the re-run
    writes the same bytes), where the other engines, pairing first, write none."""
    hour, cancel = spec.hour, cancel or JobCanceller()
    if options.engine == "python":
        witnesses = source.hours()
        pairs = stage.pairs(hour, witnesses.joinable)
    elif options.engine in ("spark", "partitioned"):
        with batch_session(spark, options.master) as session:
            check_no_speculation(session)  # two attempts of a task would write the same folders
            tag = job_tag(spec)
            try:
                with cancel.armed(session, tag), tagged(session, tag):
                    check_held(spec, cancel)
                    if options.engine == "partitioned":
                        return partitioned_deliveries(
                            session, stage, hour, source, spec, targets, options.delivery_threads
                        )
                    fenced = source.hours()
                    fenced.fence(sorted(source.required))  # the hours it pairs from, as they are now
                    pairs = spark_pairs(session, stage.plans, hour, source, stage.lateness, stage.max_pairs)
            except Exception as exc:
                check_held(spec, cancel, exc)
                # a task's error, rebuilt with its code and class: a damaged witness hour (FR611)
                # is terminal and says what to do, a store that is down (transient) is retried
                raised = task_error(exc)
                if raised is not None:
                    raise raised from exc
                raise
        witnesses = fenced
    else:
        raise ValueError(f"no join engine {options.engine!r}: partitioned, spark or python")
    witnesses.forget_joinable()  # paired: only what delivering reads is kept
    witnesses.expect(stage.messages_needed(pairs))
    found = stage.deliveries(hour, witnesses.read, pairs, order=_numeric)
    plans = {plan.sid: plan for plan in stage.plans}
    held = _while_held(found, spec, cancel)
    return deliver_joins(spec, targets, plans, held, witnesses, options.delivery_threads)


def _while_held(
    deliveries: Iterable[JoinDelivery], spec: JobSpec, cancel: JobCanceller
) -> Iterator[JoinDelivery]:
    """The deliveries, until the hour's lease is lost (then FR606: no further folder is written)."""
    for found in deliveries:
        check_held(spec, cancel)
        yield found


def _hour_filler(
    engine: Engine,
    plans_store: ObjectStore,
    options: BatchOptions,
    stores: StoreOpener,
    loaded: dict[str, LoadedPlan],
) -> Callable[[str, datetime], object]:
    """Back-fill one hour of a feed with the feed's latest plan build, loaded once for all the
    hours of the window it back-fills (``loaded``: the builds loaded already, by feed): an hour
    whose blocks are filed from the rows it keeps costs a rewrite of its ``blocks.json``, where
    reading and decoding the feed's plan again for each hour took longer."""

    def fill(feed: str, hour: datetime) -> object:
        plan = loaded.get(feed)
        if plan is None:
            plan = loaded[feed] = load_plan_build(engine, feed, plans_store)
        return backfill_witnesses(
            engine, feed, hour, plans_store=plans_store, options=options, stores=stores, loaded=plan
        )

    return fill


def back_fill(
    lacking: Iterable[tuple[str, datetime]],
    fill: Callable[[str, datetime], object],
    check: Callable[[], list[tuple[str, datetime]]],
) -> dict[tuple[str, datetime], InputsGone]:
    """Back-fill the ``lacking`` hours (``fill``), then ``check`` the window again; the hours that
    could not be, their inputs gone (FR612), with why: they still lack blocks, and the joins that
    need those are left out (:func:`cut_off`), not the others.

    Raises:
        WitnessesNotReady: [FR609] hours routed again with their feeds' latest plan builds still
            lack blocks: those builds are older than the join's (made before the join subscription)
            and are rebuilt after the catalog change that added it; until then there is nothing to
            pair from (transient: a terminal error here failed the stage for good).
    """
    lost: dict[tuple[str, datetime], InputsGone] = {}
    for name, when in lacking:
        try:
            fill(name, when)
        except InputsGone as exc:
            lost[(name, when)] = exc
    still = [key for key in check() if key not in lost]
    if still:
        hours = ", ".join(f"{name} {format_hour(when)}" for name, when in still)
        feeds = ", ".join(sorted({name for name, _ in still}))
        raise error(
            "FR609",
            f"back-filled the join witnesses of {hours}, and they still lack blocks this plan's joins "
            f"need: waiting for the plan builds of {feeds} to include them (rebuilt after the catalog "
            "change that added the join)",
        )
    return lost


def cut_off(
    state: ObjectStore,
    joins: JoinsOfFeed,
    lateness: timedelta,
    hour: datetime,
    lost: Mapping[tuple[str, datetime], InputsGone],
) -> dict[str, list[InputsGone]]:
    """The join subscriptions whose window reaches a ``lost`` hour (one that lacks blocks and
    cannot be back-filled) where it lacks one of their blocks, each with those hours' errors."""
    found: dict[tuple[str, datetime], BlocksJson | None] = {
        key: blocks_json_of_hour(state, *key) for key in lost
    }
    cut: dict[str, list[InputsGone]] = {}
    for sid, plan in joins.plans.items():
        hours = {
            key: lost[key]
            for key, side in sorted(_sides_window(plan, lateness, hour))
            if key in lost and not _holds_side(found[key], plan, side, joins.specs[plan.blocks[side]])
        }
        if hours:
            cut[sid] = list(hours.values())
    return cut


def _sides_window(
    plan: JoinPlan, lateness: timedelta, hour: datetime
) -> Iterator[tuple[tuple[str, datetime], int]]:
    back = plan.reach(lateness)
    for side, feed in enumerate(plan.feeds):
        for k in range(back + 1):
            yield (feed, hour - ONE_HOUR * k), side


def _holds_side(found: BlocksJson | None, plan: JoinPlan, side: int, spec: BlockSpec) -> bool:
    """Whether an hour holds what ``plan`` reads of its ``side``'s block (``spec``, the block as
    every subscription reads it): the leaves and fragments of its own, filed as this code files it."""
    wanted = ((spec.id, *plan.needs[side]),) if plan.needs else None
    return found is not None and holds(found, [spec], wanted)


def without(joins: JoinsOfFeed, cut: Collection[str]) -> JoinsOfFeed:
    """``joins`` without the subscriptions ``cut``, and with only the blocks the others read."""
    plans = {sid: plan for sid, plan in joins.plans.items() if sid not in cut}
    read = {block for plan in plans.values() for block in plan.blocks}
    return replace(
        joins, plans=plans, specs={block: spec for block, spec in joins.specs.items() if block in read}
    )


def _cut_off_rows(
    engine: Engine, loaded: LoadedPlan, hour: datetime, cut: Mapping[str, list[InputsGone]]
) -> list[ledger.DeliveryRow]:
    """The ``failed`` rows of the joins left out (:func:`cut_off`), each naming the hours that cost
    it; none for one the hour was delivered (or withheld) for before: that row was true when
    written, and its folder stands (nothing here could make it again)."""
    with engine.connect() as conn:
        prior = ledger.prior_deliveries(conn, loaded.feed_id, hour)
    rows = []
    for sid in sorted(cut, key=_numeric):
        target = loaded.plan.targets[sid]
        before = prior.get((target.subscriber, target.subscription))
        if before is not None and before.status != "failed":
            continue
        why = "; ".join(exc.message for exc in cut[sid])
        names = (target.catalog_id, target.subscriber, target.subscription)
        rows.append(
            ledger.DeliveryRow(
                *names, status="failed", error_code="FR612", error_message=f"no pairs this hour: {why}"[:2000]
            )
        )
    return rows


def plan_window(
    plan: JoinPlan, lateness: timedelta, hour: datetime
) -> Iterator[tuple[tuple[str, datetime], str]]:
    """Every (feed, hour) of witnesses a join subscription's stage of ``hour`` reads, with the block
    it needs there (its window and lateness back from ``hour``)."""
    for key, side in _sides_window(plan, lateness, hour):
        yield key, plan.blocks[side]


def window_hours(
    joins: JoinsOfFeed, lateness: timedelta, hour: datetime
) -> dict[tuple[str, datetime], set[str]]:
    """Every (feed, hour) of witnesses the hour's join stage reads, with the blocks it needs there."""
    needed: dict[tuple[str, datetime], set[str]] = {}
    for plan in joins.plans.values():
        for key, block in plan_window(plan, lateness, hour):
            needed.setdefault(key, set()).add(block)
    return needed


def check_witnesses(
    state: ObjectStore,
    joins: JoinsOfFeed,
    lateness: timedelta,
    hour: datetime,
    start: datetime,
    routed: Callable[[str, datetime], bool] = lambda feed, hour: False,
    unlisted: Callable[[str, datetime], bool] = lambda feed, hour: False,
) -> list[tuple[str, datetime]]:
    """The hours of the window (from ``start`` on) to back-fill: their witnesses lack blocks the
    joins need, or a leaf or fragment of one (a join added later reads a block another join made,
    with a value or a return item of its own), or there are none though ``routed`` says the hour
    was routed (with a plan that had no join block). Raises WitnessesNotReady (FR609) when an
    hour is not routed yet, unless ``unlisted`` says its route run did not list the feed (added or
    made active again later: that run never routes it, and nothing is waited for)."""
    missing: list[str] = []
    lacking: list[tuple[str, datetime]] = []
    for (feed, when), blocks in sorted(window_hours(joins, lateness, hour).items()):
        if when < start:
            continue  # before the stream: never routed, nothing to wait for
        found = blocks_json_of_hour(state, feed, when)
        if found is None:
            if routed(feed, when):
                lacking.append((feed, when))
            elif awaited(feed, when, start, routed, unlisted):
                missing.append(f"{feed} {format_hour(when)}")
        elif not holds(found, [joins.specs[block] for block in blocks]):
            lacking.append((feed, when))
    if missing:
        raise error(
            "FR609", f"waiting for the join witnesses of {', '.join(missing)} (stage 1 of those hours)"
        )
    return lacking


def awaited(
    feed: str,
    when: datetime,
    start: datetime,
    routed: Callable[[str, datetime], bool],
    unlisted: Callable[[str, datetime], bool],
) -> bool:
    """Whether a join waits for stage 1 of a feed's hour: from the stream's start on, unless the
    hour's route run did not list the feed (added or made active again later: that run never
    routes it) and nothing routed it since. The one rule the check of the window's witnesses and
    the join stage's required hours share."""
    return when >= start and (not unlisted(feed, when) or routed(feed, when))


def unlisted_hours(engine: Engine) -> Callable[[str, datetime], bool]:
    """Whether a feed's hour was left out of the hour's listing (:func:`~feedrouter.catalog.ledger.
    listed_feeds`: its route run had listed its feeds when the feed was not active); False for an
    hour no run has listed yet. Each hour's listing read once."""
    listings: dict[datetime, frozenset[str] | None] = {}

    def unlisted(feed: str, hour: datetime) -> bool:
        if hour not in listings:
            with engine.connect() as conn:
                listings[hour] = ledger.listed_feeds(conn, hour)
        listed = listings[hour]
        return listed is not None and feed not in listed

    return unlisted


def routed_hours(engine: Engine) -> Callable[[str, datetime], bool]:
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


def _numeric(sid: str) -> tuple[int, str]:
    return (int(sid), sid) if sid.isdigit() else (0, sid)
