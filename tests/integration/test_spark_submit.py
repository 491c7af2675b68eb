"""The routing job as a spark-submit application on a standalone master with two workers (started by
the test), feedrouter shipped to the executors as a packed environment (``--archives``, executors
on ``./environment/bin/python``): its deliveries are byte-identical to the local loop's, as local
mode's are (``test_spark_batch``). Plus the application's exit statuses without Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from feedrouter.delivery.parts import DEFAULT_MAX_PART_BYTES
from feedrouter.spark.app import REPORT_PREFIX, ExitCode
from feedrouter.spark.package import Package
from feedrouter.spark.submit import driver_environment, submission
from feedrouter.storage import FileStore, open_store
from tests.integration.spark_support import (
    AWS_ENV,
    FAST_JVM,
    HOUR,
    NewsFeed,
    StandaloneCluster,
    assert_ledger_matches,
    build,
    expected_outputs,
    local_run,
    news_catalog,
    news_inputs,
    snapshot,
    standalone_cluster,
    upload,
)
from tests.integration.submit_support import packed_environment

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("spark")]

SPARK_SUBMIT = str(Path(sys.executable).parent / "spark-submit")
#: What the test machine's small workers can hold, and JVMs that start fast (the operator's layer).
TEST_CONF = {
    "spark.executor.cores": "1",
    "spark.executor.memory": "512m",
    "spark.cores.max": "2",
    "spark.driver.host": "127.0.0.1",
    "spark.driver.bindAddress": "127.0.0.1",
    "spark.driver.extraJavaOptions": FAST_JVM,
    "spark.executor.extraJavaOptions": FAST_JVM,
    "spark.ui.enabled": "false",
    # Feedrouter's own setting of the partition count would do; a fixed one keeps both workers busy.
    "spark.default.parallelism": "2",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-submit-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def package(request: pytest.FixtureRequest) -> Package:
    pytest.importorskip("venv_pack")
    return packed_environment(request.config)


def submitted_environment(env: dict[str, str]) -> dict[str, str]:
    """This process's environment for spark-submit, minus what would pick the executors' Python."""
    import pyspark

    base = {name: value for name, value in os.environ.items() if not name.startswith("PYSPARK_")}
    spark_home = str(Path(pyspark.__file__).parent)  # pip's pyspark is the Spark distribution
    return {**base, "SPARK_HOME": spark_home, "SPARK_LOCAL_IP": "127.0.0.1", **env}


def test_the_packed_environment_holds_feedrouter_and_arrow_but_not_pyspark(package: Package) -> None:
    with tarfile.open(package.archive) as archive:
        names = archive.getnames()
    packages = {name.split("/")[3] for name in names if name.startswith("lib/python") and name.count("/") > 3}
    assert {"feedrouter", "lxml", "boto3", "pyarrow", "pandas", "sqlalchemy"} <= packages
    assert "pyspark" not in packages  # the cluster's Spark brings its own
    assert "bin/python" in names


def test_spark_submit_on_a_standalone_cluster_delivers_the_same_bytes(
    cluster: StandaloneCluster,
    package: Package,
    catalog: Engine,
    catalog_url: str,
    s3_bucket: str,
    s3_endpoint: str,
    plans_dir: Path,
) -> None:
    feed = NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")
    news_catalog(catalog, feed)
    inputs = news_inputs()
    upload(open_store(feed.hour_prefix), inputs)
    plans = FileStore(plans_dir)
    ref, plan = build(catalog, plans)
    s3 = {"FEEDROUTER_S3_ENDPOINT_URL": s3_endpoint, "AWS_REGION": "us-east-1"}
    credentials = {name: AWS_ENV[name] for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    env = driver_environment(catalog_url, plans.uri, s3, credentials)
    job = submission(
        "news",
        HOUR,
        conf_layers=(TEST_CONF,),
        env_vars=env,
        archive=str(package.archive),
        application=str(package.application),
    )

    command = job.command(cluster.master_url, spark_submit=SPARK_SUBMIT)
    done = subprocess.run(
        command, env=submitted_environment(job.env_vars), capture_output=True, text=True, timeout=900
    )

    assert done.returncode == ExitCode.ROUTED, done.stdout[-3000:] + done.stderr[-6000:]
    [line] = [line for line in done.stdout.splitlines() if line.startswith(REPORT_PREFIX)]
    report = json.loads(line[len(REPORT_PREFIX) :])
    assert report["status"] == "succeeded"
    run = local_run(plan, inputs)
    expected = expected_outputs(plan, ref, run, "news", max_part_bytes=DEFAULT_MAX_PART_BYTES)
    assert snapshot(open_store(feed.output_base)) == expected
    assert_ledger_matches(catalog, plan, run, expected)
    # Both workers unpacked the archive for their executor and ran its Python.
    unpacked = sorted(cluster.folder.glob("work-*/app-*/*/environment/bin/python"))
    assert len({path.parts[-6] for path in unpacked}) == 2, unpacked


def outcome_line(stderr: str) -> str:
    """The application's own line about its failure (Spark and py4j may log after it)."""
    [line] = [line for line in stderr.splitlines() if line.startswith("feedrouter: ")]
    return line


def run_application(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "feedrouter.spark.app", *args]
    return subprocess.run(command, env={**os.environ, **env}, capture_output=True, text=True, timeout=300)


def test_a_feed_without_a_plan_build_exits_terminal_naming_the_code(
    catalog: Engine, catalog_url: str, s3_bucket: str, plans_dir: Path
) -> None:
    feed = NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")
    news_catalog(catalog, feed)
    env = driver_environment(catalog_url, FileStore(plans_dir).uri)

    done = run_application(["--feed", "news", "--hour", "2026-11-22T16"], env)

    assert done.returncode == ExitCode.TERMINAL
    assert "[FR601]" in outcome_line(done.stderr)


def test_an_unreachable_catalog_exits_transient(plans_dir: Path) -> None:
    env = driver_environment("postgresql+psycopg://nobody@127.0.0.1:1/none", FileStore(plans_dir).uri)

    done = run_application(["--feed", "news", "--hour", "2026-11-22T16"], env)

    assert done.returncode == ExitCode.TRANSIENT, done.stderr[-2000:]
    assert "transient: a retry may succeed" in outcome_line(done.stderr)
