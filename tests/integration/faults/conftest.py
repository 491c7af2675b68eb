"""Fixtures of the fault-injection suite: the news feed on moto's S3 server with its plan built and
one hour uploaded, and the loopback fault proxy in front of the server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine

from feedrouter.storage import FileStore, open_store
from tests.integration.faults.proxy import FaultProxy
from tests.integration.faults.support import News
from tests.integration.spark_support import NewsFeed, build, news_catalog, news_inputs, upload


@pytest.fixture
def plans(plans_dir: Path) -> FileStore:
    return FileStore(plans_dir)


@pytest.fixture
def feed(s3_bucket: str) -> NewsFeed:
    return NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")


@pytest.fixture
def news(catalog: Engine, feed: NewsFeed, plans: FileStore) -> News:
    """The news feed with its plan built and one (small) hour of messages uploaded."""
    return make_news(catalog, feed, plans)


def make_news(
    catalog: Engine, feed: NewsFeed, plans: FileStore, before_build: Callable[[], None] | None = None
) -> News:
    news_catalog(catalog, feed, subscriptions=12)
    inputs = news_inputs(12, records=3)
    upload(open_store(feed.hour_prefix), inputs)
    if before_build is not None:
        before_build()
    ref, plan = build(catalog, plans)
    return News(feed, ref, plan, inputs)


@pytest.fixture
def proxy(s3_endpoint: str, s3_bucket: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[FaultProxy]:
    """The fault proxy in front of moto; every S3 client made from now on goes through it, with a
    1 s read timeout and 3 attempts per call."""
    with FaultProxy(s3_endpoint) as running:
        monkeypatch.setenv("FEEDROUTER_S3_ENDPOINT_URL", running.url)
        monkeypatch.setenv("FEEDROUTER_S3_READ_TIMEOUT", "1")
        monkeypatch.setenv("FEEDROUTER_S3_MAX_ATTEMPTS", "3")
        yield running
