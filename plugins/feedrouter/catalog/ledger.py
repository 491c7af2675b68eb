"""The run ledger: ``batches`` and ``deliveries`` rows, written in one transaction after the objects.

* One ``batches`` row per (feed, hour, plan build): a re-run with the same build updates it. The row
  is committed as ``running`` before anything is delivered (:func:`mark_running`), so a run killed
  half-way leaves a trace that the next run of the hour reconciles against the store.
* One ``deliveries`` row per served subscription, matching or not: a subscription without results
  has a row with ``result_count`` 0 and no objects, so "nothing for you this hour" is recorded,
  not guessed from a missing folder. An empty hour is a batch with status ``empty`` and no rows.
* A delivery the store refused (one subscriber's unwritable prefix) is a row with status ``failed``,
  its code and reason; the next run of the hour delivers it again as a new version.
* Every write of a run holding an hour lease checks the lease in its own transaction
  (:func:`feedrouter.catalog.lease.check`): a run that lost it commits nothing.
* Versions: per (feed, hour, subscriber, subscription), each new delivery gets the next
  ``delivery_version``. Re-running a batch that delivers the same content adds nothing; a re-run
  after a plan change (a new batch) or with changed input records the next version.

Core SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, Engine, func, insert, literal_column, select, update

from feedrouter.catalog import lease as leases
from feedrouter.catalog.lease import Lease
from feedrouter.catalog.models import Batch, Delivery, Feed, HourListing, Subscription

#: Batch statuses of a run that did not finish (killed, failed): it may have left folders behind.
UNFINISHED = ("pending", "running", "failed")

NameKey = tuple[str, str]  # (subscriber, subscription)


@dataclass(frozen=True)
class DeliveryRow:
    """One subscription's delivery in a batch (no objects and 0 results when nothing matched; status
    "failed" with ``error_code``/``error_message`` when the store refused it)."""

    catalog_id: int | None  # the subscription's row id (None once the row is gone)
    subscriber: str
    subscription: str
    object_keys: tuple[str, ...] = ()
    result_count: int = 0
    bytes: int = 0
    digest: str | None = None
    status: str = "delivered"
    error_code: str | None = None
    error_message: str | None = None

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
    finished_at: datetime | None
    documents: int = 0
    bytes: int = 0
    quarantined: int = 0
    error_message: str | None = None
    deliveries: tuple[DeliveryRow, ...] = field(default=(), repr=False)
    untimed: int = 0  # messages left out of joins: no usable event time


@dataclass(frozen=True)
class PriorDelivery:
    """The latest recorded delivery of one subscription for the hour (over all its batches)."""

    batch_id: int
    catalog_id: int | None
    version: int
    object_keys: tuple[str, ...]
    result_count: int
    digest: str | None
    status: str = "delivered"
    error_code: str | None = None
    error_message: str | None = None

    def same_content(self, row: DeliveryRow) -> bool:
        """Whether ``row`` says what this one says: its reason too, so that it never keeps one no
        longer true (a withheld hour's cap; pairs left out; the hour whose inputs are gone, FR612).
        A store's refusal (FR607) is in the store's words, which vary from run to run (request
        ids, session names): its code is compared."""
        mine = (self.object_keys, self.result_count, self.digest, self.status, self.error_code)
        theirs = (row.object_keys, row.result_count, row.digest, row.status, row.error_code)
        in_the_stores_words = row.status == "failed" and row.error_code == "FR607"
        return mine == theirs and (in_the_stores_words or self.error_message == row.error_message)


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
            Delivery.status,
            Delivery.error_code,
            Delivery.error_message,
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
            row.status,
            row.error_code,
            row.error_message,
        )
        for row in rows
    }


def recorded_deliveries(conn: Connection, feed_id: int, hour: datetime) -> list[tuple[str, tuple[str, ...]]]:
    """(subscription name, object URIs) of every recorded delivery of the feed's hour that named
    objects (all versions, all builds): where earlier runs put folders."""
    rows = conn.execute(
        select(Delivery.subscription_name, Delivery.object_keys)
        .join(Batch, Batch.id == Delivery.batch_id)
        .where(Batch.feed_id == feed_id, Batch.hour == hour)
    )
    found = {(row.subscription_name, tuple(row.object_keys[:1])) for row in rows if row.object_keys}
    return sorted(found)


def unfinished_builds(conn: Connection, feed_id: int, hour: datetime) -> set[int]:
    """Plan builds of the hour's runs that never finished (killed, failed): they may have written
    folders that the ledger does not know."""
    rows = conn.scalars(
        select(Batch.plan_build_id).where(
            Batch.feed_id == feed_id, Batch.hour == hour, Batch.status.in_(UNFINISHED)
        )
    )
    return {int(build) for build in rows if build is not None}


def mark_running(engine: Engine, entry: BatchEntry, lease: Lease | None = None) -> int:
    """Commit the batch as ``running`` before anything is delivered; returns the batch id."""
    with leases.write_transaction(engine) as conn:
        if lease is not None:
            leases.check(conn, lease)
        return _upsert_batch(conn, entry)


def record(engine: Engine, entry: BatchEntry, lease: Lease | None = None) -> int:
    """Write the batch and its new delivery rows in one transaction; returns the batch id.

    Raises:
        LockLostError: [FR606] ``lease`` is no longer this run's: nothing is written.
    """
    with leases.write_transaction(engine) as conn:
        if lease is not None:
            leases.check(conn, lease)
        batch_id = _upsert_batch(conn, entry)
        _close_abandoned(conn, entry, batch_id)
        prior = prior_deliveries(conn, entry.feed_id, entry.hour)
        alive = _subscription_ids(conn, entry.feed_id) if entry.deliveries else set()
        rows = [_row(batch_id, row, prior.get(row.names), alive) for row in entry.deliveries]
        new_rows = [row for row in rows if row is not None]
        if new_rows:
            conn.execute(insert(Delivery), new_rows)
    return batch_id


def finished_batch(conn: Connection, feed_id: int, hour: datetime, plan_build_id: int) -> int | None:
    """The id of the hour's finished batch (succeeded or empty) routed by this plan build, else by
    the latest build that routed it (a plan rebuilt between the hour's routing and its join stage);
    None when the hour was never routed."""
    found = conn.execute(
        select(Batch.id, Batch.plan_build_id)
        .where(Batch.feed_id == feed_id, Batch.hour == hour, Batch.status.in_(("succeeded", "empty")))
        .order_by(Batch.id.desc())
    ).all()
    same = [row.id for row in found if row.plan_build_id == plan_build_id]
    chosen = same[0] if same else found[0].id if found else None
    return int(chosen) if chosen is not None else None


def routed_hour(conn: Connection, feed: str, hour: datetime) -> bool:
    """Whether the feed's hour has a finished batch (succeeded or empty), with any plan build."""
    found = conn.scalar(
        select(Batch.id)
        .join(Feed, Feed.id == Batch.feed_id)
        .where(Feed.name == feed, Batch.hour == hour, Batch.status.in_(("succeeded", "empty")))
        .limit(1)
    )
    return found is not None


def record_listing(conn: Connection, hour: datetime, feeds: Iterable[str]) -> None:
    """Record the feeds the route run of ``hour`` listed; a run listed again adds its feeds."""
    from sqlalchemy.dialects.postgresql import insert as upsert

    statement = upsert(HourListing).values(hour=hour, feeds=sorted(set(feeds)))
    # the union of the listed feeds and those listed before, sorted (a constant expression: no input)
    merged: ColumnElement[list[str]] = literal_column(
        "ARRAY(SELECT DISTINCT name FROM unnest(hour_listings.feeds || excluded.feeds) AS name ORDER BY name)"
    )
    conn.execute(statement.on_conflict_do_update(index_elements=[HourListing.hour], set_={"feeds": merged}))


def listed_feeds(conn: Connection, hour: datetime) -> frozenset[str] | None:
    """The feeds the route run of ``hour`` listed, or None when no run has listed that hour yet."""
    found = conn.scalar(select(HourListing.feeds).where(HourListing.hour == hour))
    return None if found is None else frozenset(found)


def routed_documents(conn: Connection, feed: str, hour: datetime) -> int:
    """The most documents a finished batch of the feed's hour routed, with any plan build (0: none
    finished, or none had documents)."""
    found = conn.scalar(
        select(func.max(Batch.documents))
        .join(Feed, Feed.id == Batch.feed_id)
        .where(Feed.name == feed, Batch.hour == hour, Batch.status.in_(("succeeded", "empty")))
    )
    return int(found or 0)


def record_deliveries(
    engine: Engine,
    batch_id: int,
    feed_id: int,
    hour: datetime,
    deliveries: Iterable[DeliveryRow],
    lease: Lease | None = None,
) -> int:
    """Add delivery rows to a finished batch (the join stage's, after the hour's routing), with the
    versioning of :func:`record`: a re-run with the same content adds nothing. Returns how many
    rows were written.

    Raises:
        LockLostError: [FR606] ``lease`` is no longer this run's: nothing is written.
    """
    with leases.write_transaction(engine) as conn:
        if lease is not None:
            leases.check(conn, lease)
        prior = prior_deliveries(conn, feed_id, hour)
        given = list(deliveries)
        alive = _subscription_ids(conn, feed_id) if given else set()
        rows = [_row(batch_id, row, prior.get(row.names), alive) for row in given]
        new_rows = [row for row in rows if row is not None]
        if new_rows:
            conn.execute(insert(Delivery), new_rows)
    return len(new_rows)


def record_failure(engine: Engine, entry: BatchEntry, lease: Lease | None = None) -> int:
    """Mark the batch failed (its delivery rows stay as they were).

    Raises:
        LockLostError: [FR606] ``lease`` is no longer this run's: nothing is written.
    """
    with leases.write_transaction(engine) as conn:
        if lease is not None:
            leases.check(conn, lease)
        return _upsert_batch(conn, entry)


def _upsert_batch(conn: Connection, entry: BatchEntry) -> int:
    values = {
        "status": entry.status,
        "documents": entry.documents,
        "bytes": entry.bytes,
        "quarantined": entry.quarantined,
        "untimed": entry.untimed,
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


def _close_abandoned(conn: Connection, entry: BatchEntry, batch_id: int) -> None:
    """Mark other runs of the hour still "running" as failed: this run holds the hour's lease and
    has reconciled the store, so they died (killed, lost) and will never finish."""
    conn.execute(
        update(Batch)
        .where(
            Batch.feed_id == entry.feed_id,
            Batch.hour == entry.hour,
            Batch.id != batch_id,
            Batch.status.in_(("pending", "running")),
        )
        .values(
            status="failed",
            finished_at=entry.finished_at,
            error_message=f"the run did not finish (killed or lost); batch {batch_id} reconciled the hour",
        )
    )


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
        "subscription_id": row.catalog_id if row.catalog_id in alive else None,
        "subscriber_name": row.subscriber,
        "subscription_name": row.subscription,
        "delivery_version": prior.version + 1 if prior is not None else 1,
        "object_keys": list(row.object_keys),
        "result_count": row.result_count,
        "bytes": row.bytes,
        "digest": row.digest,
        "status": row.status,
        "error_code": row.error_code,
        "error_message": row.error_message,
    }
