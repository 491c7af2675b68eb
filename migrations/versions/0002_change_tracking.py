"""Change tracking (statement-level triggers bumping catalog_versions, NOTIFY feedrouter_catalog,
updated_at maintenance) and the read-only views, from the SQL files in sql/.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[2] / "sql"


def _run(name: str) -> None:
    # One multi-statement string: plpgsql bodies contain semicolons, so no naive splitting.
    op.execute((SQL / name).read_text(encoding="utf-8"))


def upgrade() -> None:
    _run("0002_change_tracking.sql")
    _run("0002_views.sql")


def downgrade() -> None:
    _run("0002_down.sql")
