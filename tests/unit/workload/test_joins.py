"""Generated feeds and join subscriptions: deterministic, well formed, shaped by their knobs."""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from lxml import etree

from feedrouter.join.clock import parse_event_time
from feedrouter.lang import parse
from feedrouter.lang.ast import AttributeTest, JoinFlwr, RelPath, TemporalKind
from feedrouter.lang.windows import parse_window
from feedrouter.workload.joins import (
    LEAVES,
    MOST_JOINS,
    GeneratedMessage,
    Vocabulary,
    generate_feed_hours,
    generate_join_subscriptions,
)

FEEDS = ("news", "blogs", "wire")
START = datetime(2024, 5, 1, 8, tzinfo=timezone.utc)


def messages(
    seed: int = 7,
    *,
    lateness: timedelta = timedelta(hours=1),
    broken: float = 0.02,
    vocabulary: Vocabulary | None = None,
) -> list[tuple[datetime, GeneratedMessage]]:
    """Every message of 2 feeds x 3 hours x 200 items, with the hour it arrived in."""
    hours = generate_feed_hours(
        seed=seed,
        feeds=("news", "blogs"),
        hours=3,
        items_per_hour=200,
        lateness=lateness,
        broken=broken,
        vocabulary=vocabulary or Vocabulary(),
    )
    return [(batch.hour, m) for batches in hours.values() for batch in batches for m in batch.messages]


def joins_of(text: str) -> JoinFlwr:
    body = parse(text).body
    assert isinstance(body, JoinFlwr), text
    return body


def leaf(path: RelPath) -> str:
    if isinstance(path.tail, AttributeTest):
        return "@" + path.tail.name.local
    name = path.steps[-1].name
    assert name is not None and len(path.steps) == 1 and path.tail is None
    return name.local


# -- documents -------------------------------------------------------------------------------------


def test_feed_hours_are_deterministic_per_seed() -> None:
    assert messages(seed=3) == messages(seed=3)
    assert messages(seed=3) != messages(seed=4)


def test_a_feed_depends_only_on_the_seed_and_its_name() -> None:
    alone = generate_feed_hours(seed=5, feeds=("news",))
    together = generate_feed_hours(seed=5, feeds=("blogs", "news"))
    assert alone["news"] == together["news"]
    assert together["news"] != together["blogs"]


def test_hours_are_consecutive_and_keys_sorted() -> None:
    hours = generate_feed_hours(seed=1, feeds=FEEDS, hours=4, items_per_hour=12, start=START)
    assert list(hours) == list(FEEDS)
    for batches in hours.values():
        assert [batch.hour for batch in batches] == [START + timedelta(hours=h) for h in range(4)]
        for batch in batches:
            keys = [m.key for m in batch.messages]
            assert keys == sorted(keys) and len(set(keys)) == 12
            assert keys[3] == "item-000003.xml"


def test_documents_are_items_whose_pubdate_gives_the_event_time() -> None:
    for _, message in messages():
        item = etree.fromstring(message.data)
        assert item.tag == "item"
        tags = {"title", "link", "author", "category", "ticker", "guid", "pubDate"}
        assert {child.tag for child in item} <= tags
        assert len(item.findall("category")) <= 2
        assert len(item.findall("title")) == len(item.findall("link")) == len(item.findall("guid")) == 1
        assert parse_event_time(item.findtext("pubDate"), "rfc822") == message.event_time


def test_a_small_fraction_of_pubdates_is_broken() -> None:
    found = messages()
    broken = [m for _, m in found if m.event_time is None]
    assert 0.005 * len(found) <= len(broken) <= 0.05 * len(found)
    assert any(b"<pubDate>" not in m.data for m in broken) and any(b"<pubDate>" in m.data for m in broken)
    assert all(m.event_time is not None for _, m in messages(broken=0.0))


def test_some_messages_arrive_late_within_the_lateness() -> None:
    found = [(hour, m.event_time) for hour, m in messages() if m.event_time is not None]
    assert all(hour - timedelta(hours=1) <= time < hour + timedelta(hours=1) for hour, time in found)
    late = [hour - time for hour, time in found if time < hour]
    assert late and all(lateness > timedelta(0) for lateness in late)
    assert 0.3 < len(late) / len(found) < 0.7  # half of a two-hour span lies before the arrival hour


def test_no_message_is_late_without_lateness() -> None:
    found = [(hour, m.event_time) for hour, m in messages(lateness=timedelta(0)) if m.event_time]
    assert found and all(hour <= time < hour + timedelta(hours=1) for hour, time in found)


def test_values_come_from_the_vocabulary_and_overlap() -> None:
    vocabulary = Vocabulary(authors=5, titles=12, categories=3)
    items = [etree.fromstring(m.data) for _, m in messages(vocabulary=vocabulary)]
    authors = Counter(item.findtext("author") for item in items if item.find("author") is not None)
    assert set(authors) == {vocabulary.author(rank) for rank in range(5)}
    assert authors.most_common(1)[0][0] == vocabulary.author(0)  # Zipf: the first rank is the most common
    categories = {c.text for item in items for c in item.findall("category")}
    assert categories == {vocabulary.category(rank) for rank in range(3)}
    titles = {item.findtext("title") for item in items}
    assert titles & categories  # $b/category = $a/title can match
    assert any(item.findtext("guid") == item.findtext("link") for item in items)
    assert any(item.get("lang") for item in items) and any(item.get("lang") is None for item in items)


def test_feed_hours_refuse_bad_arguments() -> None:
    with pytest.raises(ValueError, match="on the hour"):
        generate_feed_hours(seed=1, start=START + timedelta(minutes=5))
    with pytest.raises(ValueError, match="on the hour"):
        generate_feed_hours(seed=1, start=datetime(2024, 5, 1, 8))
    with pytest.raises(ValueError, match="negative"):
        generate_feed_hours(seed=1, lateness=timedelta(hours=-1))


# -- subscriptions ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def population() -> list[JoinFlwr]:
    texts = generate_join_subscriptions(2000, seed=11, feeds=FEEDS, own="news")
    return [joins_of(text) for text in texts]


def test_subscriptions_are_deterministic_per_seed() -> None:
    first = generate_join_subscriptions(50, seed=2, feeds=FEEDS, own="news")
    assert first == generate_join_subscriptions(50, seed=2, feeds=FEEDS, own="news")
    assert first != generate_join_subscriptions(50, seed=3, feeds=FEEDS, own="news")


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_text_parses_into_a_join(seed: int) -> None:
    for text in generate_join_subscriptions(2000, seed=seed, feeds=FEEDS, own="blogs", max_joins=MOST_JOINS):
        body = joins_of(text)
        assert body.left.feed == "" and body.right.feed in ("", "news", "wire")
        assert all(leaf(j.left) in LEAVES and leaf(j.right) in LEAVES for j in body.joins)


def test_the_cross_feed_fraction_follows_its_knob(population: list[JoinFlwr]) -> None:
    cross = sum(body.right.feed != "" for body in population) / len(population)
    assert 0.07 < cross < 0.13
    alone = generate_join_subscriptions(200, seed=1, feeds=("news",), own="news", cross_feed=1.0)
    assert all(joins_of(text).right.feed == "" for text in alone)
    everywhere = generate_join_subscriptions(200, seed=1, feeds=FEEDS, own="news", cross_feed=1.0)
    assert {joins_of(text).right.feed for text in everywhere} == {"blogs", "wire"}


def test_the_number_of_joins_is_zipf_skewed(population: list[JoinFlwr]) -> None:
    counts = Counter(len(body.joins) for body in population)
    assert set(counts) == {1, 2, 3, 4}
    assert counts[1] > counts[2] > counts[3] > counts[4]
    assert 0.42 < counts[1] / len(population) < 0.54  # 1 / H(4) = 0.48
    flat_texts = generate_join_subscriptions(2000, seed=1, feeds=FEEDS, own="news", zipf=0.0)
    flat = Counter(len(joins_of(text).joins) for text in flat_texts)
    assert all(400 < flat[k] < 600 for k in (1, 2, 3, 4))


def test_both_temporal_kinds_and_orders_occur(population: list[JoinFlwr]) -> None:
    kinds = Counter(body.temporal.kind for body in population)
    assert 0.25 < kinds[TemporalKind.WITHIN] / len(population) < 0.35
    assert any(body.temporal.first == body.right.var for body in population)
    assert any(body.temporal.first == body.left.var for body in population)


def test_windows_lie_in_their_range(population: list[JoinFlwr]) -> None:
    windows = [body.temporal.window for body in population]
    assert all(timedelta(hours=1) <= parse_window(w) <= timedelta(hours=6) for w in windows)
    assert any(w.endswith("M") for w in windows) and any(w.endswith("H") for w in windows)
    wide = generate_join_subscriptions(
        100, seed=1, feeds=FEEDS, own="news", windows_hours=(24, 24), minutes=0
    )
    assert {joins_of(text).temporal.window for text in wide} == {"PT24H"}


def test_joins_share_leaves_and_cross_fields(population: list[JoinFlwr]) -> None:
    pairs = [[(leaf(j.left), leaf(j.right)) for j in body.joins] for body in population]
    assert any(left != right for joins in pairs for left, right in joins)
    shared = [joins for joins in pairs if len({left for left, _ in joins}) < len(joins)]
    assert shared and all(len(set(joins)) == len(joins) for joins in pairs)


def test_local_conditions_follow_their_knob(population: list[JoinFlwr]) -> None:
    with_local = sum(bool(body.left.where or body.right.where) for body in population) / len(population)
    assert 0.45 < with_local < 0.55
    none = generate_join_subscriptions(200, seed=1, feeds=FEEDS, own="news", local_conditions=0.0)
    assert not any(joins_of(text).left.where or joins_of(text).right.where for text in none)


def test_subscriptions_refuse_bad_arguments() -> None:
    with pytest.raises(ValueError, match="max_joins"):
        generate_join_subscriptions(1, seed=1, feeds=FEEDS, own="news", max_joins=0)
    with pytest.raises(ValueError, match="windows_hours"):
        generate_join_subscriptions(1, seed=1, feeds=FEEDS, own="news", windows_hours=(0, 2))
    with pytest.raises(ValueError, match="own feed"):
        generate_join_subscriptions(1, seed=1, feeds=FEEDS, own="elsewhere")


def test_saxon_finds_pairs_for_some_subscriptions() -> None:
    pytest.importorskip("saxonche")
    from tests.differential.join_oracle import SaxonJoinOracle

    hours = generate_feed_hours(seed=1, feeds=("news", "blogs"), hours=2, items_per_hour=30)
    feeds = {
        feed: [(m.data, m.event_time) for batch in batches for m in batch.messages]
        for feed, batches in hours.items()
    }
    texts = generate_join_subscriptions(12, seed=1, feeds=("news", "blogs"), own="news")
    with SaxonJoinOracle() as oracle:
        found = [bool(oracle.run(feeds, "news", text)) for text in texts]
    assert any(found) and not all(found)
