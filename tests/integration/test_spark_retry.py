"""Spark task retries on ``local[2,2]`` (two attempts per task): a task made to fail once, in the
routing stage or half-way through writing a delivery, is retried; the outputs are byte-identical
to the single-process loop's and the ledger holds one set of rows."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from feedrouter.spark import BatchOptions, Fault, route_batch
from feedrouter.storage import FileStore, open_store
from tests.integration.spark_support import (
    HOUR,
    PART_BYTES,
    NewsFeed,
    assert_ledger_matches,
    batches,
    build,
    deliveries,
    expected_outputs,
    local_run,
    news_catalog,
    news_inputs,
    snapshot,
    spark_for_tests,
    upload,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("spark")]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with spark_for_tests("local[2,2]") as session:
        yield session


@pytest.mark.parametrize("phase", ["deliver", "route"])
def test_a_task_that_fails_once_is_retried_without_a_trace(
    phase: str, spark: Any, catalog: Engine, s3_bucket: str, plans_dir: Path, tmp_path: Path
) -> None:
    feed = NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")
    news_catalog(catalog, feed)
    inputs = news_inputs(20, records=4)
    upload(open_store(feed.hour_prefix), inputs)
    plans = FileStore(plans_dir)
    ref, plan = build(catalog, plans)
    flag = tmp_path / f"fail-{phase}"
    flag.touch()
    progress: list[tuple[int, int]] = []

    options = BatchOptions(max_part_bytes=PART_BYTES, fault=Fault(phase, str(flag)))  # type: ignore[arg-type]
    report = route_batch(
        catalog,
        "news",
        HOUR,
        plans_store=plans,
        spark=spark,
        options=options,
        progress=lambda *done_total: progress.append(done_total),
    )

    assert not flag.exists()  # one attempt took the flag and failed
    assert report.status == "succeeded" and progress[-1][0] == progress[-1][1] > 0
    run = local_run(plan, inputs)
    expected = expected_outputs(plan, ref, run, "news")
    out = open_store(feed.output_base)
    assert snapshot(out) == expected
    batch_id = assert_ledger_matches(catalog, plan, run, expected)
    rows = deliveries(catalog)

    again = route_batch(catalog, "news", HOUR, plans_store=plans, spark=spark, options=options)
    assert again.batch_id == batch_id and snapshot(out) == expected
    assert len(batches(catalog)) == 1 and deliveries(catalog) == rows
