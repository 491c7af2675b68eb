"""Faults on the Spark path (``local[2]``), where they differ from the inline runs of
tests/integration/faults: a task's error reaches the driver through Spark, and deliveries are
written by several tasks.

* an input body cut short on the task's read path is a TransientStorageError (FR502) on the
  driver (issue 18, item 13), not an unclassified Spark or botocore error; the re-run delivers all;
* one subscriber's missing bucket costs only that subscriber's deliveries (item 16).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from feedrouter.errors import TransientStorageError
from feedrouter.spark import BatchOptions, BatchReport, StoreOpener, route_batch
from feedrouter.storage import FileStore, ObjectStore, open_store
from tests.integration.faults.proxy import FaultProxy, Rule
from tests.integration.spark_support import (
    HOUR,
    PART_BYTES,
    NewsFeed,
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
    with spark_for_tests("local[2]") as session:
        yield session


def route(engine: Engine, plans: ObjectStore, spark: Any) -> BatchReport:
    options = BatchOptions(max_part_bytes=PART_BYTES)
    return route_batch(
        engine, "news", HOUR, plans_store=plans, spark=spark, options=options, stores=StoreOpener.from_env()
    )


def test_a_truncated_input_body_is_transient_on_the_driver(
    spark: Any,
    catalog: Engine,
    s3_bucket: str,
    s3_endpoint: str,
    plans_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    feed = NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")
    news_catalog(catalog, feed, subscriptions=12)
    inputs = news_inputs(8, records=2)
    upload(open_store(feed.hour_prefix), inputs)
    plans = FileStore(plans_dir)
    ref, plan = build(catalog, plans)
    with FaultProxy(s3_endpoint) as proxy:
        monkeypatch.setenv("FEEDROUTER_S3_ENDPOINT_URL", proxy.url)  # shipped to the tasks
        rule = proxy.add(Rule("GET", r"/in/news/.*/m002\.xml$", "truncate", times=1))
        with pytest.raises(TransientStorageError, match=r"m002\.xml was cut short") as caught:
            route(catalog, plans, spark)
        assert rule.hits == 1 and caught.value.code == "FR502"
        assert [b["status"] for b in batches(catalog)] == ["failed"]

        assert route(catalog, plans, spark).status == "succeeded"
        stored = snapshot(open_store(feed.output_base))
    assert stored == expected_outputs(plan, ref, local_run(plan, inputs), "news")


def test_one_missing_bucket_costs_only_its_subscriber(
    spark: Any, catalog: Engine, s3_bucket: str, plans_dir: Path
) -> None:
    feed = NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")
    news_catalog(catalog, feed, subscriptions=12)
    gone = f"gone-{secrets.token_hex(4)}"
    with catalog.begin() as conn:
        conn.execute(
            text("UPDATE feedrouter.subscribers SET output_prefix = :p WHERE name = 'alice'"),
            {"p": f"s3://{gone}/out/alice"},
        )
    inputs = news_inputs(12, records=3)
    upload(open_store(feed.hour_prefix), inputs)
    plans = FileStore(plans_dir)
    ref, plan = build(catalog, plans)
    expected = expected_outputs(plan, ref, local_run(plan, inputs), "news")
    lost = {uri for uri in expected if uri.startswith(f"s3://{gone}/")}
    assert lost and len(lost) < len(expected)

    report = route(catalog, plans, spark)

    assert report.status == "succeeded" and report.failed >= 1 and "[FR607]" in report.describe()
    assert snapshot(open_store(feed.output_base)) == {u: d for u, d in expected.items() if u not in lost}
    failed = [row for row in deliveries(catalog) if row["status"] == "failed"]
    assert {row["subscriber_name"] for row in failed} == {"alice"} and len(failed) == report.failed
    assert all(row["error_code"] == "FR607" and "NoSuchBucket" in row["error_message"] for row in failed)
