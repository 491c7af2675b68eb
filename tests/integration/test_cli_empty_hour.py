"""``feedrouter route-batch`` on an empty hour names the prefix it listed, read from the catalog when
the batch's report does not carry it (issue 17, item 6)."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest
from sqlalchemy import Engine, text

from feedrouter.spark.batch import BatchReport
from feedrouter.spark.cli import _listed_prefix
from tests.integration.rows import add_feed

pytestmark = pytest.mark.integration

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)


def test_the_listed_prefix_is_the_feeds_layout_applied_to_the_hour(catalog: Engine) -> None:
    with catalog.begin() as conn:
        add_feed(conn, "news")
        add_feed(conn, "sports")
        conn.execute(
            text("UPDATE feedrouter.feeds SET layout = '{prefix}/{date}/{hour}/' WHERE name = 'sports'")
        )
    report = BatchReport(1, "sports", "2026-11-22T16", "empty", 1, 0, 0, 0, 0, 0, 0, 0, 0.0)
    assert _listed_prefix(catalog, report, HOUR) == "s3://input-bucket/sports/2026-11-22/16/"
    news = BatchReport(2, "news", "2026-11-22T16", "empty", 1, 0, 0, 0, 0, 0, 0, 0, 0.0)
    assert _listed_prefix(catalog, news, HOUR) == "s3://input-bucket/news/dt=2026-11-22/hour=16/"
