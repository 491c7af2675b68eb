"""The ledger of join subscriptions: withheld deliveries and messages left out of joins.

* ``deliveries.status`` may be ``withheld``: a join subscription whose pairs passed the cap for the
  hour gets no folder, and its row says why (``error_code`` FR313, required like a failure's);
* ``batches.untimed``: the messages of the hour that take part in no join (no usable event time:
  missing, unparsable, or beyond the feed's allowed lateness), counted when the plan has join blocks.

Mirrors feedrouter.catalog.models (``DELIVERY_STATUSES``, ``Batch.untimed``) as of this revision.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
# Frozen copies of the checks at this revision.
STATUS = "status IN ('delivered', 'failed', 'withheld')"
STATUS_BEFORE = "status IN ('delivered', 'failed')"
WITHHELD_HAS_ERROR = "status <> 'withheld' OR error_code IS NOT NULL"


def upgrade() -> None:
    op.drop_constraint(op.f("ck_deliveries_status"), "deliveries", schema=SCHEMA)
    op.create_check_constraint(op.f("ck_deliveries_status"), "deliveries", STATUS, schema=SCHEMA)
    op.create_check_constraint(
        op.f("ck_deliveries_withheld_has_error"), "deliveries", WITHHELD_HAS_ERROR, schema=SCHEMA
    )
    op.add_column(
        "batches", sa.Column("untimed", sa.BigInteger(), server_default="0", nullable=False), schema=SCHEMA
    )
    op.create_check_constraint(op.f("ck_batches_untimed"), "batches", "untimed >= 0", schema=SCHEMA)


def downgrade() -> None:
    op.drop_constraint(op.f("ck_batches_untimed"), "batches", schema=SCHEMA)
    op.drop_column("batches", "untimed", schema=SCHEMA)
    op.drop_constraint(op.f("ck_deliveries_withheld_has_error"), "deliveries", schema=SCHEMA)
    op.execute(f"DELETE FROM {SCHEMA}.deliveries WHERE status = 'withheld'")  # no place for them before
    op.drop_constraint(op.f("ck_deliveries_status"), "deliveries", schema=SCHEMA)
    op.create_check_constraint(op.f("ck_deliveries_status"), "deliveries", STATUS_BEFORE, schema=SCHEMA)
