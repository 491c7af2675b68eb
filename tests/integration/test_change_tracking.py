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
        "max_join_pairs = 10",
        "max_join_result_bytes = 1000",
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


# Join subscriptions (migration 0007): each side is compiled into the plan of the feed it reads.
JOIN = """import module namespace fr = "urn:feedrouter:stream:1";
for $book in fr:stream()//book, $blog in fr:stream("blogs")//item
where $blog/title = $book/title and fr:followed-by($book, $blog, "PT6H")
return <promo>{ $book/title }</promo>"""
FEEDS = ("news", "sports", "books", "blogs", "trades")


@pytest.fixture
def joins(news: Engine) -> Engine:
    """The news fixture, plus event-time feeds books, blogs and trades (news and sports have none)."""
    with news.begin() as conn:
        for feed in ("books", "blogs", "trades"):
            add_feed(conn, feed)
            conn.execute(
                text("UPDATE feedrouter.feeds SET event_time_path = '//@at' WHERE name = :f"), {"f": feed}
            )
    return news


def _all_versions(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        return {feed: version(conn, feed) for feed in FEEDS}


def _bumped(engine: Engine, statement: str, **params: object) -> set[str]:
    before = _all_versions(engine)
    _sql(engine, statement, **params)
    after = _all_versions(engine)
    assert all(after[feed] - before[feed] in (0, 1) for feed in FEEDS)  # once per transaction
    return {feed for feed in FEEDS if after[feed] != before[feed]}


ADD_ON_NEWS = (
    "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
    " SELECT s.id, f.id, :n, :q FROM feedrouter.subscribers s, feedrouter.feeds f"
    " WHERE s.name = 'alice' AND f.name = 'news'"
)
EVENT_TIME_FEEDS = {"books", "blogs", "trades"}


def test_a_join_subscription_bumps_its_feed_and_every_event_time_feed(joins: Engine) -> None:
    # on news, a feed without event time (its build will refuse it): news and every event-time feed
    assert _bumped(joins, ADD_ON_NEWS, n="promo", q=JOIN) == {"news", *EVENT_TIME_FEEDS}
    move = (
        "UPDATE feedrouter.subscriptions SET feed_id = (SELECT id FROM feedrouter.feeds"
        " WHERE name = 'sports') WHERE name = 'promo'"
    )
    assert _bumped(joins, move) == {"news", "sports", *EVENT_TIME_FEEDS}
    rename = "UPDATE feedrouter.subscriptions SET name = 'promos' WHERE name = 'promo'"
    assert _bumped(joins, rename) == {"sports", *EVENT_TIME_FEEDS}
    deactivate = "UPDATE feedrouter.subscriptions SET active = false WHERE name = 'promos'"
    assert _bumped(joins, deactivate) == {"sports", *EVENT_TIME_FEEDS}
    assert _bumped(joins, "DELETE FROM feedrouter.subscriptions WHERE name = 'promos'") == {
        "sports",
        *EVENT_TIME_FEEDS,
    }


def test_a_text_that_becomes_or_stops_being_a_join_bumps_the_event_time_feeds(joins: Engine) -> None:
    to_join = "UPDATE feedrouter.subscriptions SET query = :q WHERE name = 'titles'"
    assert _bumped(joins, to_join, q=JOIN) == {"news", *EVENT_TIME_FEEDS}
    assert _bumped(joins, to_join, q="//title") == {"news", *EVENT_TIME_FEEDS}  # the old text was one


def test_ordinary_subscriptions_and_status_writes_bump_only_their_feed(joins: Engine) -> None:
    _sql(joins, ADD_ON_NEWS, n="promo", q=JOIN)
    assert _bumped(joins, ADD_ON_NEWS, n="stories", q="//story") == {"news"}
    assert _bumped(joins, "UPDATE feedrouter.subscriptions SET query = '//head' WHERE name = 'titles'") == {
        "news"
    }
    # a build writing back the join's outcome changes no plan
    outcome = "UPDATE feedrouter.subscriptions SET status = 'valid', plan_text = 'join' WHERE name = 'promo'"
    assert not _bumped(joins, outcome)


def test_a_bulk_change_with_one_join_bumps_each_feed_once(joins: Engine) -> None:
    many = (
        "INSERT INTO feedrouter.subscriptions (subscriber_id, feed_id, name, query)"
        " SELECT s.id, f.id, 'q' || g, CASE WHEN g = 7 THEN :q ELSE '//title' END"
        " FROM feedrouter.subscribers s, feedrouter.feeds f, generate_series(1, 200) g"
        " WHERE s.name = 'alice' AND f.name = 'books'"
    )
    assert _bumped(joins, many, q=JOIN) == {"books", "blogs", "trades"}


def test_changing_an_event_time_feed_bumps_the_feeds_with_join_subscriptions(joins: Engine) -> None:
    with joins.begin() as conn:
        add_subscription(conn, "alice", "books", "promo", JOIN)
        add_subscription(conn, "alice", "trades", "stale", JOIN, active=False)  # inactive: not a reader
    for change in (
        "max_join_window = interval '2 hours'",
        "allowed_lateness = interval '0 hours'",
        "event_time_format = 'rfc822'",
        "event_time_path = '//item/@date'",
        "name = 'weblogs'",
        "active = false",
    ):
        assert _bumped(joins, f"UPDATE feedrouter.feeds SET {change} WHERE name = 'blogs'") == {
            "blogs",
            "books",
        }, change
        _sql(joins, "UPDATE feedrouter.feeds SET name = 'blogs' WHERE name = 'weblogs'")
    # a setting outside joins, or a feed without event time: only the feed itself
    limit = "UPDATE feedrouter.feeds SET max_result_bytes = 30 WHERE name = 'blogs'"
    assert _bumped(joins, limit) == {"blogs"}
    # a feed's join limits bound its own join subscriptions' deliveries: no other plan reads them
    pairs = "UPDATE feedrouter.feeds SET max_join_pairs = 10, max_join_result_bytes = 99 WHERE name = 'books'"
    assert _bumped(joins, pairs) == {"books"}
    window = "UPDATE feedrouter.feeds SET max_join_window = interval '3 hours' WHERE name = 'news'"
    assert _bumped(joins, window) == {"news"}
    # a feed gaining an event time is one joins may now read
    path = "UPDATE feedrouter.feeds SET event_time_path = '//@at' WHERE name = 'sports'"
    assert _bumped(joins, path) == {"sports", "books"}


def test_feeds_coming_and_going_bump_the_feeds_that_joins_involve(joins: Engine) -> None:
    with joins.begin() as conn:
        add_subscription(conn, "alice", "books", "promo", JOIN)
    add = "INSERT INTO feedrouter.feeds (name, input_prefix, event_time_path) VALUES (:n, 's3://in-b/x', :p)"
    assert _bumped(joins, add, n="plain", p=None) == set()  # (and plain itself, not in FEEDS)
    assert _bumped(joins, add, n="timed", p="//@at") == {"books"}
    # deactivating the joining feed takes its blocks out of the event-time feeds' plans
    deactivate = "UPDATE feedrouter.feeds SET active = false WHERE name = 'books'"
    assert _bumped(joins, deactivate) == EVENT_TIME_FEEDS
    # deleting it deletes its subscriptions (by cascade, after the feed), the join among them
    assert _bumped(joins, "DELETE FROM feedrouter.feeds WHERE name = 'books'") == EVENT_TIME_FEEDS


def test_a_subscriber_with_a_join_subscription_bumps_every_event_time_feed(joins: Engine) -> None:
    """Only an active subscriber's joins are compiled into the feeds their blocks read."""
    _sql(joins, ADD_ON_NEWS, n="promo", q=JOIN)
    with joins.begin() as conn:
        add_subscriber(conn, "bob")
        add_subscription(conn, "bob", "sports", "scores", "//score")
    pause = "UPDATE feedrouter.subscribers SET active = false WHERE name = 'alice'"
    assert _bumped(joins, pause) == {"news", *EVENT_TIME_FEEDS}
    rename_other = "UPDATE feedrouter.subscribers SET name = 'robert' WHERE name = 'bob'"
    assert _bumped(joins, rename_other) == {"sports"}  # bob has no join
    assert _bumped(joins, "DELETE FROM feedrouter.subscribers WHERE name = 'alice'") >= EVENT_TIME_FEEDS
