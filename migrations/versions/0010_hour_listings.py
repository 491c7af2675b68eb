"""The feeds each hour's route run listed (issue 16: join stages never wait for hours no run routes).

``hour_listings`` holds, per hour, the feeds the route DAG's run of that hour listed to route (the
active feeds when its first task ran). A feed added or made active again later is not among them,
and that run never routes it for that hour: a join stage reading the feed skips such an hour
instead of waiting for its witnesses for ever (which held the route DAG's runs for days). An hour
no run has listed yet is waited for as before.

Mirrors feedrouter.catalog.models (``HourListing``) as of this revision.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-07
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
# A frozen copy of the check at this revision (as batches.hour's).
WHOLE_HOUR = "(hour AT TIME ZONE 'UTC') = date_trunc('hour', hour AT TIME ZONE 'UTC')"


def upgrade() -> None:
    op.create_table(
        "hour_listings",
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("feeds", postgresql.ARRAY(sa.Text()), nullable=False),
        sa.Column("listed_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.CheckConstraint(WHOLE_HOUR, name=op.f("ck_hour_listings_whole_hour")),
        sa.PrimaryKeyConstraint("hour", name=op.f("pk_hour_listings")),
        schema=SCHEMA,
    )


def downgrade() -> None:
    op.drop_table("hour_listings", schema=SCHEMA)
