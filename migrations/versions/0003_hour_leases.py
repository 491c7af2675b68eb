"""Hour leases and per-subscriber delivery outcomes.

* ``hour_leases``: one row per (feed, hour) a batch ran for. A run takes the lease in its own short
  transaction (a fresh fencing ``token``, an ``expires_at`` it keeps pushing forward while it runs)
  and the transaction that records its ledger checks the token is still its own and unexpired, so
  a run that lost its lease (connection loss, a stall) can never commit. Plain rows: the embedded
  SQLite catalog locks the same way.
* ``deliveries.status`` / ``error_code`` / ``error_message``: a delivery to one subscriber that the
  store refused is recorded as ``failed`` with its code and reason, while the other subscribers'
  deliveries of the batch are ``delivered``.

Mirrors feedrouter.catalog.models (``HourLease``, ``Delivery``) as of this revision. Postgres only.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"


def upgrade() -> None:
    op.create_table(
        "hour_leases",
        sa.Column("feed_id", sa.BigInteger(), nullable=False),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        sa.Column("token", sa.BigInteger(), nullable=False),
        sa.Column("holder", sa.Text(), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.CheckConstraint("token >= 1", name=op.f("ck_hour_leases_token")),
        sa.CheckConstraint(
            "(hour AT TIME ZONE 'UTC') = date_trunc('hour', hour AT TIME ZONE 'UTC')",
            name=op.f("ck_hour_leases_whole_hour"),
        ),
        sa.ForeignKeyConstraint(
            ["feed_id"],
            [f"{SCHEMA}.feeds.id"],
            name=op.f("fk_hour_leases_feed_id_feeds"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("feed_id", "hour", name=op.f("pk_hour_leases")),
        schema=SCHEMA,
    )
    op.add_column(
        "deliveries",
        sa.Column("status", sa.String(length=16), server_default="delivered", nullable=False),
        schema=SCHEMA,
    )
    op.add_column("deliveries", sa.Column("error_code", sa.String(length=8), nullable=True), schema=SCHEMA)
    op.add_column("deliveries", sa.Column("error_message", sa.Text(), nullable=True), schema=SCHEMA)
    op.create_check_constraint(
        op.f("ck_deliveries_status"), "deliveries", "status IN ('delivered', 'failed')", schema=SCHEMA
    )
    op.create_check_constraint(
        op.f("ck_deliveries_failed_has_error"),
        "deliveries",
        "status <> 'failed' OR error_code IS NOT NULL",
        schema=SCHEMA,
    )


def downgrade() -> None:
    op.drop_constraint(op.f("ck_deliveries_failed_has_error"), "deliveries", schema=SCHEMA)
    op.drop_constraint(op.f("ck_deliveries_status"), "deliveries", schema=SCHEMA)
    for column in ("error_message", "error_code", "status"):
        op.drop_column("deliveries", column, schema=SCHEMA)
    op.drop_table("hour_leases", schema=SCHEMA)
