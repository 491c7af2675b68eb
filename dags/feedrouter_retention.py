"""
### feedrouter_retention: delete the join witnesses no join stage reads any more

Daily. The route DAG's `route_batch` writes, for every feed a join subscription reads, each hour's
**join witnesses** to the state store (`FEEDROUTER_STATE_URI`, default
`file://$FEEDROUTER_HOME/state`, under `witnesses/<feed>/dt=YYYY-MM-DD/hour=HH/`); the join stage
of an hour reads those of the hours its window reaches back to. Without this DAG they accumulate
forever.

`delete_witnesses` deletes, for every active feed with an event time, the whole hour folders
(`_SUCCESS` first, so no join stage takes a half-deleted hour for a complete one) that no join
stage can still need: an hour `H` is last read by the join stage of the hour
`H + max_join_window + lateness` (rounded up to hours), which runs once that hour has ended, at the
latest by `FEEDROUTER_INPUT_DEADLINE` after it. So a feed keeps

    max_join_window (the feed's) + allowed_lateness (the longest of the event-time feeds:
    a join of another feed reads this feed's witnesses with its own) + FEEDROUTER_INPUT_DEADLINE

of witnesses, plus one day between runs of this DAG. XCom: `{feed: [hours deleted]}`.

**Sizing**: about 100 bytes per message, plus each node a join block binds (its leaf values and
return fragments, compressed); multiply by the messages of the retained hours (see the README's
"State" section). To keep more (for backfills far in the past), raise the feed's
`max_join_window` or the deadline, or pause this DAG.

**Deleted too early?** Nothing is lost while the inputs are stored: a join stage whose window
reaches an hour without witnesses that was routed back-fills them from its inputs (stage 1 again,
witnesses only) before joining. Only when the inputs are gone too does such a join stage fail
(FR612), naming the hour.

**Manual runs**: *Trigger* to clean up now. `catchup` is off: one run does all the work due.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from airflow.sdk import DAG, CronTriggerTimetable

from feedrouter.airflow.operators import WitnessRetentionOperator

with DAG(
    dag_id="feedrouter_retention",
    description="Delete the join witnesses older than every join window, per feed",
    doc_md=__doc__,
    schedule=CronTriggerTimetable("20 3 * * *", timezone="UTC"),
    start_date=datetime(2026, 1, 1, tzinfo=timezone.utc),
    catchup=False,
    max_active_runs=1,
    dagrun_timeout=timedelta(hours=6),
    tags=["feedrouter", "retention"],
    default_args={
        "owner": "feedrouter",
        "retries": 3,
        "retry_delay": timedelta(minutes=5),
        "retry_exponential_backoff": 2.0,
        "max_retry_delay": timedelta(minutes=30),
        "execution_timeout": timedelta(hours=2),
    },
) as dag:
    delete_witnesses = WitnessRetentionOperator(
        task_id="delete_witnesses",
        doc_md="For every active feed with an event time, deletes the witness hours older than "
        "its `max_join_window` plus the longest `allowed_lateness` plus `FEEDROUTER_INPUT_DEADLINE` "
        "(whole hours, `_SUCCESS` first). XCom: `{feed: [hours deleted]}`. S3 or catalog "
        "hiccups are retried; an hour left half-deleted is finished by the next attempt.",
    )
