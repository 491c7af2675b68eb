"""
### feedrouter_plans: rebuild the plans of the feeds whose catalog changed

Users change the catalog with plain SQL (insert a subscription, pause a subscriber, edit a DTD).
Each change bumps the feed's **catalog version**. This DAG finds the active feeds whose version moved
past their latest plan build and rebuilds **only those** (one mapped `build_plan` task per feed); a
feed whose catalog did not change is not touched.

**When it runs — the design choice.** Nothing shipped with Airflow watches a SQL table. Two ways
were weighed:

1. a check DAG on a short schedule (every minute) that emits an asset event when a version moved,
   and this DAG scheduled on that asset: simple, but it creates ~1,440 mostly empty runs a day,
   reacts no faster than its schedule and fills the metadata database with noise;
2. **an event trigger** (`CatalogChangeTrigger`, a `BaseEventTrigger`) in an `AssetWatcher` on the
   asset `feedrouter_catalog`: it runs in the triggerer, polls one small query every
   `FEEDROUTER_CATALOG_POLL` seconds (default 30) and fires only when a feed's version differs from
   its latest build's. A DAG run exists only when there is something to build.

This DAG uses **2**. Polling was chosen over Postgres `LISTEN` (the catalog's triggers also
`NOTIFY`): polling survives database restarts and connection poolers (PgBouncer's transaction
mode drops `LISTEN`), and cannot miss a notification sent while the triggerer was restarting. The
trigger compares with the plan builds themselves, so a duplicate or missed event costs nothing:
this DAG always decides from the catalog what to build.
As a safety net for a stopped triggerer, the DAG also runs at minute 50 of every hour, ten minutes
before the hourly routing. Requires a running `airflow triggerer`.

**Manual runs**: trigger it to rebuild whatever is out of date now (nothing, if all is current).

**Output**: `plan_builds` rows and artifacts under `FEEDROUTER_PLANS_URI`; an asset event on
`feedrouter_plans` per build. Invalid subscriptions never fail a build: they are marked `invalid`
with their error in the catalog (see the *Feedrouter* page in the UI).
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow.sdk import DAG, Asset, AssetOrTimeSchedule, AssetWatcher, CronTriggerTimetable

from feedrouter.airflow.operators import FEED_LABEL, BuildPlanOperator, StaleFeedsOperator
from feedrouter.airflow.triggers import CatalogChangeTrigger

CATALOG = Asset(
    name="feedrouter_catalog",
    uri="x-feedrouter://catalog",
    watchers=[AssetWatcher(name="feedrouter_catalog_changes", trigger=CatalogChangeTrigger())],
)
PLANS = Asset(name="feedrouter_plans", uri="x-feedrouter://plans")

with DAG(
    dag_id="feedrouter_plans",
    description="Rebuild the plans of the feeds whose catalog version moved",
    doc_md=__doc__,
    schedule=AssetOrTimeSchedule(
        timetable=CronTriggerTimetable("50 * * * *", timezone="UTC"), assets=CATALOG
    ),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=2),
    tags=["feedrouter", "plans"],
    default_args={
        "owner": "feedrouter",
        "retries": 3,
        "retry_delay": timedelta(minutes=1),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=15),
        "execution_timeout": timedelta(minutes=45),
    },
) as dag:
    stale_feeds = StaleFeedsOperator(
        task_id="stale_feeds",
        execution_timeout=timedelta(minutes=5),
        doc_md="Reads every active feed's catalog version and its latest plan build's version; returns "
        "the feeds where they differ (or that have no build). An empty list skips `build_plan`.",
    )
    build_plan = BuildPlanOperator.partial(
        task_id="build_plan",
        outlets=[PLANS],
        map_index_template=FEED_LABEL,
        doc_md="Builds one feed's plan at its current catalog version (a no-op if another run built "
        "it meanwhile): compiles its active subscriptions with the feed's DTD, records each one's "
        "status and error, stores the artifact, records the `plan_builds` row. Terminal errors (an "
        "invalid DTD, an unknown feed) fail at once; database or S3 hiccups are retried.",
    ).expand(feed=stale_feeds.output)
