"""feedrouter_route end to end: messages in the moto S3 server, subscriptions inserted with SQL into
a real Postgres, the plan built by feedrouter_plans, the hour routed on Spark local[2] — all through
Airflow connections — plus the empty hour, the missing plan and the input deadline."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from sqlalchemy import Engine, text

from tests.integration.airflow_support import *  # noqa: F403 (fixtures; configures Airflow)
from tests.integration.airflow_support import iter_keys, run_dag, task_states
from tests.integration.rows import WIRE_DTD, add_dtd

pytestmark = pytest.mark.integration

needs_spark = pytest.mark.skipif(
    importlib.util.find_spec("feedrouter.spark") is None, reason="feedrouter.spark is not there yet"
)

HOUR = datetime(2026, 11, 1, 10, tzinfo=timezone.utc)
MESSAGES = [
    b"<nitf><head><title>Caf&#233; prices</title></head><body><body.content>a</body.content></body></nitf>",
    b"<nitf><head><title>Rain</title></head><body/></nitf>",
    b"<nitf><body><body.content>no title</body.content></body></nitf>",
]


def s3_client(conns: dict[str, str]) -> Any:
    from feedrouter.airflow.hooks import s3_client as client

    return client("feedrouter_s3")


@pytest.fixture
def wire(catalog: Engine, feedrouter_conns: dict[str, str]) -> dict[str, str]:
    """Feed wire reading s3://<bucket>/input/wire, subscriber acme delivering to s3://<bucket>/out/acme."""
    bucket = feedrouter_conns["bucket"]
    with catalog.begin() as conn:
        add_dtd(conn, "wire", WIRE_DTD)
        conn.execute(
            text(
                "INSERT INTO feedrouter.feeds (name, input_prefix, dtd_id)"
                " SELECT 'wire', :p, id FROM feedrouter.dtds WHERE name = 'wire'"
            ),
            {"p": f"s3://{bucket}/input/wire"},
        )
        conn.execute(
            text("INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES ('acme', :p)"),
            {"p": f"s3://{bucket}/out/acme"},
        )
        for name, query in [("titles", "//head/title"), ("bodies", "/nitf[body/body.content]")]:
            conn.execute(
                text(
                    "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
                    " SELECT s.id, f.id, :n, :q FROM feedrouter.subscribers s, feedrouter.feeds f"
                    " WHERE s.name = 'acme' AND f.name = 'wire'"
                ),
                {"n": name, "q": query},
            )
    return feedrouter_conns


def upload_hour(conns: dict[str, str], hour: datetime, messages: list[bytes]) -> None:
    client = s3_client(conns)
    prefix = f"input/wire/dt={hour:%Y-%m-%d}/hour={hour:%H}"
    for i, body in enumerate(messages):
        client.put_object(Bucket=conns["bucket"], Key=f"{prefix}/msg-{i:03d}.xml", Body=body)


def route_hour(dagbag: Any, hour: datetime, feed: str = "wire") -> Any:
    return run_dag(
        dagbag,
        "feedrouter_route",
        logical_date=hour + timedelta(hours=1),
        run_conf={"feed": feed, "hour": f"{hour:%Y-%m-%dT%H}"},
    )


def ledger(engine: Engine) -> list[dict[str, Any]]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT hour, status, documents FROM feedrouter.batches ORDER BY hour"))
        return [dict(row._mapping) for row in rows]


@needs_spark
def test_an_hour_is_built_routed_and_delivered_end_to_end(
    wire: dict[str, str], catalog: Engine, dagbag: Any
) -> None:
    upload_hour(wire, HOUR, MESSAGES)
    assert run_dag(dagbag, "feedrouter_plans").state == "success"

    run = route_hour(dagbag, HOUR)

    assert run.state == "success", task_states(run)
    keys = set(iter_keys(s3_client(wire), wire["bucket"], "out/acme/"))
    hour_prefix = f"wire/dt={HOUR:%Y-%m-%d}/hour={HOUR:%H}/"
    for subscription in ("titles", "bodies"):
        assert f"out/acme/{subscription}/{hour_prefix}_SUCCESS" in keys
        assert f"out/acme/{subscription}/{hour_prefix}_manifest.json" in keys
        assert any(key.startswith(f"out/acme/{subscription}/{hour_prefix}part-") for key in keys)
    assert [(row["status"], row["documents"]) for row in ledger(catalog)] == [("succeeded", 3)]


@needs_spark
def test_an_hour_without_input_finishes_as_empty(wire: dict[str, str], catalog: Engine, dagbag: Any) -> None:
    run_dag(dagbag, "feedrouter_plans")
    quiet = HOUR + timedelta(hours=5)

    run = route_hour(dagbag, quiet)

    assert run.state == "success", task_states(run)
    assert [(row["status"], row["documents"]) for row in ledger(catalog)] == [("empty", 0)]


def test_a_feed_without_a_plan_build_fails_at_once_saying_why(
    wire: dict[str, str], catalog: Engine, dagbag: Any
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from feedrouter.airflow.operators import RouteBatchOperator

    upload_hour(wire, HOUR, MESSAGES)
    task = RouteBatchOperator(task_id="route_batch", batch={"feed": "wire", "hour": "2026-11-01T10"})
    with pytest.raises(AirflowFailException, match="no plan build"):
        task.execute({})

    run = route_hour(dagbag, HOUR + timedelta(hours=7))
    states = task_states(run)
    assert run.state == "failed"
    assert states[("route_hour.route_batch", 0)] == "failed"  # failed, not up_for_retry
    assert ledger(catalog) == []


def test_a_missing_input_marker_fails_after_the_deadline_naming_the_prefix(
    wire: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from feedrouter.airflow.sensors import HourInputSensor
    from feedrouter.airflow.settings import InputPolicy

    upload_hour(wire, HOUR, MESSAGES)
    batch = {"feed": "wire", "hour": "2026-11-01T10"}
    patient = InputPolicy("_SUCCESS", grace=timedelta(0), deadline=timedelta(days=9999))
    waiting = HourInputSensor(task_id="wait", batch=batch, policy=patient)
    assert waiting.poke({}) is False  # before the deadline: keep waiting

    overdue = InputPolicy("_SUCCESS", grace=timedelta(0), deadline=timedelta(0))
    late = HourInputSensor(task_id="wait", batch=batch, policy=overdue)
    prefix = f"s3://{wire['bucket']}/input/wire/dt=2026-11-01/hour=10/"
    with pytest.raises(AirflowFailException, match=f"no _SUCCESS marker under {prefix}"):
        late.poke({})

    marker = "input/wire/dt=2026-11-01/hour=10/_SUCCESS"
    s3_client(wire).put_object(Bucket=wire["bucket"], Key=marker, Body=b"")
    done = late.poke({})
    assert done and done.xcom_value == {"prefix": prefix, "objects": 3}


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A standalone master with two workers on loopback, for the spark connection."""
    from tests.integration.spark_support import standalone_cluster

    with standalone_cluster(tmp_path_factory.mktemp("airflow-spark-cluster")) as cluster:
        yield cluster


def master_state(cluster: Any) -> dict[str, Any]:
    """The standalone master's JSON state (applications, workers)."""
    import json
    import urllib.request

    with urllib.request.urlopen(f"http://127.0.0.1:{cluster.ui_port}/json/", timeout=10) as response:
        state: dict[str, Any] = json.load(response)
    return state


@needs_spark
def test_a_spark_connection_submits_the_hour_with_spark_submit(
    wire: dict[str, str],
    catalog: Engine,
    dagbag: Any,
    standalone: Any,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The route task on a ``spark`` connection to a standalone master: SparkSubmitHook submits the
    application with the packed environment (the connection's ``feedrouter-archive`` extra) and the
    connection's conf; the deliveries and the ledger are the in-task run's."""
    import json
    import sys

    from tests.integration.spark_support import FAST_JVM
    from tests.integration.submit_support import packed_environment

    package = packed_environment(request.config)
    conf = {
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.cores.max": "2",
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.extraJavaOptions": FAST_JVM,
        "spark.executor.extraJavaOptions": FAST_JVM,
        "spark.ui.enabled": "false",
    }
    extra = {"deploy-mode": "client", "feedrouter-archive": str(package.archive), "conf": conf}
    connection = {"conn_type": "spark", "host": "spark://127.0.0.1", "port": standalone.port, "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_FEEDROUTER_SPARK", json.dumps(connection))
    monkeypatch.setenv("FEEDROUTER_SPARK_CONN_ID", "feedrouter_spark")
    monkeypatch.delenv("FEEDROUTER_SPARK_MASTER", raising=False)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("SPARK_HOME", str(standalone.home))
    # spark-submit as the hook runs it: from PATH (the venv's, next to this interpreter)
    monkeypatch.setenv("PATH", f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}")
    with catalog.begin() as conn:  # the feed's conf overrides the connection's 512m
        conn.execute(text("""UPDATE feedrouter.feeds SET spark_conf = '{"spark.executor.memory": "600m"}'"""))
    upload_hour(wire, HOUR, MESSAGES)
    assert run_dag(dagbag, "feedrouter_plans").state == "success"

    run = route_hour(dagbag, HOUR)

    assert run.state == "success", task_states(run)
    keys = set(iter_keys(s3_client(wire), wire["bucket"], "out/acme/"))
    hour_prefix = f"wire/dt={HOUR:%Y-%m-%d}/hour={HOUR:%H}/"
    for subscription in ("titles", "bodies"):
        assert f"out/acme/{subscription}/{hour_prefix}_SUCCESS" in keys
    assert [(row["status"], row["documents"]) for row in ledger(catalog)] == [("succeeded", 3)]
    state = master_state(standalone)
    [app] = state["completedapps"] + state["activeapps"]  # the driver may still be saying goodbye
    assert app["name"] == "feedrouter-wire-2026-11-01T10"
    assert app.get("memoryperexecutor", app.get("memoryperslave")) == 600
    # submitted, not routed in the task: the cluster ran an application with the archive unpacked
    assert list(standalone.folder.glob("work-*/app-*/*/environment/bin/python"))
