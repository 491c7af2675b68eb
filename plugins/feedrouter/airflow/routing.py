"""The route step: one feed's hour, routed in the task or submitted to a cluster with spark-submit.

Where the batch runs follows the task's spark connection (:func:`spark_target`):

==================================== ================================================================
no spark connection                  in the task, on ``FEEDROUTER_SPARK_MASTER`` (default a local
                                     session), as ``feedrouter route-batch`` does
a ``spark`` connection, local master in the task, on that master
a ``spark_connect`` connection       in the task, against its ``sc://`` endpoint (Spark Connect)
any other ``spark`` connection       ``spark-submit`` of :mod:`feedrouter.spark.app` through the
                                     apache-spark provider's ``SparkSubmitHook``: the connection's
                                     master, deploy mode, queue and namespace, conf merged as
                                     :mod:`feedrouter.spark.submit` documents
==================================== ================================================================

S3 credentials of the aws connection never become Spark conf: in the task they travel inside the
job (the store opener the tasks get); a submitted driver gets them, with the catalog URL, as its
process environment (the hook's ``env_vars``). Where the hook would turn ``env_vars`` into conf
(YARN, Kubernetes, standalone cluster mode) secrets are left out and the cluster must provide them
(docs/deploy.md).

Wherever the batch runs, its join witnesses go to the join state (``FEEDROUTER_STATE_URI`` as
Airflow sees it, the ``[feedrouter]`` section included): in the task through the batch's options,
to a submitted driver as that variable in its environment. The join stage of the hour
(:func:`join`) is always driven from the task: it reads witnesses, not messages, on the routing's
in-task master or a local session (:func:`join_master`), and back-fills an hour that lacks a
block without Spark.

This is the only module of the adapter that touches Spark; imported by the route task when it runs,
so the scheduler, the triggerer and the API server never import pyspark.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import quote

from feedrouter.airflow.hooks import FeedrouterHook, master_url
from feedrouter.airflow.hours import HourBatch
from feedrouter.airflow.settings import join_engine, state_uri

if TYPE_CHECKING:
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook
    from pyspark.sql import SparkSession

    from feedrouter.spark.stores import StoreOpener
    from feedrouter.spark.submit import Submission
    from feedrouter.storage.s3 import S3Settings

log = logging.getLogger("feedrouter.airflow.routing")

#: The connection extra naming a packed environment for the executors (``feedrouter-env.tar.gz``).
ARCHIVE_EXTRA = "feedrouter-archive"


@dataclass(frozen=True)
class SparkTarget:
    """Where a batch runs.

    Attributes:
        mode: "in-task" (a session in the task process) or "submit" (spark-submit).
        master: the master URL (``local[…]``, ``spark://…``, ``yarn``, ``k8s://…``, ``sc://…``);
            None: the library's local default.
        conn_id: the spark connection, if any.
        deploy_mode: the connection's deploy mode ("client", "cluster", None).
        conf: the Spark conf of the connection's extras.
        archive: the connection's packed environment (its ``feedrouter-archive`` extra).
    """

    mode: Literal["in-task", "submit"]
    master: str | None
    conn_id: str | None = None
    deploy_mode: str | None = None
    conf: dict[str, str] = field(default_factory=dict)
    archive: str | None = None


def spark_target(hook: FeedrouterHook) -> SparkTarget:
    """Where the hook's spark connection says the batch runs (see the module's table)."""
    from feedrouter.spark.session import is_local
    from feedrouter.spark.submit import connection_conf

    conn_id = hook.spark_conn_id
    if conn_id is None:
        return SparkTarget("in-task", hook.spark_master())
    conn = hook.get_connection(conn_id)
    extra = conn.extra_dejson
    if conn.conn_type == "spark_connect":
        return SparkTarget("in-task", connect_url(conn_id, extra), conn_id)
    master = master_url(conn.conn_type, conn.host, conn.port)
    mode: Literal["in-task", "submit"] = "in-task" if is_local(master) else "submit"
    conf = connection_conf(extra)
    return SparkTarget(mode, master, conn_id, extra.get("deploy-mode"), conf, extra.get(ARCHIVE_EXTRA))


def connect_url(conn_id: str, extra: Mapping[str, Any]) -> str:
    """The ``sc://`` URL of a spark_connect connection as the provider builds it (user, token,
    SSL), plus its ``x-…`` extras as headers (Databricks' ``x-databricks-cluster-id``)."""
    from airflow.providers.apache.spark.hooks.spark_connect import SparkConnectHook

    url = SparkConnectHook(conn_id).get_connection_url()
    headers = [f"{key}={quote(str(value))}" for key, value in sorted(extra.items()) if key.startswith("x-")]
    if not headers:
        return url
    return f"{url}{';' if url.split('/', 3)[-1] else ''}{';'.join(headers)}"


def shown_master(master: str | None) -> str:
    """``master`` fit for a log: a Spark Connect URL without its parameters (a token among them)."""
    if master is None:
        return "local"
    return master.split(";", 1)[0] + (";…" if ";" in master else "")


def feed_conf(hook: FeedrouterHook, feed: str) -> dict[str, str]:
    """The feed's Spark conf in the catalog (``feedrouter.feeds.spark_conf``; ``{}`` when none).

    Raises:
        CatalogError: [FR405] no feed of that name.
    """
    from feedrouter.catalog.repository import feed_spark_conf

    engine = hook.catalog_engine()
    try:
        with engine.connect() as conn:
            return feed_spark_conf(conn, feed)
    finally:
        engine.dispose()


# -- in the task ------------------------------------------------------------------------------------


def route(
    hook: FeedrouterHook,
    batch: HourBatch,
    master: str | None,
    conf: Mapping[str, str] | None = None,
    state: str | None = None,
) -> dict[str, Any]:
    """Route one feed's hour in this process with its latest plan build; a JSON summary.

    ``route_batch`` checks the plan build and lists the hour's input before any Spark starts, and
    opens the session (:func:`task_session`) only for an hour with input. ``master``: the
    session's master (``sc://…`` for Spark Connect; None: a local session). ``conf``: Spark conf
    of a session this call makes. ``state``: where the hour's join witnesses go (None: the
    ``state_uri`` setting as Airflow sees it, its ``[feedrouter]`` section included).
    """
    from feedrouter.spark import BatchOptions, route_batch

    stores = store_opener(hook)
    options = BatchOptions(master=master, state_uri=state or state_uri())
    engine = hook.catalog_engine()
    try:
        report = route_batch(
            engine,
            batch.feed,
            batch.hour,
            plans_store=hook.plans_store(),
            options=options,
            stores=stores,
            session=lambda: task_session(master, dict(conf or {})),
        )
    finally:
        engine.dispose()
    return report.summary()


def store_opener(hook: FeedrouterHook) -> StoreOpener | None:
    """The stores of the driver and the tasks: the aws connection's settings and credentials (which
    travel inside the job), or None (the environment's settings, boto3's standard chain)."""
    from feedrouter.spark.stores import StoreOpener

    access = hook.s3_access
    if access is None:
        return None
    return StoreOpener(access.settings, credentials=access.credentials)


@contextmanager
def task_session(master: str | None, conf: dict[str, str]) -> Iterator[SparkSession]:
    """The running classic session, or a new one on ``master`` (with ``conf``) stopped on exit."""
    from pyspark.sql import SparkSession

    from feedrouter.spark.session import spark_session

    active = SparkSession.getActiveSession() if not (master or "").startswith("sc://") else None
    if active is not None:
        yield active
        return
    session = spark_session(master, conf=conf)
    try:
        yield session
    finally:
        session.stop()


# -- the join stage (always in the task) ------------------------------------------------------------


def join_readiness(hook: FeedrouterHook, batch: HourBatch, stream_start: datetime) -> str:
    """Whether the join stage of one feed's hour can run: "no-joins" (the latest plan build has no
    join subscription) or "ready" (every hour of the window, from ``stream_start`` on, has its
    witnesses, or was routed and gets them back-filled, or its route run did not list the feed).
    Never looks at join *results*.

    Raises:
        WitnessesNotReady: [FR609] an hour of the window of this feed or of a feed its joins read
            is not routed yet.
    """
    from feedrouter.spark.batch import load_plan_build
    from feedrouter.spark.joins import check_witnesses, routed_hours, unlisted_hours

    engine = hook.catalog_engine()
    try:
        loaded = load_plan_build(engine, batch.feed, hook.plans_store())
        joins = loaded.plan.joins
        if joins is None or not joins.plans:
            return "no-joins"

        state = hook.store(state_uri())
        lateness = loaded.plan.feed.allowed_lateness
        heard = (routed_hours(engine), unlisted_hours(engine))  # from the ledger
        check_witnesses(state, joins, lateness, batch.hour, stream_start, *heard)
    finally:
        engine.dispose()
    return "ready"


def join(hook: FeedrouterHook, batch: HourBatch, stream_start: datetime) -> dict[str, Any]:
    """Run the join stage of one feed's hour from this process; the report's JSON summary.

    The pairs come from Spark's executors on a session the stage opens only for a feed with join
    subscriptions (:func:`join_master`): by default the executors' tasks also write the join
    subscriptions' folders (:mod:`feedrouter.spark.joinparts`); with
    ``FEEDROUTER_JOIN_ENGINE=spark`` (Spark SQL: :mod:`feedrouter.spark.joinsql`) or ``python``
    (in this process) the pairs come back here and this process writes them (the same folders).
    Hours of the window routed before the join's blocks existed are back-filled first, in this
    process (``BatchOptions(inline=True)``: witnesses only, from the inputs still in the store).
    Folders that subscribers' stores refused (FR607) are logged as a warning; join subscriptions
    left out because an hour of their window lost its inputs before it was back-filled (FR612) as
    an error (the other subscriptions are delivered).
    """
    from feedrouter.spark import BatchOptions
    from feedrouter.spark.joins import JoinOptions, join_batch

    state = state_uri()
    options = JoinOptions(
        state_uri=state,
        stream_start=stream_start,
        engine=join_engine(),
        master=join_master(spark_target(hook)),
        backfill=BatchOptions(inline=True, state_uri=state),
    )
    stores = store_opener(hook)
    engine = hook.catalog_engine()
    try:
        report = join_batch(
            engine, batch.feed, batch.hour, plans_store=hook.plans_store(), stores=stores, options=options
        )
    finally:
        engine.dispose()
    log.info("%s", report.describe())
    if report.failed:
        log.warning(
            "%d join deliveries of %s %s failed [FR607]: %s",
            len(report.failed),
            batch.feed,
            report.hour,
            _some(report.failed),
        )
    if report.cut_off:
        log.error(
            "%d join subscriptions of %s %s were left out [FR612]: an hour of their window lacks what "
            "they need and lost its inputs before it could be back-filled (their ledger rows say which, "
            "unless the hour was delivered for them before; restore the inputs and re-run the hour, or "
            "deactivate them): %s",
            len(report.cut_off),
            batch.feed,
            report.hour,
            _some(report.cut_off),
        )
    return report.summary()


#: subscriptions a log line names at most (a stage may leave out thousands)
_NAMED = 20


def _some(names: Sequence[str]) -> str:
    """The first :data:`_NAMED` of ``names``, and how many more.

    >>> _some(["ada/a", "bo/b"])
    'ada/a, bo/b'
    >>> _some([str(n) for n in range(25)]).endswith(", 18, 19 and 5 more")
    True
    """
    more = len(names) - _NAMED
    return ", ".join(names[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def join_master(target: SparkTarget) -> str | None:
    """The master of the join stage's session: the routing's where it runs in the task (a local
    master, a Spark Connect endpoint); for a cluster reached by spark-submit a local session in
    the task (None), since the stage reads an hour's window of witnesses, not its messages."""
    return target.master if target.mode == "in-task" else None


# -- spark-submit -----------------------------------------------------------------------------------


def prepare_submission(
    hook: FeedrouterHook,
    batch: HourBatch,
    target: SparkTarget,
    spark_conf: Mapping[str, str] | None = None,
    archive: str | None = None,
) -> Submission:
    """The spark-submit of one batch: conf layers (connection, feed, operator) and the driver's
    environment, secrets only where they stay out of Spark's conf."""
    from feedrouter.spark.submit import checked_conf, driver_environment, env_becomes_conf, submission

    access = hook.s3_access
    env = driver_environment(
        hook.catalog_url(),
        hook.plans_store().uri,  # the hook's view: the Airflow config section over the environment
        s3_environment(access.settings) if access else None,
        access.credentials if access else None,
        state_uri(),  # the join witnesses: where the join stage, in the task, reads them
    )
    assert target.master is not None
    if env_becomes_conf(target.master, target.deploy_mode):
        env = without_secrets(env, target)
    if target.master.startswith("spark://") and target.deploy_mode == "cluster":
        env = without_environment(env, target)
    layers = (
        target.conf,
        feed_conf(hook, batch.feed),
        checked_conf(spark_conf or {}, "the operator's spark_conf"),
    )
    return submission(
        batch.feed,
        batch.hour,
        conf_layers=layers,
        env_vars=env,
        archive=archive or target.archive,
        deploy_mode=target.deploy_mode,
    )


def without_secrets(env: Mapping[str, str], target: SparkTarget) -> dict[str, str]:
    """``env`` without its secrets, which this master would receive as Spark conf."""
    from feedrouter.spark.submit import SECRET_VARIABLES

    left_out = sorted(name for name in env if name in SECRET_VARIABLES)
    if left_out:
        log.warning(
            "%s (deploy mode %s) would receive environment variables as Spark conf: %s are not "
            "passed; the cluster must provide them to the driver (docs/deploy.md)",
            target.master,
            target.deploy_mode or "client",
            ", ".join(left_out),
        )
    return {name: value for name, value in env.items() if name not in SECRET_VARIABLES}


def without_environment(env: Mapping[str, str], target: SparkTarget) -> dict[str, str]:
    """No environment at all: SparkSubmitHook refuses ``env_vars`` in standalone cluster mode."""
    if env:
        log.warning(
            "%s in cluster deploy mode takes no driver environment: %s are not passed; the "
            "workers must provide them (spark-env.sh), or use client mode (docs/deploy.md)",
            target.master,
            ", ".join(sorted(env)),
        )
    return {}


def s3_environment(settings: S3Settings) -> dict[str, str]:
    """The connection's S3 settings as the variables :meth:`S3Settings.from_env` reads."""
    env = {
        "AWS_REGION": settings.region,
        "FEEDROUTER_S3_ADDRESSING_STYLE": settings.addressing_style,
        "FEEDROUTER_S3_MAX_ATTEMPTS": str(settings.max_attempts),
        "FEEDROUTER_S3_CONNECT_TIMEOUT": str(settings.connect_timeout),
        "FEEDROUTER_S3_READ_TIMEOUT": str(settings.read_timeout),
    }
    if settings.endpoint_url:
        env["FEEDROUTER_S3_ENDPOINT_URL"] = settings.endpoint_url
    return {name: value for name, value in env.items() if value}


def submit_hook(submission: Submission, target: SparkTarget) -> SparkSubmitHook:
    """The provider's hook for ``submission`` on the target's connection."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    return SparkSubmitHook(
        conf=submission.conf,
        conn_id=target.conn_id or "spark_default",
        archives=submission.archives,
        name=submission.name,
        application_args=submission.application_args,
        env_vars=submission.env_vars or None,
    )


#: How SparkSubmitHook reports spark-submit's exit status.
_EXIT_STATUS = re.compile(r"Error code is: (\d+)")


def submitted_exit_status(exc: BaseException) -> int | None:
    """The application's exit status in a SparkSubmitHook failure, when it reports one."""
    found = _EXIT_STATUS.search(str(exc))
    return int(found.group(1)) if found else None


def submitted_summary(hook: FeedrouterHook, batch: HourBatch) -> dict[str, Any]:
    """What the submitted application recorded for the batch: its newest ledger row."""
    from feedrouter.catalog import status

    engine = hook.catalog_engine()
    try:
        with engine.connect() as conn:
            rows = status.batch_ledger(conn, batch.feed, batch.hour)
    finally:
        engine.dispose()
    if not rows:
        from feedrouter.errors import error

        raise error("FR600", f"spark-submit of {batch.label} finished but the ledger has no row for it")
    return {**batch.to_dict(), **rows[0]}
