"""Read-only questions the DAGs, the CLI and the UI page ask the catalog (Core, both backends).

Nothing here writes: the plan DAG asks which feeds are out of date, the route DAG which feeds to
route, the UI page what each feed's builds, problems and batches are. Results are plain
JSON-ready dicts, so they travel through XCom and HTTP unchanged.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Select, case, func, select

import feedrouter
from feedrouter.catalog.artifact import FORMAT_VERSION
from feedrouter.catalog.models import Batch, Delivery, Feed, PlanBuild
from feedrouter.catalog.repository import latest_builds, require_feed, subscription_problems
from feedrouter.catalog.version import catalog_versions
from feedrouter.hours import batch_prefix as layout_prefix

if TYPE_CHECKING:
    from typing import Unpack

#: Larger integers lose precision as JavaScript numbers, so the JSON carries them as strings.
JS_SAFE_INTEGER = 2**53 - 1


def active_feeds(conn: Connection) -> list[str]:
    """Names of the active feeds, sorted."""
    return list(conn.scalars(select(Feed.name).where(Feed.active).order_by(Feed.name)))


def batch_prefix(conn: Connection, feed: str, hour: datetime) -> str:
    """The URI prefix one hour of a feed arrives under (the feed's prefix and layout).

    Raises:
        CatalogError: [FR405] no feed of that name.
    """
    config = require_feed(conn, feed).config
    return layout_prefix(config.layout, config.input_prefix, hour)


def built_versions(conn: Connection) -> dict[str, int]:
    """The catalog version of each feed's latest plan build (feeds without a build are absent)."""
    return {name: version for name, (version, _current) in build_states(conn).items()}


def build_states(conn: Connection) -> dict[str, tuple[int, bool]]:
    """Per feed with a plan build: its latest build's catalog version, and whether that build is
    loadable by this release (same artifact format and feedrouter version)."""
    release = (FORMAT_VERSION, feedrouter.__version__)
    return {
        name: (build.catalog_version, build.release == release) for name, build in latest_builds(conn).items()
    }


def stale_feeds(conn: Connection) -> dict[str, int]:
    """Active feeds whose catalog version moved since their latest plan build (or that have none,
    or whose build an upgraded feedrouter cannot load), with their current version: exactly the
    feeds a plan build would change."""
    current = catalog_versions(conn)
    built = build_states(conn)
    active = set(active_feeds(conn))
    return {
        name: version
        for name, version in current.items()
        if name in active and built.get(name) != (version, True)
    }


def feed_overview(conn: Connection, *, builds: int = 5, batches: int = 24) -> list[dict[str, Any]]:
    """Per feed, what the UI page shows: versions, recent plan builds, problems, recent batches."""
    versions = catalog_versions(conn)
    built = built_versions(conn)
    feeds = conn.execute(select(Feed.id, Feed.name, Feed.active, Feed.input_prefix).order_by(Feed.name))
    return [
        {
            "feed": feed.name,
            "active": bool(feed.active),
            "input_prefix": feed.input_prefix,
            "catalog_version": _json_value(versions.get(feed.name, 0)),
            "up_to_date": feed.name in built and built[feed.name] == versions.get(feed.name, 0),
            "plan_builds": recent_builds(conn, feed.id, builds),
            "problems": [_jsonable(row) for row in subscription_problems(conn, feed.name)],
            "batches": recent_batches(conn, feed.id, batches),
        }
        for feed in feeds
    ]


def recent_builds(conn: Connection, feed_id: int, limit: int) -> list[dict[str, Any]]:
    """The feed's latest plan builds, newest first."""
    rows = conn.execute(
        select(
            PlanBuild.id,
            PlanBuild.catalog_version,
            PlanBuild.built_at,
            PlanBuild.strategy,
            PlanBuild.subscriptions,
            PlanBuild.valid_count.label("valid"),
            PlanBuild.invalid_count.label("invalid"),
            PlanBuild.never_matches_count.label("never_matches"),
            PlanBuild.artifact_bytes,
            PlanBuild.duration_seconds,
        )
        .where(PlanBuild.feed_id == feed_id)
        .order_by(PlanBuild.built_at.desc(), PlanBuild.id.desc())
        .limit(limit)
    )
    return [_jsonable(row._mapping) for row in rows]


def recent_batches(conn: Connection, feed_id: int, limit: int) -> list[dict[str, Any]]:
    """The feed's latest batches (by hour), newest first, with their delivery counts."""
    query = _batches(feed_id).order_by(Batch.hour.desc(), Batch.id.desc()).limit(limit)
    return [_jsonable(row._mapping) for row in conn.execute(query)]


def batch_ledger(conn: Connection, feed: str, hour: datetime) -> list[dict[str, Any]]:
    """The ledger rows of one feed and hour (one per plan build it was routed with), newest first."""
    feed_id = require_feed(conn, feed).id
    query = _batches(feed_id).where(Batch.hour >= hour, Batch.hour < hour + timedelta(hours=1))
    return [_jsonable(row._mapping) for row in conn.execute(query.order_by(Batch.id.desc()))]


def batch_deliveries(conn: Connection, batch_id: int) -> list[dict[str, Any]]:
    """What one batch delivered: per subscription, its names, result count and object URIs."""
    rows = conn.execute(
        select(
            Delivery.subscriber_name,
            Delivery.subscription_name,
            Delivery.result_count,
            Delivery.object_keys,
        ).where(Delivery.batch_id == batch_id)
    )
    return [_jsonable(row._mapping) for row in rows]


def _batches(feed_id: int) -> Select[Unpack[tuple[Any, ...]]]:
    """Batches of a feed with the number of deliveries, results and bytes each one recorded."""
    delivered = (
        select(
            Delivery.batch_id,
            func.count(Delivery.id).label("deliveries"),
            func.coalesce(func.sum(Delivery.result_count), 0).label("results"),
            func.coalesce(func.sum(Delivery.bytes), 0).label("delivered_bytes"),
            # Deliveries a subscriber's store refused (FR607): the next run of the hour retries them.
            func.coalesce(func.sum(case((Delivery.status == "failed", 1), else_=0)), 0).label("failed"),
        )
        .group_by(Delivery.batch_id)
        .subquery()
    )
    return (
        select(
            Batch.id,
            Batch.hour,
            Batch.status,
            Batch.plan_build_id,
            Batch.documents,
            Batch.bytes,
            Batch.quarantined,
            Batch.untimed,
            Batch.error_message,
            Batch.started_at,
            Batch.finished_at,
            func.coalesce(delivered.c.deliveries, 0).label("deliveries"),
            func.coalesce(delivered.c.results, 0).label("results"),
            func.coalesce(delivered.c.delivered_bytes, 0).label("delivered_bytes"),
            func.coalesce(delivered.c.failed, 0).label("failed_deliveries"),
        )
        .outerjoin(delivered, delivered.c.batch_id == Batch.id)
        .where(Batch.feed_id == feed_id)
    )


def _jsonable(row: Any) -> dict[str, Any]:
    return {key: _json_value(value) for key, value in dict(row).items()}


def _json_value(value: Any) -> Any:
    # Postgres returns SUM() of BIGINT as NUMERIC (Decimal); JSON wants plain numbers and strings.
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Decimal):
        value = int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > JS_SAFE_INTEGER:
        return str(value)  # a BIGINT past 2**53 would lose digits in JavaScript
    return value
