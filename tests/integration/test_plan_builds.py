"""Plan builds against a real Postgres catalog, with artifacts in a file:// store."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import Engine, func, select, text

from feedrouter.catalog import PlanBuild, build_plan, load_latest_plan, load_plan
from feedrouter.catalog.locks import advisory_key
from feedrouter.errors import CatalogError, NoPlanBuildError
from feedrouter.storage import FileStore
from tests.integration.rows import (
    NEWS_DOCUMENT,
    add_dtd,
    add_feed,
    add_subscriber,
    add_subscription,
    subscription,
    version,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def store(plans_dir: Path) -> FileStore:
    return FileStore(plans_dir)


@pytest.fixture
def news(catalog: Engine) -> Engine:
    """Feed news (NEWS DTD) with served, inactive, broken and other-feed subscriptions."""
    with catalog.begin() as conn:
        add_dtd(conn, "news")
        add_feed(conn, "news", dtd="news")
        add_feed(conn, "sports")
        add_subscriber(conn, "alice")
        add_subscriber(conn, "bob", active=False)
        add_subscription(conn, "alice", "news", "titles", "//head/title")
        add_subscription(conn, "alice", "news", "whole", "/nitf[head/title]")
        add_subscription(conn, "alice", "news", "paused", "//title", active=False)
        add_subscription(conn, "alice", "news", "broken", "for $h in //head\nwhere $h/title = 'x'\nreturn $t")
        add_subscription(conn, "alice", "news", "unclosed", '/nitf[head/title = "x"')
        add_subscription(conn, "bob", "news", "bobs", "//title")  # bob is inactive
        add_subscription(conn, "alice", "sports", "scores", "//score")  # another feed
    return catalog


def _builds(engine: Engine) -> int:
    with engine.connect() as conn:
        return conn.scalar(select(func.count()).select_from(PlanBuild))


def test_a_build_serves_exactly_the_active_valid_subscriptions(news: Engine, store: FileStore) -> None:
    result = build_plan(news, "news", store)
    build, plan = load_latest_plan(news, "news", store)
    served = {target.subscription for target in plan.targets.values()}
    assert served == {"titles", "whole"}
    assert (result.subscriptions, result.valid, result.invalid, result.never_matches) == (4, 2, 2, 0)
    assert build.id == result.id and build.digest == result.digest
    results = {plan.targets[sid].subscription: data for sid, data in plan.route(NEWS_DOCUMENT).items()}
    assert results["titles"] == "<title>Café prices</title>".encode()
    assert set(results) == {"titles", "whole"}


def test_invalid_subscriptions_get_their_error_and_position(news: Engine, store: FileStore) -> None:
    build_plan(news, "news", store)
    with news.connect() as conn:
        broken, unclosed, titles = (subscription(conn, n) for n in ("broken", "unclosed", "titles"))
        paused = subscription(conn, "paused")
    assert (broken["status"], broken["error_code"], broken["error_line"], broken["error_column"]) == (
        "invalid",
        "FR106",
        3,
        8,
    )
    assert "unknown variable" in broken["error_message"] and "return $t" in broken["error_message"]
    assert (unclosed["status"], unclosed["error_code"], unclosed["error_line"]) == ("invalid", "FR103", 1)
    assert titles["status"] == "valid" and titles["error_message"] is None
    # The stored plan text is explain(): the NEWS DTD fixes //head to /nitf/head.
    assert "rewrite: //head -> /nitf/head" in titles["plan_text"]
    assert "Stream(path 0: /nitf/head/title)" in titles["plan_text"]
    assert paused["status"] == "pending"  # not built: inactive


def test_the_problems_view_says_why(news: Engine, store: FileStore) -> None:
    build_plan(news, "news", store)
    with news.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT subscription, error_code, error_line FROM feedrouter.subscription_problems ORDER BY 1"
            )
        ).all()
        status = conn.execute(text("SELECT up_to_date FROM feedrouter.feed_status WHERE feed = 'news'")).one()
    assert [tuple(r) for r in rows] == [("broken", "FR106", 3), ("unclosed", "FR103", 1)]
    assert status.up_to_date is True


def test_an_unchanged_catalog_is_a_no_op_and_a_change_builds_again(news: Engine, store: FileStore) -> None:
    first = build_plan(news, "news", store)
    again = build_plan(news, "news", store)
    assert again.reused and again.id == first.id and _builds(news) == 1
    with news.begin() as conn:
        conn.execute(text("UPDATE feedrouter.subscriptions SET query = '//title' WHERE name = 'broken'"))
        current = version(conn, "news")
    rebuilt = build_plan(news, "news", store)
    assert not rebuilt.reused and rebuilt.catalog_version == current > first.catalog_version
    assert (rebuilt.valid, rebuilt.invalid) == (3, 1)
    assert _builds(news) == 2


def test_a_lost_artifact_is_rebuilt_in_place(news: Engine, store: FileStore) -> None:
    first = build_plan(news, "news", store)
    store.delete(store.key_of(first.artifact_uri))
    again = build_plan(news, "news", store)
    assert not again.reused and again.id == first.id and _builds(news) == 1
    assert load_plan(store, again.artifact_uri, again.digest).catalog_version == first.catalog_version


def test_concurrent_builds_of_one_feed_give_one_build(news: Engine, store: FileStore) -> None:
    results = []
    barrier = threading.Barrier(2)

    def build() -> None:
        barrier.wait()
        results.append(build_plan(news, "news", store))

    threads = [threading.Thread(target=build) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(results) == 2 and results[0].id == results[1].id
    assert sorted(r.reused for r in results) == [False, True]
    assert _builds(news) == 1


def test_a_build_waits_while_another_holds_the_feed_lock(news: Engine, store: FileStore) -> None:
    results = []
    with news.connect() as holder, holder.begin():
        holder.execute(select(func.pg_advisory_xact_lock(advisory_key("news"))))
        thread = threading.Thread(target=lambda: results.append(build_plan(news, "news", store)))
        thread.start()
        time.sleep(1.0)
        assert thread.is_alive() and _builds(news) == 0  # blocked on the lock, wrote nothing
    thread.join(60)
    assert len(results) == 1 and _builds(news) == 1


def test_unknown_feed_and_missing_build_are_clear_errors(news: Engine, store: FileStore) -> None:
    with pytest.raises(CatalogError, match="no feed named 'nope'") as unknown:
        build_plan(news, "nope", store)
    with pytest.raises(
        NoPlanBuildError, match="has no plan build: run `feedrouter build-plan --feed sports`"
    ) as none:
        load_latest_plan(news, "sports", store)
    assert (unknown.value.code, none.value.code) == ("FR405", "FR601")  # one code each, wherever asked
