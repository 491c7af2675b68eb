"""The hour lease: at most one run of a (feed, hour) may commit its ledger, even across lost
connections, stalls and crashes.

A lease is a row of ``hour_leases``:

* :func:`acquire` takes it in a short transaction of its own: a free or expired lease gets a new,
  larger fencing ``token`` and an expiry ``ttl`` ahead; a live one held by another run is
  :class:`~feedrouter.errors.BatchBusyError` (FR605, transient).
* :func:`renew` pushes its expiry ahead; the Spark driver's heartbeat
  (:class:`feedrouter.spark.lease.Heartbeat`) calls it in the background while the run goes on (each
  renewal is a short transaction too; nothing stays open for the length of the run).
* :func:`check` runs inside the transaction that commits the run's ledger rows: the token must still
  be ours and unexpired, else :class:`~feedrouter.errors.LockLostError` (FR606, transient) rolls the
  whole transaction back. A run whose connection dropped, or that stalled past its expiry while a
  second run took over, therefore commits nothing.
* :func:`release` ends it; it logs and never raises (the run's own outcome matters more).

Times are the database server's clock, so every run compares against one clock.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import ColumnElement, Connection, Engine, func, insert, select, update
from sqlalchemy.exc import IntegrityError

from feedrouter.catalog.models import HourLease
from feedrouter.catalog.repository import require_feed
from feedrouter.errors import BatchBusyError, LockLostError
from feedrouter.hours import as_utc, format_hour

log = logging.getLogger("feedrouter.catalog")

#: How long a lease lives without a renewal (seconds); renewed every third of that.
DEFAULT_LEASE_SECONDS = 120.0


@dataclass(frozen=True)
class Lease:
    """A lease this process holds: the (feed, hour), its fencing token and how long it lives."""

    feed: str
    feed_id: int
    hour: datetime
    token: int
    holder: str
    ttl: timedelta

    @property
    def label(self) -> str:
        return f"{self.feed} {format_hour(self.hour)}"


def holder_name() -> str:
    """Who holds a lease, for operators reading the table: host, process and thread."""
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}"


def acquire(engine: Engine, feed: str, hour: datetime, ttl: timedelta | None = None) -> Lease:
    """Take the lease of ``feed``'s ``hour`` (a new token), or raise BatchBusyError.

    Raises:
        BatchBusyError: [FR605] another run holds an unexpired lease on the hour (transient).
        CatalogError: [FR405] no feed of that name.
    """
    ttl = ttl or timedelta(seconds=DEFAULT_LEASE_SECONDS)
    holder = holder_name()
    try:
        with write_transaction(engine) as conn:
            feed_id = require_feed(conn, feed).id
            token = _take(conn, feed, feed_id, hour, holder, ttl)
    except IntegrityError as exc:  # a concurrent first run inserted the row just before us
        raise BatchBusyError(f"another run of {feed} {format_hour(hour)} took its lease first") from exc
    return Lease(feed, feed_id, hour, token, holder, ttl)


def renew(engine: Engine, lease: Lease) -> bool:
    """Push the lease's expiry ``ttl`` ahead; False when another run has taken it over.

    A lease that expired but that nobody took over is still ours (its token is unchanged), so a
    run that stalled and resumes renews it; a run that was overtaken cannot.
    """
    with write_transaction(engine) as conn:
        now = database_now(conn)
        changed = conn.execute(
            update(HourLease)
            .where(*_key(lease.feed_id, lease.hour), HourLease.token == lease.token)
            .values(expires_at=now + lease.ttl)
        ).rowcount
    return changed == 1


def check(conn: Connection, lease: Lease) -> None:
    """Inside the ledger's transaction: the lease is still ours and unexpired, else LockLostError.

    The row is locked (FOR UPDATE on Postgres) until the transaction ends, so a run taking the lease
    over waits for this commit and never overlaps it.
    """
    row = conn.execute(
        select(HourLease.token, HourLease.holder, HourLease.expires_at)
        .where(*_key(lease.feed_id, lease.hour))
        .with_for_update()
    ).first()
    now = database_now(conn)
    if row is None or row.token != lease.token:
        holder = f" (now held by {row.holder}, token {row.token})" if row is not None else ""
        raise LockLostError(
            f"the run of {lease.label} lost its hour lease to another run{holder}: "
            "it commits nothing; retry the hour"
        )
    if as_utc(row.expires_at) <= now:
        raise LockLostError(
            f"the hour lease of {lease.label} expired at {as_utc(row.expires_at):%H:%M:%S} UTC before "
            "the run could record its ledger: it commits nothing; retry the hour"
        )


def confirm(engine: Engine, lease: Lease) -> None:
    """Check, in a transaction of its own, that the lease is still ours and unexpired.

    Raises:
        LockLostError: [FR606] another run holds the lease now, or it expired.
    """
    with engine.begin() as conn:
        check(conn, lease)


def release(engine: Engine, lease: Lease) -> None:
    """Let the lease go at once (expire it, keep the token so it only ever grows). Never raises."""
    try:
        with write_transaction(engine) as conn:
            now = database_now(conn)
            conn.execute(
                update(HourLease)
                .where(*_key(lease.feed_id, lease.hour), HourLease.token == lease.token)
                .values(expires_at=now)
            )
    except Exception as exc:  # a lost connection: the lease expires on its own
        log.warning(
            "could not release the hour lease of %s (it expires within %s): %s",
            lease.label,
            lease.ttl,
            first_line(exc),
        )


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A transaction that will write (the lease row is locked FOR UPDATE inside it)."""
    with engine.begin() as conn:
        yield conn


def database_now(conn: Connection) -> datetime:
    """The current time, aware, in UTC, from the server's clock (one clock for every run)."""
    return as_utc(conn.execute(select(func.clock_timestamp())).scalar_one())


def _take(conn: Connection, feed: str, feed_id: int, hour: datetime, holder: str, ttl: timedelta) -> int:
    now = database_now(conn)
    row = conn.execute(
        select(HourLease.token, HourLease.holder, HourLease.expires_at)
        .where(*_key(feed_id, hour))
        .with_for_update()
    ).first()
    values = {"holder": holder, "acquired_at": now, "expires_at": now + ttl}
    if row is None:
        conn.execute(insert(HourLease).values(feed_id=feed_id, hour=hour, token=1, **values))
        return 1
    if as_utc(row.expires_at) > now:
        raise BatchBusyError(
            f"another run of {feed} {format_hour(hour)} is in progress ({row.holder} holds the hour's "
            f"lease until {as_utc(row.expires_at):%H:%M:%S} UTC)"
        )
    # Only if nobody took it since we looked: the token only grows.
    taken = conn.execute(
        update(HourLease)
        .where(*_key(feed_id, hour), HourLease.token == row.token)
        .values(token=row.token + 1, **values)
    ).rowcount
    if taken != 1:
        raise BatchBusyError(f"another run of {feed} {format_hour(hour)} took its lease first")
    return int(row.token) + 1


def _key(feed_id: int, hour: datetime) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    return (HourLease.feed_id == feed_id, HourLease.hour == hour)


def first_line(exc: BaseException) -> str:
    """The error's type and the first line of its message, for a one-line log entry."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"
