"""Event time on feeds, for join subscriptions (issue 16).

``feeds`` gains ``event_time_path`` (an absolute XPath to each message's event-time value; NULL: the
feed has no event time and takes no join subscriptions), ``event_time_format`` (how the value is
written), ``max_join_window`` (the longest window a join subscription on the feed may use) and
``allowed_lateness`` (how long after its event time a message may still arrive and join).

They change what a plan build produces (the joins it accepts and the history a join stage reads), so
``sql/0006_feed_event_time_tracking.sql`` replaces ``track_feeds`` with one that bumps the feed's
catalog version when any of them changes; ``sql/0006_down.sql`` puts back revision 0005's.

Mirrors feedrouter.catalog.models (``Feed.event_time_*``, ``max_join_window``, ``allowed_lateness``)
as of this revision.

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-07
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
SQL = Path(__file__).resolve().parents[2] / "sql"
# Frozen copies of the checks of feedrouter.catalog.models at this revision: the formats are
# feedrouter.join.clock.FORMATS, the bounds feedrouter.limits (512 characters, 7 days).
CHECKS = {
    "event_time_path": (
        "event_time_path IS NULL OR (length(event_time_path) BETWEEN 1 AND 512"
        " AND event_time_path ~ '^/' AND event_time_path !~ '[[:cntrl:]]')"
    ),
    "event_time_format": "event_time_format IN ('iso8601', 'rfc822', 'epoch-seconds')",
    "max_join_window": "max_join_window > interval '0 hours' AND max_join_window <= interval '168 hours'",
    "allowed_lateness": "allowed_lateness >= interval '0 hours' AND allowed_lateness <= interval '168 hours'",
}
WINDOW_DEFAULT = sa.text("interval '24 hours'")
LATENESS_DEFAULT = sa.text("interval '1 hours'")


def upgrade() -> None:
    for column in (
        sa.Column("event_time_path", sa.Text(), nullable=True),
        sa.Column("event_time_format", sa.Text(), server_default="iso8601", nullable=False),
        sa.Column("max_join_window", sa.Interval(), server_default=WINDOW_DEFAULT, nullable=False),
        sa.Column("allowed_lateness", sa.Interval(), server_default=LATENESS_DEFAULT, nullable=False),
    ):
        op.add_column("feeds", column, schema=SCHEMA)
    for name, check in CHECKS.items():
        op.create_check_constraint(op.f(f"ck_feeds_{name}"), "feeds", check, schema=SCHEMA)
    op.execute((SQL / "0006_feed_event_time_tracking.sql").read_text(encoding="utf-8"))


def downgrade() -> None:
    op.execute((SQL / "0006_down.sql").read_text(encoding="utf-8"))
    for name in CHECKS:
        op.drop_constraint(op.f(f"ck_feeds_{name}"), "feeds", schema=SCHEMA)
    for column in ("allowed_lateness", "max_join_window", "event_time_format", "event_time_path"):
        op.drop_column("feeds", column, schema=SCHEMA)
