"""One answer per catalog question: which build is a feed's latest, which feed a name is, and the
one error code of each refusal (FR405 no such feed, FR601 no plan build), wherever it is asked."""

from __future__ import annotations

import ast
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, text

from feedrouter.catalog import (
    latest_build,
    latest_builds,
    open_catalog,
    require_feed,
    require_plan_build,
    status,
)
from feedrouter.catalog import lease as leases
from feedrouter.catalog.repository import active_subscriptions, event_time_feeds, join_subscriptions
from feedrouter.errors import CatalogError, NoPlanBuildError
from tests.conftest import ROOT

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
FEED = "INSERT INTO feeds (name, input_prefix, layout) VALUES (:n, :p, '{prefix}/{date}/{hour}/')"
BUILD = (
    "INSERT INTO plan_builds (id, feed_id, catalog_version, format_version, feedrouter_version, strategy,"
    " artifact_uri, digest, artifact_bytes, subscriptions, valid_count, invalid_count, never_matches_count,"
    " duration_seconds, built_at) VALUES (:id, :feed, :version, 3, 'x', 'FWR', 'file:///p', :digest, 1, 0, 0,"
    " 0, 0, 0.1, :at)"
)


@pytest.fixture
def engine(catalog_db_url: str) -> Engine:
    """Feeds news (builds 1, 2 at the same time and 3 earlier) and wire (build 4), sports (none)."""
    engine = open_catalog(catalog_db_url)
    with engine.begin() as conn:
        for name in ("news", "wire", "sports"):
            conn.execute(text(FEED), {"n": name, "p": f"s3://in-bucket/{name}/"})
        builds = [(1, 1, 5, HOUR), (2, 1, 6, HOUR), (3, 1, 7, HOUR - timedelta(days=1)), (4, 2, 1, HOUR)]
        for build, feed, version, at in builds:
            conn.execute(
                text(BUILD), {"id": build, "feed": feed, "version": version, "digest": "a" * 64, "at": at}
            )
    return engine


def test_the_latest_build_is_the_newest_then_the_highest_id(engine: Engine) -> None:
    with engine.connect() as conn:
        assert latest_build(conn, "news").id == 2  # same built_at as build 1; build 3 is older
        assert {name: build.id for name, build in latest_builds(conn).items()} == {"news": 2, "wire": 4}
        assert latest_build(conn, "sports") is None


def test_the_status_questions_answer_from_the_same_latest_build(engine: Engine) -> None:
    with engine.connect() as conn:
        assert status.built_versions(conn) == {"news": 6, "wire": 1}
        assert require_plan_build(conn, "news") == latest_build(conn, "news")


def test_no_plan_build_is_fr601_with_what_to_run(engine: Engine) -> None:
    with engine.connect() as conn, pytest.raises(NoPlanBuildError) as caught:
        require_plan_build(conn, "sports")
    assert caught.value.code == "FR601"
    assert "run `feedrouter build-plan --feed sports`" in str(caught.value)


def test_an_unknown_feed_is_fr405_wherever_it_is_asked(engine: Engine) -> None:
    asks = [
        lambda conn: require_feed(conn, "nope"),
        lambda conn: status.batch_prefix(conn, "nope", HOUR),
        lambda conn: status.batch_ledger(conn, "nope", HOUR),
    ]
    for ask in asks:
        with engine.connect() as conn, pytest.raises(CatalogError, match="no feed named 'nope'") as caught:
            ask(conn)
        assert caught.value.code == "FR405"
    with pytest.raises(CatalogError) as caught:
        leases.acquire(engine, "nope", HOUR)
    assert caught.value.code == "FR405"


def test_the_input_prefix_comes_from_the_feeds_layout(engine: Engine) -> None:
    with engine.connect() as conn:
        assert status.batch_prefix(conn, "news", HOUR) == "s3://in-bucket/news/2026-11-22/16/"


JOIN = """import module namespace fr = "urn:feedrouter:stream:1";
for $a in fr:stream()//trade, $b in fr:stream("wire")//amend
where $b/@ref = $a/@id and fr:within($a, $b, "PT1H") return $b"""
TIMED = "UPDATE feeds SET event_time_path = '//@at', max_join_window = '2 hours' WHERE name = ANY(:names)"
SUBSCRIBER = "INSERT INTO subscribers (name, output_prefix, active) VALUES (:n, :p, :a)"
SUBSCRIPTION = (
    "INSERT INTO subscriptions (subscriber_id, feed_id, name, query, active)"
    " SELECT s.id, f.id, :n, :q, :a FROM subscribers s, feeds f WHERE s.name = :s AND f.name = :f"
)


def test_the_joins_of_every_feed_and_the_feeds_they_may_read(engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(text(FEED), {"n": "archive", "p": "s3://in-bucket/archive/"})
        conn.execute(text(TIMED), {"names": ["news", "wire", "archive"]})
        conn.execute(text("UPDATE feeds SET active = false WHERE name = 'archive'"))
        for name, active in (("alice", True), ("bob", False)):
            conn.execute(text(SUBSCRIBER), {"n": name, "p": f"s3://out-bucket/{name}", "a": active})
        for subscriber, feed, name, query, active in [
            ("alice", "wire", "amended", JOIN, True),
            ("alice", "news", "titles", "//title", True),  # not a join
            ("alice", "archive", "old", JOIN, True),  # an inactive feed
            ("bob", "news", "bobs", JOIN, True),  # an inactive subscriber
            ("alice", "news", "paused", JOIN, False),
            ("alice", "sports", "timeless", JOIN, True),  # the build refuses it; it is still a join
            ("alice", "news", "trades", JOIN, True),
        ]:
            conn.execute(
                text(SUBSCRIPTION), {"s": subscriber, "f": feed, "n": name, "q": query, "a": active}
            )
    with engine.connect() as conn:
        joins = join_subscriptions(conn)
        feeds = event_time_feeds(conn)
        assert [(feed, record.target.subscription) for feed, record in joins] == [
            ("wire", "amended"),
            ("sports", "timeless"),
            ("news", "trades"),
        ]
        assert joins[2][1] in active_subscriptions(conn, require_feed(conn, "news").id)  # the same record
        assert feeds == {name: require_feed(conn, name).config for name in ("news", "wire")}
    assert feeds["wire"].event_time is not None and feeds["wire"].max_join_window == timedelta(hours=2)


def _function_places() -> dict[str, list[str]]:
    """Every function name defined in the package -> the files defining it."""
    places: dict[str, list[str]] = {}
    for path in sorted((ROOT / "plugins" / "feedrouter").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef):
                places.setdefault(node.name, []).append(str(path.relative_to(ROOT)))
    return places


# parsed once, when the module is collected: CPython 3.11's ast.parse can raise "AST constructor
# recursion depth mismatch" in a worker after another test's caught RecursionError (a CPython bug)
_PLACES = _function_places()


@pytest.mark.parametrize(
    "name",
    [
        "latest_build",
        "require_feed",
        "require_plan_build",
        "advisory_key",
        "join_subscriptions",
        "event_time_feeds",
    ],
)
def test_each_catalog_question_is_defined_once(name: str) -> None:
    places = _PLACES.get(name, [])
    assert len(places) == 1, f"{name} is defined in {places}"


def test_a_feeds_quarantine_defaults_below_its_input_in_one_place() -> None:
    from feedrouter.catalog import FeedConfig

    assert FeedConfig("news", "s3://in/news/", "{prefix}/").quarantine_uri == "s3://in/news/_quarantine"
    assert (
        FeedConfig("news", "s3://in/news", "{prefix}/", quarantine_prefix="s3://q").quarantine_uri == "s3://q"
    )
