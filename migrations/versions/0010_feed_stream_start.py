"""The first hour of each feed's stream (issue 16: join stages never wait for hours never routed).

``feeds`` gains ``stream_start`` (a whole hour, or NULL: the route start, ``FEEDROUTER_ROUTE_START``).
A join stage skips a feed's hours before it, as it skips the hours before the route start: a feed
added while feedrouter already routes, or made active again, is routed from then on, and a join
reading it waited for its earlier hours for ever (stalling the route DAG's runs).
``sql/0010_feed_stream_start.sql`` adds the trigger that records the hour on such an insert or
re-activation, unless the row gives one; a feed's existing rows keep NULL.

Mirrors feedrouter.catalog.models (``Feed.stream_start``) as of this revision.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
SQL = Path(__file__).resolve().parents[2] / "sql"
# A frozen copy of feedrouter.catalog.models.STREAM_START_CHECK at this revision.
CHECK = (
    "stream_start IS NULL"
    " OR (stream_start AT TIME ZONE 'UTC') = date_trunc('hour', stream_start AT TIME ZONE 'UTC')"
)


def upgrade() -> None:
    column = sa.Column("stream_start", sa.DateTime(timezone=True), nullable=True)
    op.add_column("feeds", column, schema=SCHEMA)
    op.create_check_constraint(op.f("ck_feeds_stream_start"), "feeds", CHECK, schema=SCHEMA)
    op.execute((SQL / "0010_feed_stream_start.sql").read_text(encoding="utf-8"))


def downgrade() -> None:
    op.execute(f"DROP TRIGGER start_feed_stream ON {SCHEMA}.feeds")
    op.execute(f"DROP FUNCTION {SCHEMA}.start_feed_stream()")
    op.drop_constraint(op.f("ck_feeds_stream_start"), "feeds", schema=SCHEMA)
    op.drop_column("feeds", "stream_start", schema=SCHEMA)
