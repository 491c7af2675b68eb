"""The batch through Spark Connect: a Connect server (``local[2]`` behind it) started by the test in
its own process, the job driven from this one over ``sc://``. Its deliveries are byte-identical to
the local loop's, as the ``local[2]`` batches (``test_spark_batch``) and the standalone cluster's
(``test_spark_cluster``) are: the same job, DataFrames only.

The server gets no AWS credentials: the tasks sign their S3 calls with those the job carries
(``StoreOpener.credentials``).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from feedrouter.spark import BatchOptions, StoreOpener, route_batch
from feedrouter.spark.progress import is_connect
from feedrouter.storage import FileStore, open_store
from feedrouter.storage.s3 import S3Settings
from tests.integration.spark_support import (
    AWS_ENV,
    CONNECT_SHUFFLES,
    HOUR,
    PART_BYTES,
    ConnectServer,
    NewsFeed,
    assert_interrupted_by_its_tag,
    assert_ledger_matches,
    build,
    expected_outputs,
    local_run,
    news_catalog,
    news_inputs,
    snapshot,
    upload,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    pytest.importorskip("pyspark.sql.connect.session")
    server = ConnectServer(tmp_path_factory.mktemp("spark-connect"))
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture(scope="module")
def spark(server: ConnectServer) -> Iterator[Any]:
    from feedrouter.spark import spark_session

    session = spark_session(server.url)
    try:
        yield session
    finally:
        session.stop()


def test_a_connect_server_delivers_the_same_bytes(
    spark: Any, catalog: Engine, s3_bucket: str, plans_dir: Path
) -> None:
    feed = NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")
    news_catalog(catalog, feed)
    inputs = news_inputs()
    upload(open_store(feed.hour_prefix), inputs)
    plans = FileStore(plans_dir)
    ref, plan = build(catalog, plans)
    credentials = {name: AWS_ENV[name] for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    stores = StoreOpener(S3Settings.from_env(), credentials=credentials)
    seen: list[tuple[int, int]] = []

    report = route_batch(
        catalog,
        "news",
        HOUR,
        plans_store=plans,
        spark=spark,
        options=BatchOptions(max_part_bytes=PART_BYTES),
        stores=stores,
        progress=lambda finished, total: seen.append((finished, total)),
    )

    assert is_connect(spark) and report.status == "succeeded"
    run = local_run(plan, inputs)
    expected = expected_outputs(plan, ref, run, "news")
    assert snapshot(open_store(feed.output_base)) == expected
    assert_ledger_matches(catalog, plan, run, expected)
    assert seen and all(0 <= finished <= total for finished, total in seen)


def test_a_lost_lease_interrupts_the_connect_operations_by_tag(spark: Any, tmp_path: Path) -> None:
    assert_interrupted_by_its_tag(spark, tmp_path)


def test_the_join_stage_over_connect_gives_the_in_process_pairs(spark: Any, tmp_path: Path) -> None:
    """Both Spark join engines from a Connect client: the server's executors read the witness
    Parquet (the partitioned engine's tasks as columns), the client sees no cores (the server's
    shuffle setting stays; the population in the parts a client without cores takes), the pairs
    come back as Arrow; every subscription's pairs of the last hour equal the in-process stage's."""
    from feedrouter.spark.joinparts import partitioned_pairs
    from feedrouter.spark.joinsql import spark_pairs
    from tests.integration.spark_support import generated_join_hour

    join = generated_join_hour(tmp_path, seed=31)
    on_connect = spark_pairs(spark, join.plans, join.hour, join.source, join.lateness)
    assert {sid: on_connect.get(sid, []) for sid in join.in_process} == join.in_process
    assert spark.conf.get("spark.sql.shuffle.partitions") == CONNECT_SHUFFLES  # the server's, unchanged
    assert partitioned_pairs(spark, join.plans, join.hour, join.source, join.lateness) == join.in_process


def test_the_partitioned_tasks_over_connect_write_the_folders_the_driver_would(
    spark: Any, tmp_path: Path
) -> None:
    """From a Connect client, the server's executors write the partitioned parts' folders as this
    process writes them (:func:`~tests.integration.spark_support.assert_tasks_deliver_as_here`)."""
    from tests.integration.spark_support import assert_tasks_deliver_as_here

    assert_tasks_deliver_as_here(spark, tmp_path, seed=43)
