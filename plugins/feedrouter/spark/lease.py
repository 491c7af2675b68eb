"""The hour lease of a running batch: taken before the run, renewed in the background while it goes
on, let go at the end.

The lease itself (its row, taking, checking and releasing it) is the catalog's
(:mod:`feedrouter.catalog.lease`); this module is the driver's side: :func:`hour_lock` holds it
for a whole run and :class:`Heartbeat` keeps it alive from a daemon thread.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Engine

from feedrouter.catalog import lease as leases
from feedrouter.catalog.lease import DEFAULT_LEASE_SECONDS, Lease, first_line
from feedrouter.spark.batchlog import log

__all__ = ["DEFAULT_LEASE_SECONDS", "Heartbeat", "JobCanceller", "Lease", "hour_lock"]


@contextmanager
def hour_lock(
    engine: Engine,
    feed: str,
    hour: datetime,
    ttl: timedelta | None = None,
    on_lost: Callable[[], None] | None = None,
) -> Iterator[Lease]:
    """Hold the (feed, hour) lease for a whole run, renewed in the background, so two runs of one
    hour never interleave and a run that lost it cannot commit (:mod:`feedrouter.catalog.lease`).
    ``on_lost`` is called (from the heartbeat's thread) once another run has taken the lease over.

    Raises:
        BatchBusyError: [FR605] another run holds the lease (transient).
        CatalogError: [FR405] no feed of that name.
    """
    held = leases.acquire(engine, feed, hour, ttl)
    try:
        with Heartbeat(engine, held, on_lost):
            yield held
    finally:
        leases.release(engine, held)


class Heartbeat:
    """Renews a lease every third of its ttl in a daemon thread until stopped.

    ``lost`` is set, and ``on_lost`` called, once another run has taken the lease over; a renewal
    that fails for another reason (the database briefly unreachable) is logged and tried again at
    the next beat. Either way the ledger commit checks the lease itself, so the heartbeat only keeps
    a live run's lease (and cancels a lost run's Spark jobs early, :class:`JobCanceller`).
    """

    def __init__(self, engine: Engine, lease: Lease, on_lost: Callable[[], None] | None = None) -> None:
        self.engine = engine
        self.lease = lease
        self.lost = threading.Event()
        self._on_lost = on_lost
        self._stop = threading.Event()
        # in a copy of the starter's context: its log records carry the batch's fields
        run, name = contextvars.copy_context().run, f"lease {lease.label}"
        self._thread = threading.Thread(target=run, args=(self._beat,), name=name, daemon=True)

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _beat(self) -> None:
        interval = self.lease.ttl.total_seconds() / 3
        while not self._stop.wait(interval):
            try:
                held = leases.renew(self.engine, self.lease)
            except Exception as exc:
                log.warning("could not renew the hour lease of %s: %s", self.lease.label, first_line(exc))
                continue
            if not held:
                log.error("the hour lease of %s was taken over by another run", self.lease.label)
                self.lost.set()
                if self._on_lost is not None:
                    self._on_lost()
                return


class JobCanceller:
    """Cancels a run's tagged Spark operations once its lease is lost (:func:`feedrouter.spark.job.
    interrupt`: classic Spark and Connect), so an overtaken run stops writing instead of racing
    the run that took the hour over. Callable: pass it as ``hour_lock``'s ``on_lost``.
    """

    def __init__(self) -> None:
        self.fired = threading.Event()
        self._lock = threading.Lock()
        self._running: tuple[Any, str] | None = None

    def __call__(self) -> None:
        with self._lock:
            self.fired.set()
            running = self._running
        if running is not None:
            self._interrupt(*running)

    @contextmanager
    def armed(self, spark: Any, tag: str) -> Iterator[None]:
        """Cancel the operations tagged ``tag`` on ``spark`` if the lease is lost during the block."""
        with self._lock:
            self._running = (spark, tag)
        try:
            yield
        finally:
            with self._lock:
                self._running = None

    def _interrupt(self, spark: Any, tag: str) -> None:
        from feedrouter.spark.job import interrupt

        log.warning("the hour lease was lost: interrupting the Spark operations tagged %s", tag)
        try:
            interrupt(spark, tag)
        except Exception as exc:  # the commit checks the lease anyway: nothing is recorded
            log.warning("could not interrupt the Spark operations tagged %s: %s", tag, first_line(exc))
