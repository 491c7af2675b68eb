"""Join subscriptions in the Airflow DAGs (issue 16): feedrouter_route's `wait_for_witnesses` and
`join_batch` after `route_batch`, and feedrouter_retention. Two RSS-like feeds with an event time
(`//pubDate`, RFC 822) in a real Postgres catalog, inputs, plans, outputs and witnesses on moto's
S3 server, all through Airflow connections."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Engine, text

from feedrouter.catalog import ledger
from feedrouter.hours import DEFAULT_LAYOUT, batch_prefix, format_hour, to_hour
from feedrouter.workload.joins import generate_feed_hours
from tests.integration.airflow_support import *  # noqa: F403 (fixtures; configures Airflow)
from tests.integration.airflow_support import run_dag, task_states
from tests.integration.rows import add_subscription

pytestmark = pytest.mark.integration

FEEDS = ("blogs", "news")  # the order hour_batches maps them in (sorted)
#: The stream's first hour: the default FEEDROUTER_ROUTE_START (2026-11-01) at midnight, so the
#: window of the routed hour reaches back to no hour that was never routed.
FIRST = datetime(2026, 11, 1, 0, tzinfo=timezone.utc)
LATER = datetime(2026, 11, 1, 10, tzinfo=timezone.utc)
JOIN = (
    'import module namespace fr = "urn:feedrouter:stream:1";\n'
    'for $a in fr:stream()//item, $b in fr:stream("blogs")//item\n'
    'where $a/author = $b/author and fr:within($a, $b, "PT3H")\n'
    "return <pair>{ $a/guid }{ $b/guid }</pair>"
)


def hook() -> Any:
    from feedrouter.airflow.operators import make_hook

    return make_hook()


@pytest.fixture
def joined_feeds(
    catalog: Engine, feedrouter_conns: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> dict[str, str]:
    """Feeds news and blogs with an event time; subscriber bo's join `late` on news reads both,
    ada's `titles` is a plain subscription of blogs. Witnesses go to s3://<bucket>/state."""
    bucket = feedrouter_conns["bucket"]
    monkeypatch.setenv("FEEDROUTER_STATE_URI", f"s3://{bucket}/state")
    with catalog.begin() as conn:
        for feed in FEEDS:
            conn.execute(
                text(
                    "INSERT INTO feedrouter.feeds (name, input_prefix, event_time_path, event_time_format,"
                    " allowed_lateness) VALUES (:f, :p, '//pubDate', 'rfc822', interval '1 hour')"
                ),
                {"f": feed, "p": f"s3://{bucket}/in/{feed}"},
            )
        for name in ("ada", "bo"):
            conn.execute(
                text("INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES (:n, :p)"),
                {"n": name, "p": f"s3://{bucket}/out/{name}"},
            )
        add_subscription(conn, "ada", "blogs", "titles", "//item/title")
        add_subscription(conn, "bo", "news", "late", JOIN)
    return feedrouter_conns


def upload(conns: dict[str, str], hour: datetime) -> None:
    """One generated hour of both feeds under their input prefixes."""
    generated = generate_feed_hours(seed=16, feeds=FEEDS, hours=1, items_per_hour=15, start=hour)
    for feed, batches in generated.items():
        inputs = hook().store(batch_prefix(DEFAULT_LAYOUT, f"s3://{conns['bucket']}/in/{feed}", hour))
        for message in batches[0].messages:
            inputs.put(message.key, message.data)


def xcom(run: Any, task_id: str, map_index: int = -1) -> Any:
    """The return value a task instance of a finished run pushed."""
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        query = XComModel.get_many(
            run_id=run.run_id, key="return_value", task_ids=task_id, dag_ids=run.dag_id, map_indexes=map_index
        )
        row = session.scalars(query).one()
        return XComModel.deserialize_value(row)


def test_the_route_dag_waits_for_witnesses_then_joins_each_routed_hour(dagbag: Any) -> None:
    dag = dagbag.dags["feedrouter_route"]
    route, wait, join = (
        dag.get_task(f"route_hour.{name}") for name in ("route_batch", "wait_for_witnesses", "join_batch")
    )

    assert route.downstream_task_ids == {wait.task_id}
    assert wait.downstream_task_ids == {join.task_id}
    assert wait.mode == "reschedule" and wait.poke_interval == 300
    for words in ("wait_for_witnesses", "join_batch", "never", "back-filled", "FEEDROUTER_STATE_URI"):
        assert words in dag.doc_md, words
    retention = dagbag.dags["feedrouter_retention"]
    assert not retention.catchup and [task.task_id for task in retention.tasks] == ["delete_witnesses"]
    assert "FEEDROUTER_INPUT_DEADLINE" in retention.doc_md and "back-fills" in retention.doc_md


@pytest.mark.parametrize("engine", ["partitioned", "python"])
def test_the_route_dag_joins_the_hour_after_routing_it(
    joined_feeds: dict[str, str], dagbag: Any, engine: str, catalog: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from feedrouter.delivery import read_part
    from feedrouter.spark.witnesses import has_hour

    monkeypatch.setenv("FEEDROUTER_JOIN_ENGINE", engine)
    upload(joined_feeds, FIRST)
    assert run_dag(dagbag, "feedrouter_plans").state == "success"

    run = run_dag(
        dagbag,
        "feedrouter_route",
        logical_date=FIRST + timedelta(hours=1),
        run_conf={"feed": "", "hour": format_hour(FIRST)},
    )

    states = task_states(run)
    assert run.state == "success", states
    for index in (0, 1):
        assert states[("route_hour.wait_for_witnesses", index)] == "success"
        assert states[("route_hour.join_batch", index)] == "success"
    blogs, news = (xcom(run, "route_hour.join_batch", index) for index in (0, 1))
    assert (blogs["feed"], blogs["status"]) == ("blogs", "no-joins")
    assert (news["feed"], news["status"], news["subscriptions"], news["engine"]) == (
        "news",
        "joined",
        1,
        engine,
    )
    assert news["pairs"] > 0 and news["deliveries"] == 1

    state = hook().store(f"s3://{joined_feeds['bucket']}/state")
    assert all(has_hour(state, feed, FIRST) for feed in FEEDS)
    with catalog.connect() as conn:  # the run listed its feeds
        assert ledger.listed_feeds(conn, FIRST) == set(FEEDS)
    outputs = hook().store(f"s3://{joined_feeds['bucket']}/out/bo/late/news/dt=2026-11-01/hour=00")
    parts = [key for key in outputs.list("") if key.startswith("part-")]
    results = [result for key in parts for result in read_part(outputs.get(key))]
    assert len(results) == news["pairs"]
    pairs = [result.pair for result in results]  # format 2: both messages' provenance
    assert all(pair is not None and (pair[0].feed, pair[1].feed) == ("news", "blogs") for pair in pairs)


def test_the_witness_sensor_waits_for_an_earlier_hour_of_the_window_not_its_join_results(
    joined_feeds: dict[str, str], catalog: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from feedrouter.airflow import routing
    from feedrouter.airflow.operators import JoinBatchOperator
    from feedrouter.airflow.sensors import JoinWitnessSensor
    from feedrouter.catalog import build_plan
    from feedrouter.spark import BatchOptions, route_batch

    monkeypatch.setenv("FEEDROUTER_ROUTE_START", "2026-11-01")  # the stream starts before LATER
    upload(joined_feeds, LATER)
    router = hook()
    state = f"s3://{joined_feeds['bucket']}/state"
    options = BatchOptions(inline=True, state_uri=state)

    def route(hour: datetime) -> None:
        for feed in FEEDS:
            route_batch(
                catalog,
                feed,
                hour,
                plans_store=router.plans_store(),
                stores=routing.store_opener(router),
                options=options,
            )

    for feed in FEEDS:
        build_plan(catalog, feed, router.plans_store())
    route(LATER)
    batch = {"feed": "news", "hour": format_hour(LATER)}
    sensor = JoinWitnessSensor(task_id="wait_for_witnesses", batch=batch)

    assert sensor.mode == "reschedule"
    assert sensor.poke({}) is False  # 06…09 are in the window (3 h + 1 h lateness), not routed yet
    plain = JoinWitnessSensor(task_id="wait_for_witnesses", batch={"feed": "blogs", "hour": batch["hour"]})
    assert plain.poke({}) is True  # no join subscription of its own: nothing to wait for

    for back in range(1, 5):
        route(LATER - timedelta(hours=back))  # routed (empty), never joined
    assert sensor.poke({}) is True

    summary = JoinBatchOperator(task_id="join_batch", batch=batch).execute({})
    assert summary["status"] == "joined" and summary["pairs"] > 0


def test_the_witness_sensor_skips_hours_whose_route_run_did_not_list_a_feed(
    joined_feeds: dict[str, str], catalog: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """blogs added after the runs of 06…09 listed their feeds: those runs never route it, and the
    join of 10 does not wait for its witnesses there (it waited for ever, holding the DAG's runs)."""
    from feedrouter.airflow import routing
    from feedrouter.airflow.operators import JoinBatchOperator
    from feedrouter.airflow.sensors import JoinWitnessSensor
    from feedrouter.catalog import build_plan
    from feedrouter.spark import BatchOptions, route_batch

    monkeypatch.setenv("FEEDROUTER_ROUTE_START", "2026-11-01")
    upload(joined_feeds, LATER)
    router = hook()
    options = BatchOptions(inline=True, state_uri=f"s3://{joined_feeds['bucket']}/state")
    for feed in FEEDS:
        build_plan(catalog, feed, router.plans_store())
    earlier = [LATER - timedelta(hours=back) for back in range(1, 5)]
    for hour in [*earlier, LATER]:
        feeds = FEEDS if hour == LATER else ("news",)
        with catalog.begin() as conn:
            ledger.record_listing(conn, hour, feeds)
        for feed in feeds:
            store = routing.store_opener(router)
            route_batch(catalog, feed, hour, plans_store=router.plans_store(), stores=store, options=options)
    sensor = JoinWitnessSensor(
        task_id="wait_for_witnesses", batch={"feed": "news", "hour": format_hour(LATER)}
    )
    assert sensor.poke({}) is True
    summary = JoinBatchOperator(task_id="join_batch", batch=sensor.batch).execute({})
    assert summary["status"] == "joined"
    with catalog.begin() as conn:  # listed after all (a run cleared and run again): waited for
        ledger.record_listing(conn, earlier[0], FEEDS)
    assert sensor.poke({}) is False


def test_the_retention_dag_deletes_old_witness_hours_and_keeps_recent_ones(
    joined_feeds: dict[str, str], dagbag: Any
) -> None:
    from feedrouter.join.relations import HourWitnesses
    from feedrouter.spark.witnesses import witness_hours, write_hour

    state = hook().store(f"s3://{joined_feeds['bucket']}/state")
    now = to_hour(datetime.now(timezone.utc))
    old, recent = now - timedelta(days=30), now - timedelta(hours=2)
    for hour in (old, recent):
        write_hour(state, HourWitnesses("news", hour, ("block",)))
    write_hour(state, HourWitnesses("blogs", recent, ("block",)))

    run = run_dag(dagbag, "feedrouter_retention")

    assert run.state == "success", task_states(run)
    assert xcom(run, "delete_witnesses") == {"blogs": [], "news": [format_hour(old)]}
    assert witness_hours(state, "news") == [recent]
    assert witness_hours(state, "blogs") == [recent]
    assert not list(state.list(f"witnesses/news/dt={old:%Y-%m-%d}/"))
