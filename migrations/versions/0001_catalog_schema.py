"""The catalog tables: dtds, feeds, subscribers, subscriptions, catalog_versions, plan_builds and the
run ledger (batches, deliveries), with their constraints.

Mirrors feedrouter.catalog.models as of this revision (tests/integration/test_migrations.py checks
that the models and the migrated schema agree). Postgres only.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

SCHEMA = "feedrouter"
# Frozen copies of the shapes in feedrouter.catalog.models at this revision.
NAME_RE = "^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$"
URI_RE = r"^(s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/[^/]+)*/?|file://(/[^/]+)+/?)$"
XML_NAME_RE = "^[A-Za-z_][A-Za-z0-9._:-]*$"
LAYOUT = "{prefix}/dt={date}/hour={hour}/"


def _id() -> sa.Column:
    return sa.Column("id", sa.BigInteger(), nullable=False)


def _ref(name: str, nullable: bool = False) -> sa.Column:
    return sa.Column(name, sa.BigInteger(), nullable=nullable)


def _now(name: str) -> sa.Column:
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False)


def _flag(name: str) -> sa.Column:
    return sa.Column(name, sa.Boolean(), server_default=sa.text("true"), nullable=False)


def _count(name: str) -> sa.Column:
    return sa.Column(name, sa.BigInteger(), server_default="0", nullable=False)


def _check(table: str, name: str, sql: str) -> sa.CheckConstraint:
    return sa.CheckConstraint(sql, name=op.f(f"ck_{table}_{name}"))


def _name_checks(table: str, limit: int, shape: bool) -> list[sa.CheckConstraint]:
    checks = [_check(table, "name_length", f"length(name) BETWEEN 1 AND {limit} AND name = trim(name)")]
    if shape:
        checks.append(_check(table, "name_shape", f"name ~ '{NAME_RE}'"))
    return checks


def _prefix_checks(table: str, column: str, nullable: bool = False) -> list[sa.CheckConstraint]:
    null = f"{column} IS NULL OR " if nullable else ""
    scheme = f"({column} LIKE 's3://%' OR {column} LIKE 'file:///%') AND {column} NOT LIKE '%..%'"
    shape = f"{column} ~ '{URI_RE}' AND {column} !~ '[[:cntrl:]]'"
    return [
        _check(table, f"{column}_scheme", f"{null}({scheme})"),
        _check(table, f"{column}_shape", f"{null}({shape})"),
    ]


def _fk(table: str, column: str, target: str, ondelete: str | None = None) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{SCHEMA}.{target}.id"], name=op.f(f"fk_{table}_{column}_{target}"), ondelete=ondelete
    )


def _keys(table: str, *unique: str, name: str | None = None) -> list[sa.Constraint]:
    keys: list[sa.Constraint] = [sa.PrimaryKeyConstraint("id", name=op.f(f"pk_{table}"))]
    if unique:
        keys.append(sa.UniqueConstraint(*unique, name=op.f(name or f"uq_{table}_{'_'.join(unique)}")))
    return keys


def _index(table: str, column: str) -> None:
    op.create_index(op.f(f"ix_{table}_{column}"), table, [column], unique=False, schema=SCHEMA)


def upgrade() -> None:
    op.create_table(
        "catalog_versions",
        sa.Column("feed_name", sa.Text(), nullable=False),
        sa.Column("version", sa.BigInteger(), server_default="0", nullable=False),
        _now("changed_at"),
        sa.PrimaryKeyConstraint("feed_name", name=op.f("pk_catalog_versions")),
        schema=SCHEMA,
    )
    op.create_table(
        "dtds",
        _id(),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("root_element", sa.Text(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        _now("created_at"),
        _now("updated_at"),
        *_name_checks("dtds", 200, shape=False),
        *_keys("dtds", "name"),
        schema=SCHEMA,
    )
    op.create_table(
        "subscribers",
        _id(),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("output_prefix", sa.Text(), nullable=False),
        _flag("active"),
        _now("created_at"),
        _now("updated_at"),
        *_name_checks("subscribers", 128, shape=True),
        *_prefix_checks("subscribers", "output_prefix"),
        *_keys("subscribers", "name"),
        schema=SCHEMA,
    )
    op.create_table(
        "feeds",
        _id(),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("input_prefix", sa.Text(), nullable=False),
        sa.Column("layout", sa.Text(), server_default=LAYOUT, nullable=False),
        sa.Column("record_element", sa.Text(), nullable=True),
        sa.Column("quarantine_prefix", sa.Text(), nullable=True),
        _ref("dtd_id", nullable=True),
        _flag("active"),
        _now("created_at"),
        _now("updated_at"),
        *_name_checks("feeds", 128, shape=True),
        *_prefix_checks("feeds", "input_prefix"),
        *_prefix_checks("feeds", "quarantine_prefix", nullable=True),
        _check(
            "feeds",
            "layout_shape",
            "layout LIKE '{prefix}%' AND layout LIKE '%{hour}%' AND layout NOT LIKE '%..%'",
        ),
        _check(
            "feeds", "record_element_shape", f"record_element IS NULL OR record_element ~ '{XML_NAME_RE}'"
        ),
        _fk("feeds", "dtd_id", "dtds", ondelete="RESTRICT"),
        *_keys("feeds", "name"),
        schema=SCHEMA,
    )
    _index("feeds", "dtd_id")
    op.create_table(
        "subscriptions",
        _id(),
        _ref("subscriber_id"),
        _ref("feed_id"),
        sa.Column("name", sa.Text(), nullable=False),
        sa.Column("query", sa.Text(), nullable=False),
        _flag("active"),
        sa.Column("status", sa.String(length=16), server_default="pending", nullable=False),
        sa.Column("error_code", sa.String(length=8), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("error_line", sa.Integer(), nullable=True),
        sa.Column("error_column", sa.Integer(), nullable=True),
        sa.Column("plan_text", sa.Text(), nullable=True),
        _now("created_at"),
        _now("updated_at"),
        *_name_checks("subscriptions", 200, shape=False),
        _check("subscriptions", "status", "status IN ('pending', 'valid', 'invalid', 'never-matches')"),
        _check("subscriptions", "invalid_has_error", "status <> 'invalid' OR error_message IS NOT NULL"),
        _check("subscriptions", "error_line", "error_line IS NULL OR error_line > 0"),
        _check("subscriptions", "error_column", "error_column IS NULL OR error_column > 0"),
        _fk("subscriptions", "subscriber_id", "subscribers", ondelete="CASCADE"),
        _fk("subscriptions", "feed_id", "feeds", ondelete="CASCADE"),
        *_keys("subscriptions", "subscriber_id", "name"),
        schema=SCHEMA,
    )
    _index("subscriptions", "feed_id")
    op.create_table(
        "plan_builds",
        _id(),
        _ref("feed_id"),
        sa.Column("catalog_version", sa.BigInteger(), nullable=False),
        sa.Column("format_version", sa.Integer(), nullable=False),
        sa.Column("feedrouter_version", sa.Text(), nullable=False),
        sa.Column("strategy", sa.String(length=8), nullable=False),
        sa.Column("artifact_uri", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=False),
        sa.Column("artifact_bytes", sa.BigInteger(), nullable=False),
        sa.Column("subscriptions", sa.Integer(), nullable=False),
        sa.Column("valid_count", sa.Integer(), nullable=False),
        sa.Column("invalid_count", sa.Integer(), nullable=False),
        sa.Column("never_matches_count", sa.Integer(), nullable=False),
        sa.Column("duration_seconds", sa.Float(), nullable=False),
        _now("built_at"),
        _check("plan_builds", "digest_length", "length(digest) = 64"),
        _check("plan_builds", "digest_hex", "digest ~ '^[0-9a-f]{64}$'"),
        _check(
            "plan_builds",
            "counts",
            "subscriptions >= 0 AND valid_count >= 0 AND invalid_count >= 0 AND never_matches_count >= 0"
            " AND artifact_bytes >= 0 AND duration_seconds >= 0",
        ),
        _fk("plan_builds", "feed_id", "feeds", ondelete="CASCADE"),
        *_keys(
            "plan_builds",
            "feed_id",
            "catalog_version",
            "format_version",
            "feedrouter_version",
            name="uq_plan_builds_feed_version",
        ),
        schema=SCHEMA,
    )
    _index("plan_builds", "feed_id")
    op.create_table(
        "batches",
        _id(),
        _ref("feed_id"),
        sa.Column("hour", sa.DateTime(timezone=True), nullable=False),
        _ref("plan_build_id", nullable=True),
        sa.Column("status", sa.String(length=16), server_default="pending", nullable=False),
        _count("documents"),
        _count("bytes"),
        _count("quarantined"),
        sa.Column("error_message", sa.Text(), nullable=True),
        _now("started_at"),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        _check("batches", "status", "status IN ('pending', 'running', 'succeeded', 'empty', 'failed')"),
        _check("batches", "counts", "documents >= 0 AND bytes >= 0 AND quarantined >= 0"),
        _check("batches", "finished_after_start", "finished_at IS NULL OR finished_at >= started_at"),
        _check(
            "batches", "whole_hour", "(hour AT TIME ZONE 'UTC') = date_trunc('hour', hour AT TIME ZONE 'UTC')"
        ),
        _fk("batches", "feed_id", "feeds", ondelete="CASCADE"),
        _fk("batches", "plan_build_id", "plan_builds"),
        *_keys("batches", "feed_id", "hour", "plan_build_id"),
        schema=SCHEMA,
    )
    _index("batches", "plan_build_id")
    op.create_table(
        "deliveries",
        _id(),
        _ref("batch_id"),
        _ref("subscription_id", nullable=True),
        sa.Column("subscriber_name", sa.Text(), nullable=False),
        sa.Column("subscription_name", sa.Text(), nullable=False),
        sa.Column("delivery_version", sa.Integer(), server_default="1", nullable=False),
        sa.Column("object_keys", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        _count("result_count"),
        _count("bytes"),
        sa.Column("digest", sa.String(length=64), nullable=True),
        _now("delivered_at"),
        _check("deliveries", "counts", "result_count >= 0 AND bytes >= 0 AND delivery_version >= 1"),
        _check("deliveries", "digest_length", "digest IS NULL OR length(digest) = 64"),
        _fk("deliveries", "batch_id", "batches", ondelete="CASCADE"),
        _fk("deliveries", "subscription_id", "subscriptions", ondelete="SET NULL"),
        *_keys("deliveries", "batch_id", "subscription_id", "delivery_version"),
        schema=SCHEMA,
    )
    _index("deliveries", "subscription_id")


def downgrade() -> None:
    for table in (
        "deliveries",
        "batches",
        "plan_builds",
        "subscriptions",
        "feeds",
        "subscribers",
        "dtds",
        "catalog_versions",
    ):
        op.drop_table(table, schema=SCHEMA)
