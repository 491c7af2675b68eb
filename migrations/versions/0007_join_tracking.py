"""Change tracking of join subscriptions (issue 16): changes that reach other feeds' plans.

Each side of a join subscription is a block in the plan of the feed it reads (``fr:stream()``: its
own feed; ``fr:stream("blogs")``: another), and its own feed's build checks it against the
event-time settings of the feeds it reads. Revision 0002's triggers bump only the feed a changed row
belongs to, so ``sql/0007_join_tracking.sql`` replaces three of their functions:

* ``track_subscriptions`` also bumps every feed with an event time when a changed subscription (old
  or new text) imports the stream module: which feeds a join reads takes the XQuery parser, and a
  join can read only feeds with an event time.
* ``track_feeds`` also bumps every feed with an active join subscription when an event-time feed's
  name, activity or event-time settings change (or it comes or goes), and every event-time feed when
  those change on a feed with an active join subscription.

* ``track_subscribers`` also bumps every feed with an event time when a changed subscriber (its name,
  prefix or activity; or its deletion) has a join subscription: only active subscribers' joins are
  compiled into the feeds they read.

``sql/0007_down.sql`` puts back revision 0006's functions. No table changes.

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-07
"""

from __future__ import annotations

from pathlib import Path

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

SQL = Path(__file__).resolve().parents[2] / "sql"


def upgrade() -> None:
    op.execute((SQL / "0007_join_tracking.sql").read_text(encoding="utf-8"))


def downgrade() -> None:
    op.execute((SQL / "0007_down.sql").read_text(encoding="utf-8"))
