"""Join subscriptions (issue 16) over a real feed against Saxon: the Guardian's stories of one day
(:mod:`tests.differential.real_feeds`), one story a message as a wire delivers it, in two feeds.

The hours are collected and joined out of order, and every hour's delivered pairs, in XQuery's
order, must equal Saxon's result for the same text over every message up to that hour.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from feedrouter.join.selections import MIN_SHARED
from tests.differential.join_oracle import SaxonJoinOracle
from tests.differential.join_pipeline import JoinPipeline, compare_with_saxon
from tests.differential.real_feeds import GUARDIAN_JOINS, guardian_feeds, guardian_stories

pytestmark = [pytest.mark.differential, pytest.mark.shared_data]


@pytest.fixture(scope="module")
def oracle() -> SaxonJoinOracle:
    return SaxonJoinOracle()


@pytest.mark.parametrize("min_shared", [MIN_SHARED, 1], ids=["blocks as written", "selections factored"])
def test_joins_over_real_guardian_stories_agree_with_saxon(
    oracle: SaxonJoinOracle, shared_data: Path, min_shared: int
) -> None:
    feeds, hours = guardian_feeds(shared_data)
    pipeline = JoinPipeline(GUARDIAN_JOINS, list(feeds), min_shared=min_shared)
    shuffled = random.Random(16).sample(hours, len(hours))
    for hour in shuffled:  # stage 1 in any order: stage 2 waits for the window's witnesses only
        for feed in feeds:
            pipeline.collect(feed, hour, feeds[feed][hour])
    delivered = {hour: pipeline.join(hour) for hour in reversed(shuffled)}
    counts = compare_with_saxon(oracle, pipeline, feeds, delivered)
    per_subscription = Counter(
        sid for hour in hours for sid, found in delivered[hour].items() for _ in found.pairs
    )
    # every rule meets real pairs, not only empty results
    assert all(per_subscription[sid] > 0 for sid in GUARDIAN_JOINS), per_subscription
    assert counts["pairs"] >= 50, counts


def test_the_stories_are_what_the_feed_holds(shared_data: Path) -> None:
    """The split keeps every story once, both feeds have stories, and the day spans many hours."""
    stories = guardian_stories(shared_data)
    keys = [key for by_hour in stories.values() for messages in by_hour.values() for key, _ in messages]
    assert len(keys) == len(set(keys)) == 55
    assert all(stories[feed] for feed in ("us", "world"))
    assert len({hour for by_hour in stories.values() for hour in by_hour}) >= 12
    assert max(hour for by_hour in stories.values() for hour in by_hour) - min(
        hour for by_hour in stories.values() for hour in by_hour
    ) >= timedelta(hours=12)
