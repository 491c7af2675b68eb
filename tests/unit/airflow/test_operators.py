"""The operators' connection-id arguments, where the route step runs for each kind of spark
connection, what a submission carries from the connection, the feed and the operator, and how a
failed spark-submit becomes the task's outcome."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from typing import Any

import pytest

pytest.importorskip("airflow")

from airflow.sdk.exceptions import AirflowFailException

from feedrouter.airflow import routing
from feedrouter.airflow.hours import HourBatch
from feedrouter.airflow.operators import RouteBatchOperator, make_hook, submit_failure
from feedrouter.errors import SettingsError
from feedrouter.storage import FileStore, ObjectStore

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
BATCH = {"feed": "news", "hour": "2026-11-22T16"}


def spark_connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, **fields: Any) -> str:
    """An Airflow connection from the environment (``AIRFLOW_CONN_…`` as JSON)."""
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))
    return conn_id


@pytest.fixture(autouse=True)
def no_configured_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("CATALOG_CONN_ID", "S3_CONN_ID", "SPARK_CONN_ID", "UI_CATALOG_CONN_ID", "SPARK_MASTER"):
        monkeypatch.delenv(f"FEEDROUTER_{name}", raising=False)


# -- connection ids -------------------------------------------------------------------------------


def test_operators_pass_their_connection_ids_to_the_hook() -> None:
    task = RouteBatchOperator(
        task_id="route",
        batch=BATCH,
        catalog_conn_id="warehouse_pg",
        s3_conn_id="lake",
        spark_conn_id="emr",
        spark_conf={"spark.executor.memory": "4g"},
    )

    assert task.hook.catalog_conn_id == "warehouse_pg"
    assert task.hook.s3_conn_id == "lake"
    assert task.hook.spark_conn_id == "emr"
    assert task.spark_conf == {"spark.executor.memory": "4g"}
    assert {"batch", "spark_conf", "spark_archive"} <= set(task.template_fields)


def test_a_connection_id_left_out_is_the_settings_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEEDROUTER_SPARK_CONN_ID", "spark_from_settings")
    monkeypatch.setenv("FEEDROUTER_CATALOG_CONN_ID", "catalog_from_settings")

    hook = make_hook(s3_conn_id="lake")

    assert hook.spark_conn_id == "spark_from_settings"
    assert hook.catalog_conn_id == "catalog_from_settings"
    assert hook.s3_conn_id == "lake"


def test_an_invalid_setting_fails_the_task_without_retries_naming_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FEEDROUTER_S3_READ_TIMEOUT", "soon")
    task = RouteBatchOperator(task_id="route", batch=BATCH)

    with pytest.raises(AirflowFailException, match="FEEDROUTER_S3_READ_TIMEOUT"):
        _ = task.hook


# -- where the batch runs -------------------------------------------------------------------------


def test_no_spark_connection_routes_in_the_task_on_the_settings_master(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FEEDROUTER_SPARK_MASTER", "local[3]")

    target = routing.spark_target(make_hook())

    assert (target.mode, target.master, target.conn_id) == ("in-task", "local[3]", None)


def test_a_local_master_connection_routes_in_the_task(monkeypatch: pytest.MonkeyPatch) -> None:
    conn_id = spark_connection(monkeypatch, "local_spark", conn_type="spark", host="local[2]")

    target = routing.spark_target(make_hook(spark_conn_id=conn_id))

    assert (target.mode, target.master) == ("in-task", "local[2]")


def test_a_spark_connect_connection_routes_in_the_task_against_its_endpoint(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    conn_id = spark_connection(
        monkeypatch, "databricks", conn_type="spark_connect", host="sc.example", port=15002
    )

    target = routing.spark_target(make_hook(spark_conn_id=conn_id))

    assert target.mode == "in-task"
    assert target.master is not None and target.master.startswith("sc://sc.example:15002")


def test_a_cluster_master_is_submitted_with_the_connections_deploy_mode_conf_and_archive(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extra = {
        "deploy-mode": "cluster",
        "conf": {"spark.executor.memory": "2g"},
        "spark.dynamicAllocation.enabled": "true",
        "feedrouter-archive": "hdfs:///apps/feedrouter-env.tar.gz",
    }
    conn_id = spark_connection(monkeypatch, "yarn_spark", conn_type="spark", host="yarn", extra=extra)

    target = routing.spark_target(make_hook(spark_conn_id=conn_id))

    assert (target.mode, target.master, target.deploy_mode) == ("submit", "yarn", "cluster")
    assert target.conf == {"spark.executor.memory": "2g", "spark.dynamicAllocation.enabled": "true"}
    assert target.archive == "hdfs:///apps/feedrouter-env.tar.gz"


# -- the submission -------------------------------------------------------------------------------


class SubmitHook:
    """What prepare_submission asks of FeedrouterHook (no catalog is opened: feed_conf is given)."""

    s3_access = None

    def __init__(self, plans: ObjectStore) -> None:
        self.plans = plans

    def catalog_url(self) -> str:
        return "postgresql+psycopg://router:hunter2@db.internal/catalog"

    def plans_store(self) -> ObjectStore:
        return self.plans


@pytest.fixture
def submit_hook(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> Any:
    feed_conf = {"spark.executor.memory": "8g", "spark.executor.cores": "4"}
    monkeypatch.setattr(routing, "feed_conf", lambda hook, feed: dict(feed_conf))
    return SubmitHook(FileStore(tmp_path / "plans"))


def test_conf_layers_connection_then_feed_then_operator(submit_hook: Any) -> None:
    connection = {
        "spark.executor.memory": "2g",
        "spark.executor.cores": "1",
        "spark.eventLog.enabled": "true",
    }
    target = routing.SparkTarget("submit", "spark://h:7077", "standalone", "client", connection)

    job = routing.prepare_submission(
        submit_hook, HourBatch("news", HOUR), target, {"spark.executor.cores": "6"}
    )

    assert job.conf["spark.eventLog.enabled"] == "true"  # the connection's
    assert job.conf["spark.executor.memory"] == "8g"  # the feed's over the connection's
    assert job.conf["spark.executor.cores"] == "6"  # the operator's over both
    assert job.conf["spark.speculation"] == "false"  # feedrouter's default, under everything
    assert job.env_vars["FEEDROUTER_DATABASE_URL"].endswith("hunter2@db.internal/catalog")
    assert job.env_vars["FEEDROUTER_PLANS_URI"] == submit_hook.plans.uri
    assert not any("hunter2" in value for value in job.conf.values())


def test_the_join_stage_runs_on_the_in_task_master_or_a_local_session() -> None:
    assert routing.join_master(routing.SparkTarget("in-task", "local[4]")) == "local[4]"
    assert routing.join_master(routing.SparkTarget("in-task", "sc://connect:15002")) == "sc://connect:15002"
    assert routing.join_master(routing.SparkTarget("submit", "yarn", "yarn", "cluster")) is None


def test_the_submitted_driver_is_told_where_the_join_witnesses_go(
    submit_hook: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("FEEDROUTER_STATE_URI", raising=False)
    monkeypatch.setenv("AIRFLOW__FEEDROUTER__STATE_URI", "s3://lake/feedrouter/state")
    target = routing.SparkTarget("submit", "yarn", "yarn", "cluster")

    job = routing.prepare_submission(submit_hook, HourBatch("news", HOUR), target)

    # the Airflow config section's value, kept where env_vars become conf: it is no secret
    assert job.env_vars["FEEDROUTER_STATE_URI"] == "s3://lake/feedrouter/state"


def test_secrets_stay_out_where_the_hook_would_make_them_conf(submit_hook: Any) -> None:
    target = routing.SparkTarget("submit", "k8s://https://api:6443", "k8s", "cluster")

    job = routing.prepare_submission(submit_hook, HourBatch("news", HOUR), target, None, "s3://b/env.tgz")

    assert "FEEDROUTER_DATABASE_URL" not in job.env_vars
    assert job.env_vars["FEEDROUTER_PLANS_URI"] == submit_hook.plans.uri
    assert job.archives == "s3://b/env.tgz#environment"
    assert job.conf["spark.pyspark.python"] == "./environment/bin/python"


def test_standalone_cluster_mode_gets_no_environment_which_the_hook_would_refuse(
    submit_hook: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    extra = {"deploy-mode": "cluster"}
    conn_id = spark_connection(
        monkeypatch, "standalone", conn_type="spark", host="spark://h", port=7077, extra=extra
    )
    target = routing.spark_target(make_hook(spark_conn_id=conn_id))
    assert (target.master, target.deploy_mode) == ("spark://h:7077", "cluster")

    job = routing.prepare_submission(submit_hook, HourBatch("news", HOUR), target)

    assert job.env_vars == {}
    routing.submit_hook(job, target)._build_spark_submit_command(job.application)  # no AirflowException


def test_operator_conf_that_is_no_spark_setting_fails_naming_it(submit_hook: Any) -> None:
    target = routing.SparkTarget("submit", "spark://h:7077")
    with pytest.raises(SettingsError, match=r"the operator's spark_conf: 'executor\.memory'"):
        routing.prepare_submission(submit_hook, HourBatch("news", HOUR), target, {"executor.memory": "2g"})


def test_the_provider_hook_gets_master_from_the_connection_and_the_rest_from_the_submission(
    monkeypatch: pytest.MonkeyPatch, submit_hook: Any
) -> None:
    conn_id = spark_connection(
        monkeypatch,
        "standalone",
        conn_type="spark",
        host="spark://10.0.0.5",
        port=7077,
        extra={"deploy-mode": "client"},
    )
    target = routing.SparkTarget("submit", "spark://10.0.0.5:7077", conn_id, "client")
    job = routing.prepare_submission(submit_hook, HourBatch("news", HOUR), target, None, "env.tar.gz")

    command = routing.submit_hook(job, target)._build_spark_submit_command(job.application)

    assert command[1:3] == ["--master", "spark://10.0.0.5:7077"]
    assert command[command.index("--archives") :][:2] == ["--archives", "env.tar.gz#environment"]
    assert command[command.index("--deploy-mode") :][:2] == ["--deploy-mode", "client"]
    assert command[-5:] == [job.application, "--feed", "news", "--hour", "2026-11-22T16"]
    assert "hunter2" not in " ".join(command)  # the catalog URL is the driver's environment only


# -- outcomes -------------------------------------------------------------------------------------


def test_a_terminal_exit_status_fails_the_task_and_others_are_retried() -> None:
    batch = HourBatch("news", HOUR)
    terminal = submit_failure(batch, RuntimeError("Cannot execute: spark-submit … Error code is: 1."))
    transient = RuntimeError("Cannot execute: spark-submit … Error code is: 75.")
    lost = RuntimeError("ERROR : Driver driver-1 badly exited with status FAILED")

    assert isinstance(terminal, AirflowFailException) and "exit status 1" in str(terminal)
    assert submit_failure(batch, transient) is transient
    assert submit_failure(batch, lost) is lost


def test_a_spark_connect_connection_passes_x_extras_as_headers_and_logs_no_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    extra = {"use_ssl": True, "x-databricks-cluster-id": "0123-456789-abc"}
    conn_id = spark_connection(
        monkeypatch,
        "dbx",
        conn_type="spark_connect",
        host="adb-1.azuredatabricks.net",
        port=443,
        password="dapiSECRET",
        extra=extra,
    )

    master = routing.spark_target(make_hook(spark_conn_id=conn_id)).master

    assert master is not None and master.startswith("sc://adb-1.azuredatabricks.net:443/;")
    assert {"token=dapiSECRET", "use_ssl=True", "x-databricks-cluster-id=0123-456789-abc"} <= set(
        master.split("/;", 1)[1].split(";")
    )
    assert routing.shown_master(master) == "sc://adb-1.azuredatabricks.net:443/;…"
    assert routing.shown_master(None) == "local"


class CatalogHook:
    """The catalog side of FeedrouterHook, on the tests' Postgres catalog."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def catalog_engine(self) -> Any:
        from feedrouter.catalog.database import create_catalog_engine

        return create_catalog_engine(self.engine.url.render_as_string(hide_password=False))


def test_the_feeds_spark_conf_comes_from_the_catalog(catalog: Any) -> None:
    from sqlalchemy import text

    with catalog.begin() as conn:
        conn.execute(
            text(
                "INSERT INTO feedrouter.feeds (name, input_prefix, spark_conf) VALUES"
                " ('news', 's3://inbox/news', '{\"spark.executor.memory\": \"8g\"}'),"
                " ('wire', 's3://inbox/wire', DEFAULT)"
            )
        )

    hook: Any = CatalogHook(catalog)
    assert routing.feed_conf(hook, "news") == {"spark.executor.memory": "8g"}
    assert routing.feed_conf(hook, "wire") == {}
