"""The run ledger: ``batches`` and ``deliveries`` rows, written in one transaction after the objects.

* One ``batches`` row per (feed, hour, plan build): a re-run with the same build updates it.
* One ``deliveries`` row per served subscription, matching or not: a subscription without results
  has a row with ``result_count`` 0 and no objects, so "nothing for you this hour" is recorded,
  not guessed from a missing folder. An empty hour is a batch with status ``empty`` and no rows.
* Versions: per (feed, hour, subscriber, subscription), each new delivery gets the next
  ``delivery_version``. Re-running a batch that delivers the same content adds nothing; a re-run
  after a plan change (a new batch) or with changed input records the next version.

Core SQLAlchemy on both backends (Postgres, the embedded SQLite catalog).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, func, insert, select, update

from feedrouter.catalog.database import is_postgres
from feedrouter.catalog.models import Batch, Delivery, Subscription
from feedrouter.spark.errors import BatchBusyError

NameKey = tuple[str, str]  # (subscriber, subscription)


@dataclass(frozen=True)
class DeliveryRow:
    """One subscription's delivery in a batch (no objects and 0 results when nothing matched)."""

    subscription_id: int | None
    subscriber: str
    subscription: str
    object_keys: tuple[str, ...] = ()
    result_count: int = 0
    bytes: int = 0
    digest: str | None = None

    @property
    def names(self) -> NameKey:
        return (self.subscriber, self.subscription)


@dataclass(frozen=True)
class BatchEntry:
    """A batch as the ledger records it."""

    feed_id: int
    hour: datetime
    plan_build_id: int
    status: str
    started_at: datetime
    finished_at: datetime
    documents: int = 0
    bytes: int = 0
    quarantined: int = 0
    error_message: str | None = None
    deliveries: tuple[DeliveryRow, ...] = field(default=(), repr=False)


@dataclass(frozen=True)
class PriorDelivery:
    """The latest recorded delivery of one subscription for the hour (over all its batches)."""

    batch_id: int
    subscription_id: int | None
    version: int
    object_keys: tuple[str, ...]
    result_count: int
    digest: str | None

    def same_content(self, row: DeliveryRow) -> bool:
        return (self.object_keys, self.result_count, self.digest) == (
            row.object_keys,
            row.result_count,
            row.digest,
        )


@contextmanager
def hour_lock(engine: Engine, feed: str, hour: datetime) -> Iterator[None]:
    """Hold the (feed, hour) lock for a whole run, so two runs of one hour never interleave
    their writes; BatchBusyError (transient) when another run holds it.

    A Postgres session-level advisory lock on its own connection, released when the run ends or
    its process dies. The embedded SQLite catalog serves one machine: no lock there.
    """
    if not is_postgres(engine):
        yield
        return
    key = lock_key(feed, hour)
    with engine.connect() as conn:
        if not conn.scalar(select(func.pg_try_advisory_lock(key))):
            raise BatchBusyError(f"another run of {feed} {hour:%Y-%m-%dT%H} is in progress")
        conn.commit()  # keep no transaction open for the length of the run
        try:
            yield
        finally:
            conn.scalar(select(func.pg_advisory_unlock(key)))
            conn.commit()


def lock_key(feed: str, hour: datetime) -> int:
    """The signed 64-bit advisory-lock key of one feed's hour (stable across processes)."""
    digest = hashlib.sha256(f"feedrouter.route_batch:{feed}:{hour:%Y-%m-%dT%H}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def prior_deliveries(conn: Connection, feed_id: int, hour: datetime) -> dict[NameKey, PriorDelivery]:
    """The latest delivery per (subscriber, subscription) of a feed's hour, over all plan builds."""
    rows = conn.execute(
        select(
            Delivery.batch_id,
            Delivery.subscription_id,
            Delivery.subscriber_name,
            Delivery.subscription_name,
            Delivery.delivery_version,
            Delivery.object_keys,
            Delivery.result_count,
            Delivery.digest,
        )
        .join(Batch, Batch.id == Delivery.batch_id)
        .where(Batch.feed_id == feed_id, Batch.hour == hour)
        .order_by(Delivery.delivery_version, Delivery.id)
    )
    return {
        (row.subscriber_name, row.subscription_name): PriorDelivery(
            row.batch_id,
            row.subscription_id,
            row.delivery_version,
            tuple(row.object_keys or ()),
            int(row.result_count),
            row.digest,
        )
        for row in rows
    }


def record(engine: Engine, entry: BatchEntry) -> int:
    """Write the batch and its new delivery rows in one transaction; returns the batch id."""
    with engine.begin() as conn:
        batch_id = _upsert_batch(conn, entry)
        prior = prior_deliveries(conn, entry.feed_id, entry.hour)
        alive = _subscription_ids(conn, entry.feed_id) if entry.deliveries else set()
        rows = [_row(batch_id, row, prior.get(row.names), alive) for row in entry.deliveries]
        new_rows = [row for row in rows if row is not None]
        if new_rows:
            conn.execute(insert(Delivery), new_rows)
    return batch_id


def record_failure(engine: Engine, entry: BatchEntry) -> int:
    """Mark the batch failed (its delivery rows stay as they were)."""
    with engine.begin() as conn:
        return _upsert_batch(conn, entry)


def _upsert_batch(conn: Connection, entry: BatchEntry) -> int:
    values = {
        "status": entry.status,
        "documents": entry.documents,
        "bytes": entry.bytes,
        "quarantined": entry.quarantined,
        "error_message": entry.error_message,
        "started_at": entry.started_at,
        "finished_at": entry.finished_at,
    }
    key = (
        Batch.feed_id == entry.feed_id,
        Batch.hour == entry.hour,
        Batch.plan_build_id == entry.plan_build_id,
    )
    existing = conn.scalar(select(Batch.id).where(*key).with_for_update())
    if existing is not None:
        conn.execute(update(Batch).where(Batch.id == existing).values(**values))
        return int(existing)
    ids = {"feed_id": entry.feed_id, "hour": entry.hour, "plan_build_id": entry.plan_build_id}
    return int(conn.execute(insert(Batch).values(**ids, **values).returning(Batch.id)).scalar_one())


def _subscription_ids(conn: Connection, feed_id: int) -> set[int]:
    """The feed's subscriptions that exist now (one deleted since the plan build gets NULL)."""
    return set(conn.scalars(select(Subscription.id).where(Subscription.feed_id == feed_id)))


def _row(
    batch_id: int, row: DeliveryRow, prior: PriorDelivery | None, alive: set[int]
) -> dict[str, Any] | None:
    """The new ``deliveries`` row, or None when this batch already recorded the same delivery."""
    if prior is not None and prior.batch_id == batch_id and prior.same_content(row):
        return None
    return {
        "batch_id": batch_id,
        "subscription_id": row.subscription_id if row.subscription_id in alive else None,
        "subscriber_name": row.subscriber,
        "subscription_name": row.subscription,
        "delivery_version": prior.version + 1 if prior is not None else 1,
        "object_keys": list(row.object_keys),
        "result_count": row.result_count,
        "bytes": row.bytes,
        "digest": row.digest,
    }
