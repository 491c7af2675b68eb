"""Plan artifacts round-trip through file:// and an S3 API server; bad artifacts are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine

from feedrouter.catalog import build_plan, load_latest_plan, load_plan
from feedrouter.errors import CompileError
from feedrouter.storage import ObjectStore, open_store
from tests.integration.rows import NEWS_DOCUMENT, add_dtd, add_feed, add_subscriber, add_subscription

pytestmark = pytest.mark.integration


@pytest.fixture
def news(catalog: Engine) -> Engine:
    with catalog.begin() as conn:
        add_dtd(conn, "news")
        add_feed(conn, "news", dtd="news")
        add_subscriber(conn, "alice")
        add_subscription(conn, "alice", "news", "titles", "//head/title")
    return catalog


@pytest.fixture(params=["file", "s3"])
def store(request: pytest.FixtureRequest, plans_dir: Path) -> ObjectStore:
    if request.param == "file":
        return open_store(plans_dir.as_uri())
    bucket = request.getfixturevalue("s3_bucket")
    return open_store(f"s3://{bucket}/feedrouter/plans")


def test_a_plan_round_trips_through_the_store(news: Engine, store: ObjectStore) -> None:
    result = build_plan(news, "news", store)
    assert result.artifact_uri == f"{store.uri}/news/{result.digest}.plan"
    assert list(store.list("news/")) == [f"news/{result.digest}.plan"]
    _, plan = load_latest_plan(news, "news", store)
    assert list(plan.route(NEWS_DOCUMENT).values()) == ["<title>Café prices</title>".encode()]


def test_a_corrupted_artifact_is_refused(news: Engine, store: ObjectStore) -> None:
    result = build_plan(news, "news", store)
    key = store.key_of(result.artifact_uri)
    data = bytearray(store.get(key))
    data[-10] ^= 0xFF
    store.put(key, bytes(data))
    with pytest.raises(CompileError, match=r"\[FR305\].*corrupted"):
        load_plan(store, result.artifact_uri, result.digest)


def test_a_foreign_artifact_is_refused(news: Engine, store: ObjectStore) -> None:
    result = build_plan(news, "news", store)
    store.put(store.key_of(result.artifact_uri), b"PK\x03\x04 this is a zip file, not a plan")
    with pytest.raises(CompileError, match=r"\[FR305\].*not a feedrouter plan artifact"):
        load_latest_plan(news, "news", store)


def test_another_builds_artifact_is_refused(news: Engine, store: ObjectStore) -> None:
    first = build_plan(news, "news", store)
    with news.begin() as conn:
        add_subscription(conn, "alice", "news", "more", "//title")
    second = build_plan(news, "news", store)
    with pytest.raises(CompileError, match=r"\[FR305\].*not the .* the catalog recorded"):
        load_plan(store, second.artifact_uri, first.digest)


def test_an_artifact_outside_the_store_is_refused(news: Engine, store: ObjectStore) -> None:
    result = build_plan(news, "news", store)
    with pytest.raises(Exception, match="not under this store's root"):
        load_plan(store, "file:///etc/passwd", result.digest)
