"""A feed's event-time settings: the path a join reads its time from, checked in Python as a build
checks it; whether a feed can take joins; the settings as a plan carries them, old artifacts included."""

from __future__ import annotations

import importlib.util
import re
from dataclasses import replace
from datetime import timedelta

import pytest

from feedrouter import Router
from feedrouter.catalog import artifact, models
from feedrouter.catalog.compiled import CompiledPlan, EventTime, FeedConfig, Target
from feedrouter.catalog.validation import event_time_path_problem, event_time_problem, has_event_time
from feedrouter.join.clock import FORMATS
from feedrouter.limits import (
    DEFAULT_ALLOWED_LATENESS,
    DEFAULT_MAX_JOIN_PAIRS,
    DEFAULT_MAX_JOIN_RESULT_BYTES,
    DEFAULT_MAX_JOIN_WINDOW,
    DEFAULT_MAX_RESULT_BYTES,
    MAX_EVENT_TIME_PATH_CHARS,
    JoinLimits,
)
from tests.conftest import ROOT

FEED = FeedConfig("trades", "s3://in/trades", "{prefix}/{hour}/")
NEW_FIELDS = ("event_time_path", "event_time_format", "max_join_window", "allowed_lateness")


@pytest.mark.parametrize(
    "path",
    [
        "/rss/channel/item/pubDate",
        "//trade/@executed",
        "//trade/executed/text()",
        "/a/child::b[1]/@at",
        "//item[@kind = 'a:b$|(x)']/time",  # literals may hold anything
        "//item[@x = 'a/@b']/pubDate",  # an attribute step in a literal is no attribute step
        "/ trade / @executed",
        "//trade/attribute::executed",
        "/" + "a/" * ((MAX_EVENT_TIME_PATH_CHARS - 2) // 2) + "t",
    ],
)
def test_absolute_location_paths_are_accepted(path: str) -> None:
    assert len(path) <= MAX_EVENT_TIME_PATH_CHARS
    assert event_time_path_problem(path) is None


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("", "1 to 512"),
        ("/" + "a" * MAX_EVENT_TIME_PATH_CHARS, "513 characters long"),
        ("/rss/item\n/pubDate", "control character"),
        ("rss/item/pubDate", "not absolute"),
        ("count(//item)", "not absolute"),
        ("/rss/dc:date", "namespace prefix"),
        ("/rss/*:date", "namespace prefix"),
        ("/rss/item[$n]/date", "variable"),
        ("/rss/item[last()]/date", r"calls last\(\)"),
        ("/rss/item/node()", r"calls node\(\)"),
        ("/rss/item/comment()", r"calls comment\(\)"),
        ("/a/date | /b/date", "union"),
        ("/a/namespace::*", "namespace axis"),
        ("/a[", "lxml can compile"),
        ("/a/date + 1", "giving a float, not a location path"),
        ("/a/date = '2024'", "giving a bool"),
        ("/", "document node"),
        ("//@date", "not a path the router reads an event time with"),
        ("//item//@date", "not a path the router reads an event time with"),
        ("//text()", "not a path the router reads an event time with"),
    ],
)
def test_other_paths_are_refused_with_the_reason(path: str, why: str) -> None:
    problem = event_time_path_problem(path)
    assert problem is not None
    assert problem.startswith("event_time_path ")
    assert re.search(why, problem), problem


def test_a_feed_without_an_event_time_path_takes_no_joins() -> None:
    assert FEED.event_time is None
    assert not has_event_time(FEED)
    assert event_time_problem(FEED) == (
        "feed 'trades' has no event time: set feeds.event_time_path (and event_time_format) to where its "
        "messages keep it before subscribing joins to it"
    )


def test_a_feed_with_a_usable_path_takes_joins_with_its_settings() -> None:
    feed = replace(FEED, event_time_path="//trade/@executed", event_time_format="epoch-seconds")
    assert has_event_time(feed)
    assert feed.event_time == EventTime(
        "//trade/@executed", "epoch-seconds", DEFAULT_MAX_JOIN_WINDOW, DEFAULT_ALLOWED_LATENESS
    )
    assert feed.event_time.lookback == timedelta(hours=25)


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"event_time_path": "trade/@executed"}, "not absolute"),
        ({"event_time_format": "unix"}, "event_time_format 'unix' is none of iso8601, rfc822, epoch-seconds"),
        ({"max_join_window": timedelta(0)}, "max_join_window 0:00:00 is not above 0"),
        ({"max_join_window": timedelta(days=7, seconds=1)}, "max_join_window 7 days, 0:00:01"),
        ({"allowed_lateness": timedelta(seconds=-1)}, "allowed_lateness -1 day, 23:59:59 is not from 0"),
    ],
)
def test_unusable_settings_keep_joins_off_and_say_why(changes: dict[str, object], why: str) -> None:
    feed = replace(FEED, **{"event_time_path": "//trade/@executed", **changes})  # type: ignore[arg-type]
    problem = event_time_problem(feed)
    assert problem is not None and problem.startswith("the event-time settings of feed 'trades' are refused")
    assert why in problem
    assert not has_event_time(feed)


def test_the_bounds_themselves_are_allowed() -> None:
    feed = replace(
        FEED,
        event_time_path="/t",
        max_join_window=timedelta(days=7),
        allowed_lateness=timedelta(0),
    )
    assert has_event_time(feed)


def test_a_plan_summary_carries_the_event_time_settings() -> None:
    feed = replace(FEED, event_time_path="/t", event_time_format="rfc822", max_join_window=timedelta(hours=2))
    encoded = artifact.encode(_plan(feed))
    summary = artifact.decode_summary(encoded.data, encoded.digest)
    assert summary.feed.event_time == EventTime("/t", "rfc822", timedelta(hours=2), DEFAULT_ALLOWED_LATENESS)


def test_an_artifact_pickled_before_the_event_time_fields_decodes_with_their_defaults() -> None:
    old = replace(FEED)
    for name in NEW_FIELDS:  # what a FeedConfig pickled by an earlier release holds: no such fields
        del old.__dict__[name]
    encoded = artifact.encode(_plan(old))
    for feed in (
        artifact.decode_summary(encoded.data, encoded.digest).feed,
        artifact.decode(encoded.data, encoded.digest).feed,
    ):
        assert not any(name in feed.__dict__ for name in NEW_FIELDS)
        assert feed.event_time is None
        assert (feed.event_time_format, feed.max_join_window, feed.allowed_lateness) == (
            "iso8601",
            DEFAULT_MAX_JOIN_WINDOW,
            DEFAULT_ALLOWED_LATENESS,
        )


def test_the_migration_freezes_the_models_checks() -> None:
    spec = importlib.util.spec_from_file_location(
        "migration_0006", ROOT / "migrations" / "versions" / "0006_feed_event_time.py"
    )
    assert spec is not None and spec.loader is not None
    migration = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(migration)
    from_models = {
        "event_time_path": models.EVENT_TIME_PATH_CHECK,
        "event_time_format": models._in("event_time_format", FORMATS),
        "max_join_window": models.JOIN_WINDOW_CHECK,
        "allowed_lateness": models.LATENESS_CHECK,
    }
    assert from_models == migration.CHECKS


def _plan(feed: FeedConfig) -> CompiledPlan:
    router = Router.compile([("1", "//title")])
    return CompiledPlan(feed, 3, router, {"1": Target(1, "titles", "alice", "s3://out/alice")})


def test_an_artifact_pickled_before_the_join_limits_decodes_with_their_defaults() -> None:
    old = replace(FEED, max_result_bytes=1000)
    for name in ("max_join_pairs", "max_join_result_bytes"):  # a FeedConfig pickled before 0009
        del old.__dict__[name]
    encoded = artifact.encode(_plan(old))
    feed = artifact.decode_summary(encoded.data, encoded.digest).feed
    assert feed.join_limits == JoinLimits(1000, DEFAULT_MAX_JOIN_PAIRS, DEFAULT_MAX_JOIN_RESULT_BYTES)
    limited = replace(FEED, max_join_pairs=7, max_join_result_bytes=99)
    encoded = artifact.encode(_plan(limited))
    assert artifact.decode_summary(encoded.data, encoded.digest).feed.join_limits == JoinLimits(
        DEFAULT_MAX_RESULT_BYTES, 7, 99
    )
