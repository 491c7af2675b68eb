"""Per-feed Spark conf (``feeds.spark_conf``), and feed settings that count as catalog changes.

A JSON object of Spark settings the feed's routing batches run with (``{"spark.executor.memory":
"4g"}``): keys start with ``spark.``, values are strings (Spark conf is text), the default is
``{}``. The Airflow route task layers it over the Spark connection's conf and under the
operator's ``spark_conf`` (docs/deploy.md). The CHECK uses a JSON path because Postgres does not
allow subqueries (``jsonb_each``) in a check.

Revision 0004's feed settings (``max_result_bytes``, ``max_document_result_bytes``,
``invalid_documents``) go into every plan, but the change-tracking trigger of revision 0002 did not
look at them, so changing one did not bump the feed's catalog version and no new plan was built:
``sql/0005_feed_settings_tracking.sql`` replaces ``track_feeds`` with one that does.
``spark_conf`` is left out on purpose: it changes how a batch runs, not the plan.

Mirrors feedrouter.catalog.models (``Feed.spark_conf``) as of this revision.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
SQL = Path(__file__).resolve().parents[2] / "sql"
# A frozen copy of feedrouter.catalog.models.SPARK_CONF_CHECK at this revision.
SPARK_CONF_CHECK = (
    "jsonb_typeof(spark_conf) = 'object' AND NOT jsonb_path_exists(spark_conf, "
    "'$.keyvalue() ? (!(@.key starts with \"spark.\") || @.value.type() != \"string\")')"
)


def upgrade() -> None:
    op.add_column(
        "feeds",
        sa.Column(
            "spark_conf",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
        ),
        schema=SCHEMA,
    )
    op.create_check_constraint(op.f("ck_feeds_spark_conf"), "feeds", SPARK_CONF_CHECK, schema=SCHEMA)
    op.execute((SQL / "0005_feed_settings_tracking.sql").read_text(encoding="utf-8"))


def downgrade() -> None:
    op.execute((SQL / "0005_down.sql").read_text(encoding="utf-8"))
    op.drop_constraint(op.f("ck_feeds_spark_conf"), "feeds", schema=SCHEMA)
    op.drop_column("feeds", "spark_conf", schema=SCHEMA)
