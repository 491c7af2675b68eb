"""Join limits on feeds (issue 16): what one join subscription may receive in an hour.

``feeds`` gains ``max_join_pairs`` (the qualifying pairs one join subscription of the feed may have
in an hour; past them the hour is withheld, FR313) and ``max_join_result_bytes`` (the bytes of
results its hour may hold, FR313 past them). Both were constants of the join stage; both are
bounded (1,000,000 pairs and 256 MiB: a stage holds a few subscriptions' hours at once).

A plan carries them, so ``sql/0009_join_limits_tracking.sql`` replaces ``track_feeds`` with one that
bumps the feed's catalog version when either changes; the downgrade runs
``sql/0007_join_tracking.sql`` again, which puts back revision 0007's (and 0008's) functions.

Mirrors feedrouter.catalog.models (``Feed.max_join_pairs``, ``Feed.max_join_result_bytes``) as of
this revision.

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-07
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
SQL = Path(__file__).resolve().parents[2] / "sql"
# Frozen copies of the checks and defaults of feedrouter.catalog.models at this revision
# (feedrouter.limits: 100,000 pairs, 64 MiB; at most 1,000,000 pairs and 256 MiB).
CHECKS = {
    "max_join_pairs": "max_join_pairs BETWEEN 1 AND 1000000",
    "max_join_result_bytes": "max_join_result_bytes BETWEEN 1 AND 268435456",
}
DEFAULTS = {"max_join_pairs": "100000", "max_join_result_bytes": "67108864"}


def upgrade() -> None:
    for name, default in DEFAULTS.items():
        op.add_column(
            "feeds", sa.Column(name, sa.BigInteger(), server_default=default, nullable=False), schema=SCHEMA
        )
    for name, check in CHECKS.items():
        op.create_check_constraint(op.f(f"ck_feeds_{name}"), "feeds", check, schema=SCHEMA)
    op.execute((SQL / "0009_join_limits_tracking.sql").read_text(encoding="utf-8"))


def downgrade() -> None:
    op.execute((SQL / "0007_join_tracking.sql").read_text(encoding="utf-8"))
    for name in CHECKS:
        op.drop_constraint(op.f(f"ck_feeds_{name}"), "feeds", schema=SCHEMA)
    for name in reversed(list(DEFAULTS)):
        op.drop_column("feeds", name, schema=SCHEMA)
