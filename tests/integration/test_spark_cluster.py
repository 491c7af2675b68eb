"""The same batch on a standalone Spark cluster the test starts on loopback (a master and two
workers from the installed pyspark): its deliveries are byte-identical to the local loop's, as the
``local[2]`` batches are (``test_spark_batch``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from feedrouter.spark import BatchOptions, route_batch
from feedrouter.storage import FileStore, open_store
from tests.integration.spark_support import (
    HOUR,
    PART_BYTES,
    NewsFeed,
    StandaloneCluster,
    assert_ledger_matches,
    build,
    expected_outputs,
    local_run,
    news_catalog,
    news_inputs,
    snapshot,
    spark_for_tests,
    standalone_cluster,
    upload,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    with standalone_cluster(tmp_path_factory.mktemp("spark-cluster")) as cluster:
        yield cluster


@pytest.fixture(scope="module")
def spark(cluster: StandaloneCluster) -> Iterator[Any]:
    conf = {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.executor.cores": "1",
        "spark.executor.memory": "512m",
        "spark.cores.max": "2",
    }
    with spark_for_tests(cluster.master_url, conf) as session:
        yield session


def test_a_standalone_cluster_delivers_the_same_bytes(
    spark: Any, cluster: StandaloneCluster, catalog: Engine, s3_bucket: str, plans_dir: Path
) -> None:
    feed = NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")
    news_catalog(catalog, feed)
    inputs = news_inputs()
    upload(open_store(feed.hour_prefix), inputs)
    plans = FileStore(plans_dir)
    ref, plan = build(catalog, plans)

    options = BatchOptions(max_part_bytes=PART_BYTES)
    report = route_batch(catalog, "news", HOUR, plans_store=plans, spark=spark, options=options)

    assert spark.sparkContext.master == cluster.master_url
    assert report.status == "succeeded"
    run = local_run(plan, inputs)
    expected = expected_outputs(plan, ref, run, "news")
    assert snapshot(open_store(feed.output_base)) == expected
    assert_ledger_matches(catalog, plan, run, expected)
    executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1  # minus the driver
    assert executors == 2


def test_the_join_engines_on_a_standalone_cluster_give_the_in_process_pairs(
    spark: Any, tmp_path: Path
) -> None:
    """Both Spark join engines with executors in the cluster's workers (their own processes, one
    core each): the partitioned engine's parts, one per core the session sees, and Spark SQL's
    queries read the witness Parquet there; every subscription's pairs of the last hour equal the
    in-process stage's."""
    from feedrouter.spark.joinparts import partitioned_pairs
    from feedrouter.spark.joinsql import spark_pairs
    from tests.integration.spark_support import generated_join_hour

    join = generated_join_hour(tmp_path, seed=37)
    assert partitioned_pairs(spark, join.plans, join.hour, join.source, join.lateness) == join.in_process
    on_sql = spark_pairs(spark, join.plans, join.hour, join.source, join.lateness)
    assert {sid: on_sql.get(sid, []) for sid in join.in_process} == join.in_process


def test_the_partitioned_tasks_write_the_folders_the_driver_would(spark: Any, tmp_path: Path) -> None:
    """The partitioned engine's tasks, in the workers' own processes, write their parts' folders
    as this process writes them (:func:`~tests.integration.spark_support.assert_tasks_deliver_as_here`)."""
    from tests.integration.spark_support import assert_tasks_deliver_as_here

    assert_tasks_deliver_as_here(spark, tmp_path, seed=41)
