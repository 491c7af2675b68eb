"""The per-feed catalog version: has anything a feed's plan is built from changed?

The triggers of ``sql/0002_change_tracking.sql`` keep a counter per feed in ``catalog_versions``,
bumped in the same transaction as the change, so a reader at one snapshot sees a version and the
rows it stands for together, whether the change came through the ORM or plain SQL. The counter is
keyed by feed name and never goes back, so a version is never reused.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from feedrouter.catalog.models import CatalogVersion, Feed


def catalog_version(conn: Connection, feed_name: str) -> int:
    """The current catalog version of one feed (0 when nothing was ever recorded for it)."""
    stored = conn.scalar(select(CatalogVersion.version).where(CatalogVersion.feed_name == feed_name))
    return int(stored or 0)


def catalog_versions(conn: Connection) -> dict[str, int]:
    """The catalog version of every feed, by name (what a change-watching DAG polls)."""
    names = conn.scalars(select(Feed.name).order_by(Feed.name)).all()
    rows = conn.execute(
        select(CatalogVersion.feed_name, CatalogVersion.version).where(CatalogVersion.feed_name.in_(names))
    )
    stored = {name: int(version) for name, version in rows}
    return {name: stored.get(name, 0) for name in names}
