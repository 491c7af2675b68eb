"""S3 faults injected by the loopback fault proxy in front of moto (issue 18, items 13 and 16):
500s within the client's retries cost nothing; a store failing past them fails the batch for a
retry (transient), as does an input body cut short or stalled while streaming (FR502, bounded by
the read timeout); every re-run ends with the ledger matching the store and nothing lost."""

from __future__ import annotations

import re
import secrets

import pytest
from sqlalchemy import Engine, text

from feedrouter.errors import TransientStorageError
from feedrouter.storage import FileStore, open_store
from feedrouter.storage.s3 import S3Settings
from tests.integration.faults.conftest import make_news
from tests.integration.faults.proxy import FaultProxy, Rule
from tests.integration.faults.support import News, assert_ledger_matches_store, route_inline
from tests.integration.spark_support import NewsFeed, batches, deliveries, snapshot

pytestmark = pytest.mark.integration

#: Part files written below the subscribers' prefixes (path-style: /bucket/out/...).
PART_PUT = r"/out/.*/part-\d+\.xml$"
#: The hour's input objects.
INPUT_HOUR = r"/in/news/dt=2026-11-22/hour=16/"


def assert_good_hour(catalog: Engine, news: News) -> None:
    assert snapshot(news.out) == news.expected()
    assert_ledger_matches_store(catalog, news.out)


def test_500s_within_the_client_retries_lose_nothing(
    catalog: Engine, news: News, plans: FileStore, proxy: FaultProxy
) -> None:
    rule = proxy.add(Rule("PUT", PART_PUT, "error500", times=2))
    report = route_inline(catalog, plans)
    assert rule.hits == 2 and report.status == "succeeded" and report.failed == 0
    assert_good_hour(catalog, news)


def test_a_store_failing_past_its_retries_fails_the_batch_and_the_rerun_delivers_all(
    catalog: Engine, news: News, plans: FileStore, proxy: FaultProxy
) -> None:
    proxy.add(Rule("PUT", PART_PUT, "error500"))
    with pytest.raises(TransientStorageError) as caught:
        route_inline(catalog, plans)
    assert caught.value.code == "FR502"
    [failed] = batches(catalog)
    assert failed["status"] == "failed" and "InternalError" in failed["error_message"]
    assert deliveries(catalog) == []

    proxy.clear()
    assert route_inline(catalog, plans).status == "succeeded"
    assert_good_hour(catalog, news)


@pytest.mark.parametrize(
    ("action", "key"), [("truncate", "m003.xml"), ("stall", "m003.xml"), ("truncate", "wire/m004.xml.gz")]
)
def test_an_input_body_cut_short_is_transient_and_the_rerun_delivers_all(
    action: str, key: str, catalog: Engine, news: News, plans: FileStore, proxy: FaultProxy
) -> None:
    """A plain or gzip'd input cut short is an outage (FR502, retried), never a corrupt message
    (FR200/FR206, quarantined for good)."""
    rule = proxy.add(Rule("GET", f"{INPUT_HOUR}{re.escape(key)}$", action, times=1))  # type: ignore[arg-type]
    with pytest.raises(TransientStorageError, match=rf"{re.escape(key)} was cut short or stalled") as caught:
        route_inline(catalog, plans)
    assert rule.hits == 1 and caught.value.code == "FR502" and caught.value.transient
    assert [b["status"] for b in batches(catalog)] == ["failed"]

    assert route_inline(catalog, plans).status == "succeeded"
    assert_good_hour(catalog, news)


def test_one_missing_bucket_costs_only_its_subscriber(
    catalog: Engine, feed: NewsFeed, plans: FileStore
) -> None:
    """Item 16: alice's bucket does not exist; bob and carol are delivered and recorded, alice's
    deliveries are failed rows (FR607) that the next run of the hour delivers once it exists."""
    bucket = f"gone-{secrets.token_hex(4)}"

    def move_alice() -> None:
        with catalog.begin() as conn:
            conn.execute(
                text("UPDATE feedrouter.subscribers SET output_prefix = :p WHERE name = 'alice'"),
                {"p": f"s3://{bucket}/out/alice"},
            )

    news = make_news(catalog, feed, plans, move_alice)
    expected = news.expected()
    lost = {uri for uri in expected if uri.startswith(f"s3://{bucket}/")}
    assert lost and len(lost) < len(expected)

    report = route_inline(catalog, plans)

    assert report.status == "succeeded" and report.failed >= 1
    assert snapshot(news.out) == {uri: data for uri, data in expected.items() if uri not in lost}
    rows = deliveries(catalog)
    failed = [row for row in rows if row["status"] == "failed"]
    assert {row["subscriber_name"] for row in failed} == {"alice"} and len(failed) == report.failed
    assert all(row["error_code"] == "FR607" and "NoSuchBucket" in row["error_message"] for row in failed)
    assert all(row["object_keys"] == [] for row in failed)
    assert_ledger_matches_store(catalog, news.out)

    S3Settings.from_env().client().create_bucket(Bucket=bucket)
    again = route_inline(catalog, plans)
    assert again.failed == 0
    stored = snapshot(news.out) | snapshot(open_store(f"s3://{bucket}/out"))
    assert stored == expected
    latest = {(r["subscriber_name"], r["subscription_name"]): r for r in deliveries(catalog)}
    assert {r["status"] for r in latest.values()} == {"delivered"}


def test_a_hung_endpoint_costs_the_read_timeout_not_minutes(s3_bucket: str, proxy: FaultProxy) -> None:
    """Item 13: with FEEDROUTER_S3_READ_TIMEOUT=1 (the proxy fixture) and 3 attempts, an endpoint that
    answers only after 5 s is a transient error after the client's retries, not a 5-minute wait
    (botocore's 60 s read timeout would have waited for the answer)."""
    store = open_store(f"s3://{s3_bucket}/slow")
    proxy.add(Rule("PUT", r"/slow/k$", "hang", stall_seconds=5))
    with pytest.raises(TransientStorageError) as caught:
        store.put("k", b"x")
    assert caught.value.code == "FR502"
    assert sum(1 for method, path in proxy.requests if method == "PUT" and path.endswith("/slow/k")) == 3
