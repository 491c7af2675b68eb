"""Per-feed Spark conf: ``feeds.spark_conf``.

A JSON object of Spark settings the feed's routing batches run with (``{"spark.executor.memory":
"4g"}``): keys start with ``spark.``, values are strings (Spark conf is text), the default is
``{}``. The Airflow route task layers it over the Spark connection's conf and under the
operator's ``spark_conf`` (docs/deploy.md). The CHECK uses a JSON path because Postgres does not
allow subqueries (``jsonb_each``) in a check.

Mirrors feedrouter.catalog.models (``Feed.spark_conf``) as of this revision.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
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


def downgrade() -> None:
    op.drop_constraint(op.f("ck_feeds_spark_conf"), "feeds", schema=SCHEMA)
    op.drop_column("feeds", "spark_conf", schema=SCHEMA)
