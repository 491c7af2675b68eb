"""The per-feed catalog version: has anything a feed's plan is built from changed?

On Postgres the triggers of ``sql/0002_change_tracking.sql`` keep a counter per feed in
``catalog_versions`` (bumped in the same transaction as the change, so a reader at one snapshot sees
a version and the rows it stands for together). The embedded SQLite catalog has no triggers: its
version is a fingerprint of the rows a build reads (feed, DTD, active subscriptions and their
subscribers), so it changes exactly when one of them does, whether the change came through the ORM
or plain SQL. Fingerprints are compared for equality only; they do not grow.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable

from sqlalchemy import Connection, Select, select

from feedrouter.catalog.database import is_postgres
from feedrouter.catalog.models import CatalogVersion, Dtd, Feed, Subscriber, Subscription


def catalog_version(conn: Connection, feed_name: str) -> int:
    """The current catalog version of one feed (0 when nothing was ever recorded for it)."""
    if is_postgres(conn):
        stored = conn.scalar(select(CatalogVersion.version).where(CatalogVersion.feed_name == feed_name))
        return int(stored or 0)
    return fingerprint(conn, feed_name)


def catalog_versions(conn: Connection) -> dict[str, int]:
    """The catalog version of every feed, by name (what a change-watching DAG polls)."""
    names = conn.scalars(select(Feed.name).order_by(Feed.name)).all()
    if not is_postgres(conn):
        return {name: fingerprint(conn, name) for name in names}
    rows = conn.execute(
        select(CatalogVersion.feed_name, CatalogVersion.version).where(CatalogVersion.feed_name.in_(names))
    )
    stored = {name: int(version) for name, version in rows}
    return {name: stored.get(name, 0) for name in names}


def fingerprint(conn: Connection, feed_name: str) -> int:
    """A 60-bit digest of everything a plan build of the feed reads; 0 for an unknown feed."""
    feed = conn.execute(
        select(
            Feed.id,
            Feed.name,
            Feed.input_prefix,
            Feed.layout,
            Feed.record_element,
            Feed.quarantine_prefix,
            Feed.active,
            Feed.max_result_bytes,
            Feed.max_document_result_bytes,
            Feed.invalid_documents,
            Dtd.name,
            Dtd.root_element,
            Dtd.text,
        )
        .outerjoin(Dtd, Dtd.id == Feed.dtd_id)
        .where(Feed.name == feed_name)
    ).first()
    if feed is None:
        return 0
    digest = hashlib.sha256(_line(feed[1:]))
    for row in conn.execute(_subscription_rows(feed.id)):
        digest.update(_line(row))
    # 15 hex digits keep the value a positive BIGINT on every backend.
    return int(digest.hexdigest()[:15], 16) or 1


def _subscription_rows(feed_id: int) -> Select[int, str, str, bool, int, str, str, bool]:
    return (
        select(
            Subscription.id,
            Subscription.name,
            Subscription.query,
            Subscription.active,
            Subscriber.id,
            Subscriber.name,
            Subscriber.output_prefix,
            Subscriber.active,
        )
        .join(Subscriber, Subscriber.id == Subscription.subscriber_id)
        .where(Subscription.feed_id == feed_id)
        .order_by(Subscription.id)
    )


def _line(values: Iterable[object]) -> bytes:
    # JSON keeps field boundaries unambiguous (no "ab"+"c" == "a"+"bc") and handles None.
    return json.dumps(list(values), default=str).encode("utf-8") + b"\n"
