"""
### feedrouter_route: route every feed's hour of messages on Spark

Hourly, for the hour that just ended (the run's data interval, UTC), and for each active feed:

1. `hour_batches` lists the batches: every active feed, or the one named in the trigger form;
2. per feed (`route_hour`, one mapped group per feed, so a late feed never holds up the others):
   - `wait_for_input` waits until the hour's input is complete: the hour's grace period
     (`FEEDROUTER_INPUT_GRACE`, 10 minutes) has passed and, when `FEEDROUTER_INPUT_MARKER` is set,
     the producer's marker (e.g. `_SUCCESS`) exists under the hour's prefix. Without the marker by
     the deadline (`FEEDROUTER_INPUT_DEADLINE`, 6 hours after the hour) it fails, naming the prefix.
     It waits in reschedule mode, holding no worker slot;
   - `route_batch` routes the hour with the feed's **latest plan build** on Spark and records the
     `batches`/`deliveries` ledger. Where it runs follows the `FEEDROUTER_SPARK_CONN_ID`
     connection: none or a `local[…]` master: in the task; a `spark_connect` connection: in the
     task against its `sc://` endpoint; any other master (standalone, YARN, Kubernetes):
     spark-submit of `feedrouter.spark.app` through the apache-spark provider's hook, with the
     connection's deploy mode and conf, the feed's `spark_conf` from the catalog and the packed
     environment of the connection's `feedrouter-archive` extra (see docs/deploy.md). An hour
     without input is recorded as an explicit `empty` batch; a feed without a plan build fails at
     once, saying to run `feedrouter_plans`. A feed whose messages a join reads also writes the
     hour's **join witnesses** to the state store (`FEEDROUTER_STATE_URI`, handed to a submitted
     driver in its environment);
   - `wait_for_witnesses` (join subscriptions only; succeeds at once for a feed without any)
     waits in reschedule mode until every hour of the joins' window — this feed's and each feed
     its joins read, back to the longest window plus the allowed lateness, from
     `FEEDROUTER_ROUTE_START` on — is routed and has its witnesses. It waits for *witnesses*, never
     for the join results of earlier hours, so catch-up runs in parallel and out-of-order backfills
     deliver the same pairs as hours routed in order;
   - `join_batch` runs the hour's join stage from the task (Spark's executors over the window's
     witnesses, on the in-task master, or a local session when routing is submitted to a cluster;
     `FEEDROUTER_JOIN_ENGINE` names the engine): each join
     subscription's pairs, both
     messages' provenance in each result (part format 2), recorded in the hour's batch. Hours of the
     window routed before a join subscription existed (their witnesses lack its blocks) are first
     back-filled from the inputs still in the store, witnesses only; a no-op for a feed without
     join subscriptions;
3. `ledger_report` checks every batch reached the ledger and logs what each one delivered.

**Backfills**: `catchup` is on; create a backfill from the DAG's page (*Trigger* → *Backfill*) for a
date range, or re-run one hour by clearing its run or one feed's mapped task. Re-running an hour
delivers identical objects and no duplicate (exactly-once delivery; see the Spark docs), join
deliveries included. Witnesses older than the joins' window are deleted by `feedrouter_retention`.

**Manual runs**: *Trigger* with the form: `feed` (empty: all active feeds) and `hour`
(`YYYY-MM-DDTHH` in UTC; empty: the run's data interval).

**Start date**: `FEEDROUTER_ROUTE_START` or `[feedrouter] route_start` (ISO date, default
2026-11-01): the first hour catchup routes once the DAG is unpaused.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone

from airflow.sdk import DAG, CronDataIntervalTimetable, Param, task_group

from feedrouter.airflow.operators import (
    HourBatchesOperator,
    JoinBatchOperator,
    LedgerReportOperator,
    RouteBatchOperator,
)
from feedrouter.airflow.sensors import HourInputSensor, JoinWitnessSensor
from feedrouter.airflow.settings import airflow_settings
from feedrouter.hours import HOUR_PATTERN

# Read when the file is parsed (a start date cannot wait for a task): a bad value is an import error
# naming the setting (FR700), not a bare ValueError.
START = datetime.combine(airflow_settings().route_start, time(0), tzinfo=timezone.utc)

with DAG(
    dag_id="feedrouter_route",
    description="Route each feed's hour of XML messages to its subscribers on Spark",
    doc_md=__doc__,
    schedule=CronDataIntervalTimetable("0 * * * *", timezone="UTC"),
    start_date=START,
    catchup=True,
    max_active_runs=3,
    max_active_tasks=8,
    dagrun_timeout=timedelta(hours=12),
    tags=["feedrouter", "routing"],
    params={
        "feed": Param(
            "",
            type="string",
            title="Feed",
            description="One feed to route; empty routes every active feed.",
        ),
        "hour": Param(
            "",
            type="string",
            pattern=f"^$|{HOUR_PATTERN}",
            title="Hour (UTC)",
            description="The hour to route, as YYYY-MM-DDTHH (e.g. 2026-11-22T16); empty: the "
            "run's data interval.",
        ),
    },
    default_args={
        "owner": "feedrouter",
        "retries": 3,
        "retry_delay": timedelta(minutes=2),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=30),
        "execution_timeout": timedelta(minutes=15),
    },
) as dag:
    hour_batches = HourBatchesOperator(
        task_id="hour_batches",
        doc_md="Lists the batches of this run: `{feed, hour}` for the `feed` param or every active "
        "feed, and the `hour` param or the run's data interval start.",
    )

    @task_group(group_id="route_hour")
    def route_hour(batch: dict[str, str]) -> None:
        """One feed's hour: wait for its input, route it, wait for its joins' witnesses, join it."""
        wait_for_input = HourInputSensor(
            task_id="wait_for_input",
            batch=batch,
            poke_interval=timedelta(minutes=5),
            # A backstop only: the sensor fails first, and more clearly, at FEEDROUTER_INPUT_DEADLINE.
            timeout=timedelta(hours=24),
            retries=1,
            doc_md="Waits (reschedule mode) until the hour's grace period has passed and, with "
            "`FEEDROUTER_INPUT_MARKER` set, the producer's marker exists under the hour's prefix; "
            "fails without retry when the deadline passes without it. XCom: the prefix and its "
            "object count.",
        )
        route_batch = RouteBatchOperator(
            task_id="route_batch",
            batch=batch,
            execution_timeout=timedelta(hours=2),
            doc_md="Routes the hour with the feed's latest plan build on Spark (in the task, or "
            "spark-submit to the spark connection's cluster) and records the "
            "`batches`/`deliveries` ledger; deliveries are exactly-once, so a retry or a re-run "
            "rewrites identical objects. Terminal errors (no plan build, a refused artifact) fail "
            "at once; transient ones (S3 throttling, a lost connection) are retried with backoff.",
        )
        wait_for_witnesses = JoinWitnessSensor(
            task_id="wait_for_witnesses",
            batch=batch,
            poke_interval=timedelta(minutes=5),
            timeout=timedelta(hours=12),
            retries=1,
            doc_md="Waits (reschedule mode) until every hour of the join subscriptions' window, of "
            "this feed and of the feeds they read, is routed and has its witnesses in the state "
            "store; succeeds at once when the feed has no join subscription. Never waits for the "
            "join results of earlier hours, so catch-up and out-of-order backfills stay correct.",
        )
        join_batch = JoinBatchOperator(
            task_id="join_batch",
            batch=batch,
            execution_timeout=timedelta(hours=1),
            doc_md="Runs the hour's join stage in the task: back-fills the witnesses of window hours "
            "routed before a join subscription existed (from the retained inputs), delivers each join "
            "subscription's pairs (part format 2) and records them in the hour's batch. XCom: the "
            "join report (status `joined` or `no-joins`, subscriptions, pairs, deliveries). Missing "
            "witnesses (FR609) are retried; terminal errors fail at once.",
        )
        wait_for_input >> route_batch >> wait_for_witnesses >> join_batch

    routed = route_hour.expand(batch=hour_batches.output)

    ledger_report = LedgerReportOperator(
        task_id="ledger_report",
        batches=hour_batches.output,
        doc_md="Checks that every batch of the run is in the `batches` ledger and logs per batch: "
        "status, documents, quarantined messages, deliveries and results.",
    )
    routed >> ledger_report
