"""The DAGs import cleanly and are documented; feedrouter_plans rebuilds exactly the feeds whose
catalog changed (real Postgres catalog, plans in the moto S3 server, through Airflow connections)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from typing import Any

import pytest
from sqlalchemy import Engine, func, select

from feedrouter.catalog import Feed, PlanBuild
from tests.integration.airflow_support import *  # noqa: F403 (fixtures; configures Airflow)
from tests.integration.airflow_support import AIRFLOW_HOME, rendered_labels, run_dag, task_states
from tests.integration.rows import add_dtd, add_feed, add_subscriber, add_subscription

pytestmark = pytest.mark.integration

DAG_IDS = {"feedrouter_plans", "feedrouter_route", "feedrouter_retention"}


def test_the_dags_import_without_errors_and_document_every_task(dagbag: Any) -> None:
    assert dagbag.import_errors == {}
    assert set(dagbag.dags) >= DAG_IDS
    for dag_id in DAG_IDS:
        dag = dagbag.dags[dag_id]
        assert dag.doc_md and len(dag.doc_md) > 200, dag_id
        assert "feedrouter" in dag.tags
        for task in dag.tasks:
            assert task.doc_md, f"{dag_id}.{task.task_id} has no doc_md"
            assert task.owner == "feedrouter"
            assert task.retries >= 1 and task.execution_timeout is not None, task.task_id


def test_the_plugin_is_loaded_once_from_the_plugins_folder(airflow_db: Any) -> None:
    from airflow import plugins_manager

    plugins, errors = plugins_manager._get_plugins()
    assert errors == {}
    assert [plugin.name for plugin in plugins].count("feedrouter") == 1


@pytest.fixture
def two_feeds(catalog: Engine, feedrouter_conns: dict[str, str]) -> Engine:
    """Feeds news and wire with one subscription each, inserted with plain SQL."""
    with catalog.begin() as conn:
        add_dtd(conn, "news")
        add_feed(conn, "news", dtd="news")
        add_feed(conn, "wire")
        add_subscriber(conn, "alice")
        add_subscription(conn, "alice", "news", "titles", "//head/title")
        add_subscription(conn, "alice", "wire", "stories", "//story")
    return catalog


def builds_per_feed(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(
            select(Feed.name, func.count(PlanBuild.id))
            .join(PlanBuild, PlanBuild.feed_id == Feed.id)
            .group_by(Feed.name)
        )
        return dict(rows.all())


def test_an_sql_insert_gets_a_plan_build(two_feeds: Engine, dagbag: Any) -> None:
    run = run_dag(dagbag, "feedrouter_plans")

    assert run.state == "success"
    assert rendered_labels(run, "build_plan") == ["news", "wire"]
    assert builds_per_feed(two_feeds) == {"news": 1, "wire": 1}


def test_a_second_insert_triggers_one_rebuild_of_that_feed_only(two_feeds: Engine, dagbag: Any) -> None:
    from feedrouter.airflow.triggers import CatalogChangeTrigger

    run_dag(dagbag, "feedrouter_plans")
    trigger = CatalogChangeTrigger(catalog_conn_id="feedrouter_catalog", poll_seconds=0.2)
    assert first_event(trigger, timeout=1.5) is None  # every plan is current: no event

    with two_feeds.begin() as conn:
        add_subscription(conn, "alice", "news", "more", "//body")
    event = first_event(trigger, timeout=10)
    assert event is not None and list(event.payload["feeds"]) == ["news"]

    run = run_dag(dagbag, "feedrouter_plans")
    assert rendered_labels(run, "build_plan") == ["news"]
    assert builds_per_feed(two_feeds) == {"news": 2, "wire": 1}
    again = run_dag(dagbag, "feedrouter_plans")  # nothing changed since: nothing to build
    assert task_states(again)[("build_plan", -1)] == "skipped"


def test_the_trigger_fires_once_per_change(two_feeds: Engine) -> None:
    from feedrouter.airflow.triggers import CatalogChangeTrigger

    trigger = CatalogChangeTrigger(catalog_conn_id="feedrouter_catalog", poll_seconds=0.2)
    # However long the first poll takes to come (imports, connecting): one event for both feeds,
    # then nothing for the next polls.
    events = collect_events(trigger, seconds=60, limit=2, quiet_after_first=1.5)
    assert [sorted(event.payload["feeds"]) for event in events] == [["news", "wire"]]


def first_event(trigger: Any, timeout: float) -> Any:
    """The trigger's first event within ``timeout`` seconds, or None."""
    events = collect_events(trigger, seconds=timeout, limit=1)
    return events[0] if events else None


def collect_events(
    trigger: Any, seconds: float, limit: int | None = None, quiet_after_first: float | None = None
) -> list[Any]:
    """Run the trigger for ``seconds`` (or until ``limit`` events) and return its events; with
    ``quiet_after_first``, stop that many seconds after the first event."""

    async def collect() -> list[Any]:
        events: list[Any] = []
        stream = trigger.run()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        try:
            while limit is None or len(events) < limit:
                left = deadline - loop.time()
                events.append(await asyncio.wait_for(stream.__anext__(), max(left, 0.001)))
                if quiet_after_first is not None and len(events) == 1:
                    deadline = min(deadline, loop.time() + quiet_after_first)
        except asyncio.TimeoutError:
            pass
        finally:
            await stream.aclose()
        return events

    return asyncio.run(collect())


def test_a_running_triggerer_turns_a_catalog_change_into_an_asset_event(
    two_feeds: Engine, dagbag: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real thing: the DAG's AssetWatcher registered by Airflow, the trigger in `airflow
    triggerer`, and an asset event naming the changed feed once a subscription is inserted."""
    monkeypatch.setenv("FEEDROUTER_CATALOG_POLL", "1")
    run_dag(dagbag, "feedrouter_plans")  # both feeds current
    set_paused("feedrouter_plans", False)
    reserialize()  # what the dag-processor does: registers the watcher of an unpaused DAG's asset
    before = len(catalog_events())
    log = open(AIRFLOW_HOME / "triggerer.log", "w")  # noqa: SIM115 (closed below, after the process)
    command = [sys.executable, "-m", "airflow", "triggerer"]
    triggerer = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
    try:
        with two_feeds.begin() as conn:
            add_subscription(conn, "alice", "wire", "late", "//late")
        events = wait_for(lambda: catalog_events()[before:], timeout=120)
    finally:
        triggerer.terminate()
        triggerer.wait(timeout=30)
        log.close()
        set_paused("feedrouter_plans", True)
    assert [sorted(json.loads(extra)["payload"]["feeds"]) for extra in events] == [["wire"]]


def reserialize() -> None:
    """``airflow dags reserialize``, in this process."""
    from airflow.dag_processing.bundles.manager import DagBundlesManager
    from airflow.dag_processing.dagbag import BundleDagBag, sync_bag_to_db
    from airflow.utils.session import create_session

    with create_session() as session:
        for bundle in DagBundlesManager().get_all_dag_bundles():
            bundle.initialize()
            bag = BundleDagBag(bundle.path, bundle_path=bundle.path, bundle_name=bundle.name)
            sync_bag_to_db(bag, bundle.name, bundle_version=None, session=session)


def set_paused(dag_id: str, paused: bool) -> None:
    from airflow.models import DagModel
    from airflow.utils.session import create_session

    with create_session() as session:
        session.query(DagModel).filter(DagModel.dag_id == dag_id).update({"is_paused": paused})


def catalog_events() -> list[str]:
    """The extras of the asset events of feedrouter_catalog, oldest first."""
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = (
            session.query(AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .filter(AssetModel.name == "feedrouter_catalog")
            .order_by(AssetEvent.id)
        )
        return [extra if isinstance(extra, str) else json.dumps(extra) for (extra,) in rows]


def wait_for(probe: Any, timeout: float) -> Any:
    """Poll ``probe`` until it returns something truthy, or fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not (result := probe()):
        log = AIRFLOW_HOME / "triggerer.log"
        assert time.monotonic() < deadline, (
            f"nothing after {timeout}s; FEEDROUTER_TEST_KEEP_AIRFLOW_HOME=1 keeps {log}"
        )
        time.sleep(1)
    return result
