"""A plan build's join side (feedrouter.catalog.joins): which subscriptions are joins, what the feeds
must offer them (FR117, positioned), which blocks a feed's router computes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from feedrouter.catalog.compiled import FeedConfig, Target
from feedrouter.catalog.joins import compile_joins
from feedrouter.catalog.outcomes import Outcome
from feedrouter.catalog.repository import SubscriptionRecord

PROLOG = 'import module namespace fr = "urn:feedrouter:stream:1";\n'
CROSS = PROLOG + (
    'for $a in fr:stream()//item, $b in fr:stream("blogs")//item\n'
    "where $a/author = $b/author and fr:within($a, $b, 'PT2H')\n"
    "return <p>{ $a/title }{ $b/title }</p>"
)


def feed(name: str, path: str | None = "//pubDate", window: timedelta = timedelta(hours=24)) -> FeedConfig:
    return FeedConfig(
        name, f"s3://in/{name}", "{prefix}/{date}/{hour}/", event_time_path=path, max_join_window=window
    )


def record(catalog_id: int, query: str) -> SubscriptionRecord:
    return SubscriptionRecord(
        Target(catalog_id, f"s{catalog_id}", "ada", "s3://out/ada"), query, Outcome("pending")
    )


def test_joins_are_told_apart_from_ordinary_subscriptions_and_compiled() -> None:
    news, blogs = feed("news"), feed("blogs")
    found = compile_joins(news, [record(1, CROSS), record(2, "//item/title")], [], {"blogs": blogs})
    assert found.join_ids == {"1"} and found.outcomes["1"].status == "valid"
    assert "join subscription 1" in (found.outcomes["1"].plan_text or "")
    (plan,) = found.joins.plans.values()
    assert plan.feeds == ("news", "blogs")
    # news computes its own side's block; the blogs side is the blogs router's
    assert [found.joins.specs[b].feed for b in found.joins.blocks] == ["news"]
    assert found.joins.clock is not None and found.joins.event_format == "iso8601"


def test_a_feed_computes_the_blocks_other_feeds_joins_read_from_it() -> None:
    news, blogs = feed("news"), feed("blogs")
    found = compile_joins(blogs, [], [("news", record(1, CROSS))], {"news": news, "blogs": blogs})
    assert found.joins.plans == {} and found.outcomes == {}
    assert [found.joins.specs[b].feed for b in found.joins.blocks] == ["blogs"]


def test_a_join_the_feeds_cannot_serve_is_invalid_where_the_text_says_why() -> None:
    no_time = compile_joins(feed("news", path=None), [record(1, CROSS)], [], {})
    outcome = no_time.outcomes["1"]
    assert (outcome.status, outcome.error_code, outcome.error_line, outcome.error_column) == (
        "invalid",
        "FR117",
        2,
        6,
    )
    assert "feed 'news' has no event time" in (outcome.error_message or "")
    unknown = compile_joins(feed("news"), [record(1, CROSS)], [], {})  # blogs: no such event-time feed
    assert "feed 'blogs' is not a feed with an event time" in (unknown.outcomes["1"].error_message or "")
    assert unknown.outcomes["1"].error_column == 31
    short = compile_joins(
        feed("news", window=timedelta(hours=1)), [record(1, CROSS)], [], {"blogs": feed("blogs")}
    )
    assert short.outcomes["1"].error_code == "FR117" and short.outcomes["1"].error_line == 3
    assert "longer than feed 'news''s max_join_window" in (short.outcomes["1"].error_message or "")
    assert not short.joins.plans


def test_a_feed_whose_event_time_path_the_router_cannot_read_refuses_its_joins_not_the_build() -> None:
    """lxml compiles ``//@date``, but the router reads no time with it: the join subscriptions on
    that feed are invalid where their binding names it, the build goes on (it raised before, for
    the whole feed), and the feed computes no clock."""
    for path in ("//@date", "//item//@date", "//text()"):
        found = compile_joins(feed("news", path=path), [record(1, CROSS)], [], {"blogs": feed("blogs")})
        outcome = found.outcomes["1"]
        assert (outcome.status, outcome.error_code, outcome.error_line) == ("invalid", "FR117", 2), path
        assert "is not a path the router reads an event time with" in (outcome.error_message or "")
        assert found.joins.clock is None and not found.joins.plans
        other = compile_joins(
            feed("blogs"), [], [("news", record(1, CROSS))], {"news": feed("news", path=path)}
        )
        assert not other.joins.blocks  # the join is refused: blogs computes no side of it either


def test_a_text_that_does_not_parse_is_left_to_the_router_to_report() -> None:
    broken = CROSS.replace("return", "retrun")
    found = compile_joins(feed("news"), [record(1, broken)], [], {"blogs": feed("blogs")})
    assert found.join_ids == frozenset() and found.outcomes == {}


def test_a_join_looks_back_by_the_longest_lateness_of_the_feeds_it_reads() -> None:
    """A partner from a feed that allows more lateness may have arrived later than its time: the
    join stage reads that much further back."""
    news = feed("news")
    blogs = FeedConfig(
        "blogs",
        "s3://in/blogs",
        "{prefix}/{date}/{hour}/",
        event_time_path="//t",
        allowed_lateness=timedelta(hours=6),
    )
    found = compile_joins(news, [record(1, CROSS)], [], {"blogs": blogs})
    (plan,) = found.joins.plans.values()
    assert plan.lateness == timedelta(hours=6)
    assert plan.reach(timedelta(hours=1)) == 8  # the 2 h window and blogs' 6 h


def test_a_join_whose_compiling_fails_is_its_own_outcome_and_the_build_goes_on(monkeypatch: Any) -> None:
    """A bug of ours on one join subscription's text (here: compiling it raises) makes that
    subscription invalid with FR300, logged; the feed's other joins and the joins of other feeds
    whose blocks it computes are compiled as before."""
    from feedrouter.join import plan as join_plan

    real = join_plan.compile_join

    def failing(sid: str, *args: Any) -> Any:
        if sid in ("2", "blogs/3"):
            raise KeyError("")
        return real(sid, *args)

    monkeypatch.setattr(join_plan, "compile_join", failing)
    news, blogs = feed("news"), feed("blogs")
    foreign = [("blogs", record(3, CROSS.replace('fr:stream("blogs")', 'fr:stream("news")')))]
    found = compile_joins(news, [record(1, CROSS), record(2, CROSS)], foreign, {"blogs": blogs})
    assert found.outcomes["1"].status == "valid"
    problem = found.outcomes["2"]
    assert problem.status == "invalid" and problem.error_code == "FR300"
    assert "internal error while compiling this join subscription (KeyError" in (problem.error_message or "")
    assert set(found.joins.plans) == {"1"}
