"""Operators of the feedrouter DAGs: each ``execute`` is a few lines calling the library through
:class:`~feedrouter.airflow.hooks.FeedrouterHook`, with terminal errors failing at once
(:func:`~feedrouter.airflow.errors.task_outcome`).

As in the amazon provider, every operator (and the sensor) gets its hook from
:class:`FeedrouterHookMixin`: one hook per task instance, made on first use, and the catalog opened
through it for one step at a time.

What they return goes to XCom as plain JSON: feed names, batch dicts, build and routing summaries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, time, timedelta, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowFailException

from feedrouter.airflow.errors import task_outcome
from feedrouter.airflow.hooks import FeedrouterHook
from feedrouter.airflow.hours import HourBatch, parse_hour, to_hour
from feedrouter.catalog import ledger, status
from feedrouter.catalog.repository import require_feed

if TYPE_CHECKING:
    from airflow.sdk import Context
    from sqlalchemy import Connection, Engine

#: How mapped task instances are labelled in the grid: by feed, or by feed and hour.
FEED_LABEL = "{{ task.feed }}"
BATCH_LABEL = "{{ task.batch['feed'] }} {{ task.batch['hour'] }}"


class FeedrouterHookMixin:
    """The hook of one task instance and the catalog steps made through it (operators and sensors).

    The connection ids (``catalog_conn_id``, ``s3_conn_id``, ``spark_conn_id``) are the task's
    arguments; None takes the settings' value (``FEEDROUTER_CATALOG_CONN_ID``,
    ``FEEDROUTER_S3_CONN_ID``, ``FEEDROUTER_SPARK_CONN_ID``, or the ``[feedrouter]`` section of
    the Airflow config), and with none set there either the library's environment configuration.
    """

    catalog_conn_id: str | None = None
    s3_conn_id: str | None = None
    spark_conn_id: str | None = None

    @cached_property
    def hook(self) -> FeedrouterHook:
        """The task's hook (connections read once per task instance, on first use); an invalid
        setting (FR700) fails the task at once: retrying cannot fix the configuration."""
        with task_outcome("reading feedrouter's settings"):
            return make_hook(self.catalog_conn_id, self.s3_conn_id, self.spark_conn_id)

    @contextmanager
    def catalog_engine(self, what: str) -> Iterator[Engine]:
        """An engine on the catalog for one step, disposed of afterwards; terminal errors fail the
        task at once, naming ``what`` the step does."""
        engine = self.hook.catalog_engine()
        try:
            with task_outcome(what):
                yield engine
        finally:
            engine.dispose()

    @contextmanager
    def catalog(self, what: str) -> Iterator[Connection]:
        """A read connection on the catalog for one step (see :meth:`catalog_engine`)."""
        with self.catalog_engine(what) as engine, engine.connect() as conn:
            yield conn

    def stream_start(self) -> datetime:
        """The first hour ever routed (the ``route_start`` setting, as the route DAG's start): a
        join's window reaching before it has no witnesses to wait for."""
        return datetime.combine(self.hook.settings.route_start, time(0), tzinfo=timezone.utc)


class FeedrouterOperator(BaseOperator, FeedrouterHookMixin):
    """Base of the feedrouter operators: a cached :attr:`hook` and :meth:`catalog` steps.

    Args:
        catalog_conn_id: Airflow connection (postgres) of the catalog; None: the settings'
            ``FEEDROUTER_CATALOG_CONN_ID``, else the library's ``FEEDROUTER_DATABASE_URL``.
        s3_conn_id: Airflow connection (aws) of every ``s3://`` store; None: the settings'
            ``FEEDROUTER_S3_CONN_ID``, else boto3's standard chain.
        spark_conn_id: Airflow connection (spark or spark_connect) the batches run on; None: the
            settings' ``FEEDROUTER_SPARK_CONN_ID``, else ``FEEDROUTER_SPARK_MASTER`` or a local
            session in the task.
    """

    def __init__(
        self,
        *,
        catalog_conn_id: str | None = None,
        s3_conn_id: str | None = None,
        spark_conn_id: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.catalog_conn_id = catalog_conn_id
        self.s3_conn_id = s3_conn_id
        self.spark_conn_id = spark_conn_id


def make_hook(
    catalog_conn_id: str | None = None, s3_conn_id: str | None = None, spark_conn_id: str | None = None
) -> FeedrouterHook:
    """The hook on these connection ids (None: the settings' value for that one)."""
    return FeedrouterHook(catalog_conn_id=catalog_conn_id, s3_conn_id=s3_conn_id, spark_conn_id=spark_conn_id)


class StaleFeedsOperator(FeedrouterOperator):
    """Name the active feeds whose catalog version moved since their latest plan build.

    Returns the sorted feed names (an empty list when every plan is current), which the build task
    maps over: only the feeds that changed are rebuilt.
    """

    ui_color = "#e8f4fa"

    def execute(self, context: Context) -> list[str]:
        self._log_triggering_events(context)
        self.log.info("Reading catalog versions: %s", self.hook.describe())
        with self.catalog("reading the catalog versions") as conn:
            stale = status.stale_feeds(conn)
        for feed, version in sorted(stale.items()):
            self.log.info("feed %s: catalog version %s has no plan build yet", feed, version)
        if not stale:
            self.log.info("Every active feed's plan build is current; nothing to rebuild")
        return sorted(stale)

    def _log_triggering_events(self, context: Context) -> None:
        # What woke the DAG up (the catalog watcher's payload); the catalog itself decides the work.
        for asset, events in (context.get("triggering_asset_events") or {}).items():
            for event in events:
                self.log.info("Triggered by %s: %s", asset, event.extra)


class BuildPlanOperator(FeedrouterOperator):
    """Build (or reuse) one feed's plan at its current catalog version.

    Returns a summary of the build (id, version, counts, artifact URI); invalid subscriptions are
    logged with their errors and recorded in the catalog, and never fail the task.

    Args:
        feed: the feed to build (templated; mapped over the stale feeds).
        strategy: the router strategy ("auto", "F", "FW", "FWR").
    """

    template_fields: Sequence[str] = ("feed",)
    ui_color = "#d6eaf8"

    def __init__(self, *, feed: str, strategy: str = "auto", **kwargs: Any) -> None:
        kwargs["map_index_template"] = kwargs.get("map_index_template") or FEED_LABEL
        super().__init__(**kwargs)
        self.feed = feed
        self.strategy = strategy

    def execute(self, context: Context) -> dict[str, Any]:
        from feedrouter.catalog import build_plan, subscription_problems

        with self.catalog_engine(f"plan build of feed {self.feed}") as engine:
            result = build_plan(engine, self.feed, self.hook.plans_store(), strategy=self.strategy)
            with engine.connect() as conn:
                problems = subscription_problems(conn, self.feed)
        self._log_build(result, problems)
        summary = build_summary(result)
        for outlet in self.outlets:  # the asset event says which feed got which build
            context["outlet_events"][outlet].extra = summary
        return summary

    def _log_build(self, result: Any, problems: list[dict[str, Any]]) -> None:
        verb = "Reused" if result.reused else "Built"
        self.log.info(
            "%s plan build %s of feed %s at catalog version %s: %s valid, %s invalid, %s never match -> %s",
            verb,
            result.id,
            self.feed,
            result.catalog_version,
            result.valid,
            result.invalid,
            result.never_matches,
            result.artifact_uri,
        )
        for row in problems[:50]:
            first_line = (row["error_message"] or "").split("\n")[0]
            self.log.warning(
                "%s %s/%s: %s", row["status"], row["subscriber"], row["subscription"], first_line
            )


class HourBatchesOperator(FeedrouterOperator):
    """List the batches (feed, hour) this run routes.

    The hour is the ``hour`` param when given (a manual run), else the run's data interval start;
    the feeds are the ``feed`` param when given, else every active feed, which the catalog records
    as the hour's listing (:func:`feedrouter.catalog.ledger.record_listing`).

    Args:
        feed: one feed name, or "" for all active feeds (templated).
        hour: ``YYYY-MM-DDTHH`` in UTC, or "" for the run's hour (templated).
    """

    template_fields: Sequence[str] = ("feed", "hour")

    def __init__(self, *, feed: str = "{{ params.feed }}", hour: str = "{{ params.hour }}", **kwargs: Any):
        super().__init__(**kwargs)
        self.feed = feed
        self.hour = hour

    def execute(self, context: Context) -> list[dict[str, str]]:
        with task_outcome("choosing the hour to route"):
            hour = parse_hour(self.hour) if self.hour else run_hour(context)
        with self.catalog_engine("listing the feeds to route") as engine, engine.begin() as conn:
            if self.feed:
                feeds = [require_feed(conn, self.feed).config.name]
            else:
                feeds = status.active_feeds(conn)
                # a feed not listed here is never routed for this hour by this run: joins reading
                # it do not wait for its witnesses of the hour (a feed added later)
                ledger.record_listing(conn, hour, feeds)
        batches = [HourBatch(feed, hour).to_dict() for feed in feeds]
        self.log.info("Routing %s", ", ".join(f"{b['feed']} {b['hour']}" for b in batches) or "nothing")
        return batches


def run_hour(context: Context) -> datetime:
    """The hour a scheduled run routes: its data interval start (the hour that just ended)."""
    start = context.get("data_interval_start") or context.get("logical_date")
    if start is None:
        raise AirflowFailException("this run has no data interval: give the hour in the trigger form")
    return to_hour(start)


class RouteBatchOperator(FeedrouterOperator):
    """Route one feed's hour on Spark with the feed's latest plan build, and record the ledger.

    Returns the routing summary (batch id, status, counts); an hour without input is routed as an
    explicit empty batch. A feed without a plan build fails at once with what to do about it.

    Where it runs follows the spark connection (:func:`feedrouter.airflow.routing.spark_target`):
    in the task (no connection, a local master, or a ``spark_connect`` connection's ``sc://``
    endpoint), or submitted with spark-submit through the apache-spark provider's
    ``SparkSubmitHook`` (any other master: standalone, YARN, Kubernetes), the connection's master,
    deploy mode and extras applied. Spark conf of a submission, lowest to highest: feedrouter's
    defaults, the connection's extras (``conf`` and ``spark.*`` keys), the feed's ``spark_conf``
    in the catalog, this operator's ``spark_conf``.

    Args:
        batch: ``{"feed": …, "hour": "YYYY-MM-DDTHH"}`` (templated; mapped over the run's batches).
        spark_conf: Spark conf of this task's batches (``spark.executor.memory``, …; templated);
            None: none beyond the connection's and the feed's.
        spark_archive: a packed environment (``feedrouter spark package``'s
            ``feedrouter-env.tar.gz``, local or on the cluster's file system) shipped with
            ``--archives`` so the executors run ``./environment/bin/python``; None: the spark
            connection's ``feedrouter-archive`` extra, else none (the cluster's image has
            feedrouter installed).
        catalog_conn_id, s3_conn_id, spark_conn_id: see :class:`FeedrouterOperator`.
    """

    template_fields: Sequence[str] = ("batch", "spark_conf", "spark_archive")
    ui_color = "#fdebd0"

    def __init__(
        self,
        *,
        batch: dict[str, str],
        spark_conf: dict[str, str] | None = None,
        spark_archive: str | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs["map_index_template"] = kwargs.get("map_index_template") or BATCH_LABEL
        super().__init__(**kwargs)
        self.batch = batch
        self.spark_conf = spark_conf
        self.spark_archive = spark_archive
        self._submit_hook: Any = None

    def execute(self, context: Context) -> dict[str, Any]:
        from feedrouter.airflow import routing

        batch = HourBatch.from_dict(self.batch)
        with task_outcome(f"routing {batch.label}"):
            target = routing.spark_target(self.hook)
            self.log.info(
                "Routing %s: %s; Spark %s (%s)",
                batch.label,
                self.hook.describe(),
                routing.shown_master(target.master),
                target.mode,
            )
            if target.mode == "submit":
                summary = self._submit(batch, target)
            else:
                summary = routing.route(self.hook, batch, target.master, self._in_task_conf(batch, target))
        self.log.info("Routed %s: %s", batch.label, summary)
        return summary

    def _in_task_conf(self, batch: HourBatch, target: Any) -> dict[str, str]:
        from feedrouter.airflow import routing
        from feedrouter.spark.submit import checked_conf, merged_conf

        operator = checked_conf(self.spark_conf or {}, "the operator's spark_conf")
        return merged_conf(target.conf, routing.feed_conf(self.hook, batch.feed), operator)

    def _submit(self, batch: HourBatch, target: Any) -> dict[str, Any]:
        from feedrouter.airflow import routing

        submission = routing.prepare_submission(self.hook, batch, target, self.spark_conf, self.spark_archive)
        self.log.info("Submitting %r", submission)
        self._submit_hook = routing.submit_hook(submission, target)
        try:
            self._submit_hook.submit(submission.application)
        except Exception as exc:
            raise submit_failure(batch, exc) from exc
        return routing.submitted_summary(self.hook, batch)

    def on_kill(self) -> None:
        if self._submit_hook is not None:  # stop the submitted driver with the task
            self._submit_hook.on_kill()


def submit_failure(batch: HourBatch, exc: Exception) -> Exception:
    """A failed spark-submit as the task's outcome: the application's terminal exit statuses fail
    the task at once, anything else (transient, unknown, a lost driver) is retried."""
    from feedrouter.airflow.routing import submitted_exit_status
    from feedrouter.spark.app import ExitCode

    status = submitted_exit_status(exc)
    if status in (ExitCode.TERMINAL, ExitCode.USAGE):
        return AirflowFailException(
            f"routing {batch.label} failed (exit status {status}, not retried: the cause is not "
            f"transient; the driver's log above names the error): {exc}"
        )
    return exc


class JoinBatchOperator(FeedrouterOperator):
    """Run the join stage of one feed's hour, after its routing: deliver its join subscriptions'
    pairs (part format 2) and record them in the hour's batch.

    Returns the join report's summary; ``status`` "no-joins" (nothing done) when the feed's latest
    plan build has no join subscription. Hours of the window routed before the joins' blocks
    existed are back-filled first, in the task, from the inputs still in the store. Driven from
    the task whatever the spark connection says (:func:`feedrouter.airflow.routing.join`): the
    pairs come from Spark's executors (``FEEDROUTER_JOIN_ENGINE``) on the routing's in-task
    master, or on a local session when the routing is submitted to a cluster. Witnesses of the
    window not written yet (FR609, transient) are retried; other terminal errors fail at once.

    Args:
        batch: ``{"feed": …, "hour": "YYYY-MM-DDTHH"}`` (templated; mapped over the run's batches).
        catalog_conn_id, s3_conn_id, spark_conn_id: see :class:`FeedrouterOperator`.
    """

    template_fields: Sequence[str] = ("batch",)
    ui_color = "#e8daef"

    def __init__(self, *, batch: dict[str, str], **kwargs: Any) -> None:
        kwargs["map_index_template"] = kwargs.get("map_index_template") or BATCH_LABEL
        super().__init__(**kwargs)
        self.batch = batch

    def execute(self, context: Context) -> dict[str, Any]:
        from feedrouter.airflow import routing

        batch = HourBatch.from_dict(self.batch)
        with task_outcome(f"join stage of {batch.label}"):
            summary = routing.join(self.hook, batch, self.stream_start())
        self.log.info("Joined %s: %s", batch.label, summary)
        return summary


class WitnessRetentionOperator(FeedrouterOperator):
    """Delete the join witnesses no join stage reads any more, for every active feed with an event
    time; returns ``{feed: [hours deleted, YYYY-MM-DDTHH]}``.

    A feed's hour is kept until the join stage of the last hour whose window reaches it has had
    its chance to run: ``lookback`` (the feed's ``max_join_window`` plus the longest
    ``allowed_lateness`` of the event-time feeds, since a join of another feed reads this feed's
    witnesses with its own lateness) plus ``FEEDROUTER_INPUT_DEADLINE`` (a late catch-up run) and a
    day (the run of that join stage), see :func:`feedrouter.spark.witnesses.retention_cutoff`. Whole
    hours are deleted, ``_SUCCESS`` first, each under the hour's lease (one being routed or
    back-filled is left for the next run). An hour deleted too early is not lost: a join stage that
    needs it back-fills it from the inputs, while they are stored.

    Args:
        catalog_conn_id, s3_conn_id, spark_conn_id: see :class:`FeedrouterOperator`.
    """

    ui_color = "#eaeded"

    def execute(self, context: Context) -> dict[str, list[str]]:
        from feedrouter.airflow.settings import state_uri
        from feedrouter.catalog.repository import event_time_feeds

        with self.catalog("listing the feeds with an event time") as conn:
            feeds = event_time_feeds(conn)
        with task_outcome("deleting expired join witnesses"):
            store = self.hook.store(state_uri())
            cutoffs = self._cutoffs(feeds)
            engine = self.hook.catalog_engine()
            try:
                return {name: self._expire(store, engine, name, cutoff) for name, cutoff in cutoffs.items()}
            finally:
                engine.dispose()

    def _cutoffs(self, feeds: dict[str, Any]) -> dict[str, datetime]:
        from feedrouter.spark.witnesses import retention_cutoff

        now, deadline = datetime.now(timezone.utc), self.hook.settings.input_deadline
        lateness = max((config.allowed_lateness for config in feeds.values()), default=timedelta(0))
        return {
            name: retention_cutoff(now, config.max_join_window, lateness, deadline)
            for name, config in feeds.items()
        }

    def _expire(self, store: Any, engine: Any, feed: str, cutoff: datetime) -> list[str]:
        from functools import partial

        from feedrouter.hours import format_hour
        from feedrouter.spark.lease import hour_lock
        from feedrouter.spark.witnesses import expire_hours

        # each hour under its lease: one being routed or back-filled is left for the next run
        deleted = expire_hours(store, feed, cutoff, partial(hour_lock, engine))
        expired = [format_hour(hour) for hour in deleted]
        if expired:
            self.log.info(
                "%s: deleted %d hours of witnesses before %s (%s … %s)",
                feed,
                len(expired),
                format_hour(cutoff),
                expired[0],
                expired[-1],
            )
        else:
            self.log.info("%s: no witnesses before %s", feed, format_hour(cutoff))
        return expired


class LedgerReportOperator(FeedrouterOperator):
    """Check that every batch of the run reached the ledger and log what each one delivered.

    Runs after all route tasks; reads the ledger itself rather than the route tasks' XComs, so the
    report is what the catalog says was delivered.

    Args:
        batches: the run's batches (templated; the ``hour_batches`` task's output).
    """

    template_fields: Sequence[str] = ("batches",)

    def __init__(self, *, batches: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.batches = batches

    def execute(self, context: Context) -> list[dict[str, Any]]:
        with self.catalog("reading the run ledger") as conn:
            return [self._ledger_row(conn, HourBatch.from_dict(batch)) for batch in self.batches or ()]

    def _ledger_row(self, conn: Connection, batch: HourBatch) -> dict[str, Any]:
        rows = status.batch_ledger(conn, batch.feed, batch.hour)
        if not rows:
            raise AirflowFailException(f"{batch.label} was routed but has no row in the batches ledger")
        row = rows[0]
        self.log.info(
            "%s: batch %s %s with plan build %s, %s documents, %s quarantined, %s deliveries, %s results",
            batch.label,
            row["id"],
            row["status"],
            row["plan_build_id"],
            row["documents"],
            row["quarantined"],
            row["deliveries"],
            row["results"],
        )
        if row.get("failed_deliveries"):
            self.log.warning(
                "%s: %s deliveries failed [FR607] (a subscriber's store refused them; the ledger has "
                "the reasons, and the next run of the hour delivers them again)",
                batch.label,
                row["failed_deliveries"],
            )
        return {**batch.to_dict(), **row}


def build_summary(result: Any) -> dict[str, Any]:
    """A plan build as JSON for XCom."""
    return {
        "feed": result.feed,
        "plan_build_id": result.id,
        "catalog_version": result.catalog_version,
        "reused": result.reused,
        "valid": result.valid,
        "invalid": result.invalid,
        "never_matches": result.never_matches,
        "artifact_uri": result.artifact_uri,
    }
