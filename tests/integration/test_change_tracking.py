"""Triggers: plain-SQL changes bump the per-feed catalog version and NOTIFY 'feedrouter_catalog'."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import Engine, make_url, text

from feedrouter.catalog import catalog_version, catalog_versions
from tests.integration.rows import (
    add_dtd,
    add_feed,
    add_subscriber,
    add_subscription,
    subscription,
    version,
)

pytestmark = pytest.mark.integration


@pytest.fixture
def news(catalog: Engine) -> Engine:
    """Feeds news and sports, subscriber alice with one subscription on news."""
    with catalog.begin() as conn:
        add_dtd(conn, "news")
        add_feed(conn, "news", dtd="news")
        add_feed(conn, "sports")
        add_subscriber(conn, "alice")
        add_subscription(conn, "alice", "news", "titles", "//title")
    return catalog


def _sql(engine: Engine, statement: str, **params: object) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement), params)


def _versions(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {feed: version(conn, feed) for feed in ("news", "sports")}


def test_insert_update_and_delete_of_subscriptions_bump_the_feed_version(news: Engine) -> None:
    before = _versions(news)
    _sql(
        news,
        "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
        " SELECT s.id, f.id, 'stories', '//story' FROM feedrouter.subscribers s, feedrouter.feeds f"
        " WHERE s.name = 'alice' AND f.name = 'news'",
    )
    after_insert = _versions(news)
    _sql(news, "UPDATE feedrouter.subscriptions SET query = '//head/title' WHERE name = 'titles'")
    after_update = _versions(news)
    _sql(news, "DELETE FROM feedrouter.subscriptions WHERE name = 'stories'")
    after_delete = _versions(news)
    assert before["news"] < after_insert["news"] < after_update["news"] < after_delete["news"]
    assert before["sports"] == after_delete["sports"]  # other feeds are not touched


def test_a_bulk_insert_bumps_once_and_status_writes_do_not_bump(news: Engine) -> None:
    before = _versions(news)["news"]
    _sql(
        news,
        "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
        " SELECT s.id, f.id, 'q' || g, '//title' FROM feedrouter.subscribers s, feedrouter.feeds f,"
        " generate_series(1, 500) g WHERE s.name = 'alice' AND f.name = 'news'",
    )
    assert _versions(news)["news"] == before + 1
    _sql(news, "UPDATE feedrouter.subscriptions SET status = 'valid', plan_text = 'explained'")
    _sql(news, "UPDATE feedrouter.subscriptions SET updated_at = now()")
    assert _versions(news)["news"] == before + 1


def test_subscriber_feed_and_dtd_changes_bump_every_feed_they_affect(news: Engine) -> None:
    with news.begin() as conn:
        add_subscription(conn, "alice", "sports", "scores", "//score")
    steps = [
        "UPDATE feedrouter.subscribers SET active = false WHERE name = 'alice'",  # news and sports
        "UPDATE feedrouter.dtds SET text = text || ' ' WHERE name = 'news'",  # news only
        "UPDATE feedrouter.feeds SET record_element = 'nitf' WHERE name = 'sports'",  # sports only
    ]
    seen = [_versions(news)]
    for statement in steps:
        _sql(news, statement)
        seen.append(_versions(news))
    assert [seen[1][f] - seen[0][f] for f in ("news", "sports")] == [1, 1]
    assert [seen[2][f] - seen[1][f] for f in ("news", "sports")] == [1, 0]
    assert [seen[3][f] - seen[2][f] for f in ("news", "sports")] == [0, 1]


def test_truncating_subscriptions_bumps_every_feed(news: Engine) -> None:
    before = _versions(news)
    _sql(news, "TRUNCATE feedrouter.subscriptions CASCADE")
    after = _versions(news)
    assert after == {feed: v + 1 for feed, v in before.items()}


def test_a_changed_text_resets_the_status_and_updated_at(news: Engine) -> None:
    _sql(news, "UPDATE feedrouter.subscriptions SET status = 'valid', plan_text = 'old plan'")
    with news.connect() as conn:
        before = subscription(conn, "titles")
    _sql(news, "UPDATE feedrouter.subscriptions SET query = '//story' WHERE name = 'titles'")
    with news.connect() as conn:
        after = subscription(conn, "titles")
    assert (after["status"], after["plan_text"]) == ("pending", None)
    assert after["updated_at"] > before["updated_at"]


def test_changes_are_notified_with_the_feed_name(news: Engine, catalog_url: str) -> None:
    dsn = make_url(catalog_url).set(drivername="postgresql").render_as_string(hide_password=False)
    with psycopg.connect(dsn, autocommit=True) as listener:
        listener.execute("LISTEN feedrouter_catalog")
        _sql(news, "UPDATE feedrouter.subscriptions SET active = false WHERE name = 'titles'")
        notes = list(listener.notifies(timeout=5, stop_after=1))
    assert [(n.channel, n.payload) for n in notes] == [("feedrouter_catalog", "news")]


def test_the_library_reads_the_versions_the_triggers_keep(news: Engine) -> None:
    with news.connect() as conn:
        assert catalog_version(conn, "news") == version(conn, "news") > 0
        assert catalog_versions(conn) == {"news": version(conn, "news"), "sports": version(conn, "sports")}
        assert catalog_version(conn, "no-such-feed") == 0


def test_constraints_refuse_bad_rows(news: Engine) -> None:
    bad = [
        "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('x', 's3://bucket/../etc')",
        "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('x', 'http://example.com/in')",
        "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('../x', 's3://bucket/in')",
        "INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES ('bob', 'file://relative/path')",
        "UPDATE feedrouter.subscriptions SET status = 'bogus'",
        "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
        " SELECT subscriber_id, feed_id, name, query FROM feedrouter.subscriptions",  # duplicate name
    ]
    for statement in bad:
        with pytest.raises(Exception, match="violates"):
            _sql(news, statement)


@pytest.mark.parametrize(
    "change",
    [
        "max_result_bytes = 30",
        "max_document_result_bytes = 100",
        "invalid_documents = 'quarantine'",
        "event_time_path = '//trade/@executed'",
        "event_time_format = 'rfc822'",
        "max_join_window = interval '2 hours'",
        "allowed_lateness = interval '0 hours'",
    ],
)
def test_a_feed_setting_the_plan_carries_bumps_the_version(news: Engine, change: str) -> None:
    before = _versions(news)
    _sql(news, f"UPDATE feedrouter.feeds SET {change} WHERE name = 'news'")
    after = _versions(news)
    assert after["news"] == before["news"] + 1 and after["sports"] == before["sports"]


def test_the_feeds_spark_conf_is_no_plan_change(news: Engine) -> None:
    before = _versions(news)
    conf = '{"spark.executor.memory": "4g"}'
    _sql(news, "UPDATE feedrouter.feeds SET spark_conf = CAST(:c AS jsonb) WHERE name = 'news'", c=conf)
    assert _versions(news) == before


def test_clearing_and_rewriting_the_event_time_path_bump_and_an_equal_write_does_not(news: Engine) -> None:
    set_path = "UPDATE feedrouter.feeds SET event_time_path = :p WHERE name = 'news'"
    start = _versions(news)["news"]
    _sql(news, set_path, p="/nitf/head/pubdata/@date")
    _sql(news, set_path, p="/nitf/head/pubdata/@date")  # the same value: no change
    after_set = _versions(news)["news"]
    _sql(news, set_path, p=None)
    # '24 hours' and '1 day' are equal intervals: not a change either
    _sql(news, "UPDATE feedrouter.feeds SET max_join_window = interval '1 day' WHERE name = 'news'")
    assert (after_set, _versions(news)["news"]) == (start + 1, start + 2)
