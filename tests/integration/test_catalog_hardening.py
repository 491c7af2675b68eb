"""The hardened catalog on a real Postgres: canonical prefixes and encodable names at insert, feed
result and event-time settings, and plan artifacts bound to their feed."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from feedrouter.catalog import build_plan, load_latest_plan
from feedrouter.catalog.compiled import EventTime
from feedrouter.catalog.validation import has_event_time
from feedrouter.errors import CompileError
from feedrouter.limits import DEFAULT_MAX_SUBSCRIPTION_CHARS, JoinLimits, ResultLimits
from feedrouter.storage import FileStore
from tests.hostile.names.corpus import (
    ACCEPTED_NAMES,
    ACCEPTED_PREFIXES,
    REFUSED_NAMES,
    REFUSED_PREFIXES,
)
from tests.integration.rows import add_feed, add_subscriber, add_subscription

pytestmark = pytest.mark.integration


@pytest.fixture
def store(plans_dir: Path) -> FileStore:
    return FileStore(plans_dir)


def _insert(engine: Engine, statement: str, **values: object) -> None:
    with engine.begin() as conn:
        conn.execute(text(statement), values)


@pytest.mark.parametrize(("prefix", "why"), REFUSED_PREFIXES)
def test_postgres_refuses_non_canonical_output_prefixes(catalog: Engine, prefix: str, why: str) -> None:
    with pytest.raises(IntegrityError, match="ck_subscribers_output_prefix"):
        _insert(
            catalog, "INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES ('m', :p)", p=prefix
        )


@pytest.mark.parametrize(("prefix", "why"), REFUSED_PREFIXES)
def test_postgres_refuses_non_canonical_input_prefixes(catalog: Engine, prefix: str, why: str) -> None:
    with pytest.raises(IntegrityError, match="ck_feeds_input_prefix"):
        _insert(catalog, "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('f', :p)", p=prefix)


def test_postgres_accepts_canonical_prefixes(catalog: Engine) -> None:
    for i, prefix in enumerate(ACCEPTED_PREFIXES):
        _insert(
            catalog,
            "INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES (:n, :p)",
            n=f"s{i}",
            p=prefix,
        )
        _insert(
            catalog,
            "INSERT INTO feedrouter.feeds (name, input_prefix, quarantine_prefix) VALUES (:n, :p, :p)",
            n=f"f{i}",
            p=prefix,
        )


@pytest.mark.parametrize(("name", "why"), REFUSED_NAMES)
def test_postgres_refuses_names_too_long_once_encoded(catalog: Engine, name: str, why: str) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        add_subscriber(conn, "alice")
    with pytest.raises(IntegrityError, match="ck_subscriptions_name"), catalog.begin() as conn:
        add_subscription(conn, "alice", "news", name, "//title")


def test_postgres_accepts_names_that_fit_a_segment(catalog: Engine) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        add_subscriber(conn, "alice")
        for name in ACCEPTED_NAMES:
            add_subscription(conn, "alice", "news", name, "//title")


def test_subscription_texts_are_capped(catalog: Engine) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        add_subscriber(conn, "alice")
        add_subscription(conn, "alice", "news", "at-limit", "/" + "a" * (DEFAULT_MAX_SUBSCRIPTION_CHARS - 1))
    with pytest.raises(IntegrityError, match="ck_subscriptions_query_length"), catalog.begin() as conn:
        add_subscription(conn, "alice", "news", "over", "/" + "a" * DEFAULT_MAX_SUBSCRIPTION_CHARS)


def test_feed_result_settings_have_defaults_and_checks(catalog: Engine) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        row = conn.execute(text("SELECT * FROM feedrouter.feeds WHERE name = 'news'")).one()
    limits = ResultLimits()
    assert (row.max_result_bytes, row.max_document_result_bytes, row.invalid_documents) == (
        limits.per_subscription,
        limits.per_document,
        "fallback",
    )
    for assignment, check in (
        ("max_result_bytes = 0", "ck_feeds_result_limits"),
        ("max_document_result_bytes = -1", "ck_feeds_result_limits"),
        ("invalid_documents = 'drop'", "ck_feeds_invalid_documents"),
    ):
        with pytest.raises(IntegrityError, match=check):
            _insert(catalog, f"UPDATE feedrouter.feeds SET {assignment}")


def test_a_build_carries_the_feeds_result_settings(catalog: Engine, store: FileStore) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        conn.execute(
            text(
                "UPDATE feedrouter.feeds SET max_result_bytes = 1000, max_document_result_bytes = 5000,"
                " invalid_documents = 'quarantine'"
            )
        )
        add_subscriber(conn, "alice")
        add_subscription(conn, "alice", "news", "titles", "//title")
    build_plan(catalog, "news", store)
    _, plan = load_latest_plan(catalog, "news", store)
    assert plan.feed.result_limits == ResultLimits(1000, 5000)
    assert plan.feed.invalid_documents == "quarantine"
    assert plan.router.result_limits == ResultLimits(1000, 5000)
    assert plan.router.invalid_documents == "quarantine"
    assert plan.route_outcome(b"<nitf><title>x</title></nitf>").results == {
        next(iter(plan.targets)): b"<title>x</title>"
    }


def test_a_plan_build_pointed_at_another_feeds_artifact_is_refused(catalog: Engine, store: FileStore) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        add_feed(conn, "sports")
        add_subscriber(conn, "alice")
        add_subscription(conn, "alice", "news", "titles", "//title")
        add_subscription(conn, "alice", "sports", "scores", "//score")
    build_plan(catalog, "news", store)
    sports = build_plan(catalog, "sports", store)
    # Someone with write access to plan_builds re-points news at sports' genuine artifact.
    _insert(
        catalog,
        "UPDATE feedrouter.plan_builds SET artifact_uri = :u, digest = :d"
        " WHERE feed_id = (SELECT id FROM feedrouter.feeds WHERE name = 'news')",
        u=sports.artifact_uri,
        d=sports.digest,
    )
    with pytest.raises(CompileError, match=r"\[FR306\] .*built for feed 'sports'") as caught:
        load_latest_plan(catalog, "news", store)
    assert caught.value.code == "FR306"
    _, plan = load_latest_plan(catalog, "sports", store)
    assert plan.feed.name == "sports"


def test_a_build_on_postgres_resolves_shared_folders_and_owned_prefixes(
    catalog: Engine, store: FileStore
) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")  # input s3://input-bucket/news
        for name, prefix in (
            ("alice", "s3://output-bucket/shared"),
            ("bob", "s3://output-bucket/shared/"),
            ("mallory", "s3://input-bucket"),  # contains the input: "news" would deliver into it
        ):
            conn.execute(
                text("INSERT INTO feedrouter.subscribers (name, output_prefix) VALUES (:n, :p)"),
                {"n": name, "p": prefix},
            )
        add_subscription(conn, "alice", "news", "titles", "//title")
        add_subscription(conn, "bob", "news", "titles", "//head")
        add_subscription(conn, "bob", "news", "heads", "//head")
        add_subscription(conn, "mallory", "news", "news", "//title")
    result = build_plan(catalog, "news", store)
    assert (result.valid, result.invalid) == (2, 2)
    with catalog.connect() as conn:
        rows = conn.execute(
            text(
                "SELECT subscriber, subscription, error_code FROM feedrouter.subscription_problems"
                " ORDER BY subscriber"
            )
        ).all()
    assert [tuple(row) for row in rows] == [("bob", "titles", "FR404"), ("mallory", "news", "FR403")]
    _, plan = load_latest_plan(catalog, "news", store)
    assert sorted((t.subscriber, t.subscription) for t in plan.targets.values()) == [
        ("alice", "titles"),
        ("bob", "heads"),
    ]


SPARK_CONF = "UPDATE feedrouter.feeds SET spark_conf = CAST(:c AS jsonb) WHERE name = 'f'"


@pytest.mark.parametrize(
    ("conf", "why"),
    [
        ('["spark.executor.memory"]', "not an object"),
        ('"spark.executor.memory=4g"', "not an object"),
        ('{"executor.memory": "4g"}', "a key without the spark. prefix"),
        ('{"Spark.executor.memory": "4g"}', "the prefix is case-sensitive"),
        ('{"spark.executor.cores": 4}', "a number, not a string"),
        ('{"spark.dynamicAllocation.enabled": true}', "a boolean, not a string"),
        ('{"spark.executor.memory": null}', "null"),
        ('{"spark.a": {"b": "c"}}', "a nested object"),
    ],
)
def test_feed_spark_conf_is_an_object_of_spark_strings(catalog: Engine, conf: str, why: str) -> None:
    _insert(catalog, "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('f', 's3://in-bucket/f')")
    with pytest.raises(IntegrityError, match="ck_feeds_spark_conf"):
        _insert(catalog, SPARK_CONF, c=conf)


def test_feed_spark_conf_defaults_to_empty_and_reads_back_as_strings(catalog: Engine) -> None:
    from feedrouter.catalog.repository import feed_spark_conf
    from feedrouter.errors import CatalogError

    _insert(catalog, "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('f', 's3://in-bucket/f')")
    with catalog.connect() as conn:
        assert feed_spark_conf(conn, "f") == {}
    conf = '{"spark.executor.memory": "4g", "spark.dynamicAllocation.enabled": "true"}'
    _insert(catalog, SPARK_CONF, c=conf)
    with catalog.connect() as conn:
        assert feed_spark_conf(conn, "f") == {
            "spark.executor.memory": "4g",
            "spark.dynamicAllocation.enabled": "true",
        }
        with pytest.raises(CatalogError, match=r"\[FR405\].*'nope'"):
            feed_spark_conf(conn, "nope")


EVENT_TIME_CHECKS = [
    ("event_time_path = 'trade/@executed'", "ck_feeds_event_time_path"),  # relative
    ("event_time_path = ''", "ck_feeds_event_time_path"),
    ("event_time_path = '/' || repeat('a', 512)", "ck_feeds_event_time_path"),
    ("event_time_path = '/trade' || chr(10) || '/@executed'", "ck_feeds_event_time_path"),
    ("event_time_path = '/trade' || chr(127)", "ck_feeds_event_time_path"),
    ("event_time_format = 'unix'", "ck_feeds_event_time_format"),
    ("event_time_format = 'ISO8601'", "ck_feeds_event_time_format"),
    ("max_join_window = interval '0 hours'", "ck_feeds_max_join_window"),
    ("max_join_window = interval '-1 hours'", "ck_feeds_max_join_window"),
    ("max_join_window = interval '7 days 1 second'", "ck_feeds_max_join_window"),
    ("max_join_window = interval '1 mon'", "ck_feeds_max_join_window"),
    ("allowed_lateness = interval '-1 second'", "ck_feeds_allowed_lateness"),
    ("allowed_lateness = interval '169 hours'", "ck_feeds_allowed_lateness"),
    ("max_join_pairs = 0", "ck_feeds_max_join_pairs"),
    ("max_join_pairs = 1000001", "ck_feeds_max_join_pairs"),
    ("max_join_result_bytes = 0", "ck_feeds_max_join_result_bytes"),
    ("max_join_result_bytes = 268435457", "ck_feeds_max_join_result_bytes"),
]


@pytest.mark.parametrize(("assignment", "check"), EVENT_TIME_CHECKS)
def test_postgres_refuses_bad_event_time_settings(catalog: Engine, assignment: str, check: str) -> None:
    _insert(catalog, "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('f', 's3://in-bucket/f')")
    with pytest.raises(IntegrityError, match=check):
        _insert(catalog, f"UPDATE feedrouter.feeds SET {assignment}")


def test_event_time_settings_have_defaults_and_take_their_bounds(catalog: Engine) -> None:
    _insert(catalog, "INSERT INTO feedrouter.feeds (name, input_prefix) VALUES ('f', 's3://in-bucket/f')")
    query = (
        "SELECT event_time_path, event_time_format, max_join_window, allowed_lateness FROM feedrouter.feeds"
    )
    with catalog.connect() as conn:
        defaults = tuple(conn.execute(text(query)).one())
    assert defaults == (None, "iso8601", timedelta(hours=24), timedelta(hours=1))
    _insert(
        catalog,
        "UPDATE feedrouter.feeds SET event_time_path = :p, event_time_format = 'epoch-seconds',"
        " max_join_window = interval '7 days', allowed_lateness = interval '0 hours'",
        p="/" + "a" * 511,
    )
    with catalog.connect() as conn:
        row = conn.execute(text(query)).one()
    bounds = (len(row.event_time_path), row.max_join_window, row.allowed_lateness)
    assert bounds == (512, timedelta(days=7), timedelta(0))


def test_a_build_carries_the_feeds_event_time_settings(catalog: Engine, store: FileStore) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        add_subscriber(conn, "alice")
        add_subscription(conn, "alice", "news", "titles", "//title")
    first = build_plan(catalog, "news", store)
    _, plan = load_latest_plan(catalog, "news", store)
    assert plan.feed.event_time is None and not has_event_time(plan.feed)
    _insert(
        catalog,
        "UPDATE feedrouter.feeds SET event_time_path = '//head/@date', event_time_format = 'rfc822',"
        " max_join_window = interval '2 hours', allowed_lateness = interval '30 minutes'",
    )
    rebuilt = build_plan(catalog, "news", store)
    _, plan = load_latest_plan(catalog, "news", store)
    assert not rebuilt.reused and rebuilt.catalog_version > first.catalog_version
    expected = EventTime("//head/@date", "rfc822", timedelta(hours=2), timedelta(minutes=30))
    assert plan.feed.event_time == expected
    assert has_event_time(plan.feed)
    assert plan.feed.join_limits == JoinLimits(16 << 20, 100_000, 64 << 20)  # the defaults
    _insert(
        catalog,
        "UPDATE feedrouter.feeds SET max_result_bytes = 1000, max_join_pairs = 1000000,"
        " max_join_result_bytes = 268435456",
    )
    build_plan(catalog, "news", store)
    _, plan = load_latest_plan(catalog, "news", store)
    assert plan.feed.join_limits == JoinLimits(1000, 1_000_000, 256 << 20)  # the bounds are allowed
