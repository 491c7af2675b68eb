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
