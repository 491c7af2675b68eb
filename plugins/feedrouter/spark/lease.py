"""The hour lease of a running batch: taken before the run, renewed in the background while it goes
on, let go at the end.

The lease itself (its row, taking, checking and releasing it) is the catalog's
(:mod:`feedrouter.catalog.lease`); this module is the driver's side: :func:`hour_lock` holds it
for a whole run and :class:`Heartbeat` keeps it alive from a daemon thread.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from sqlalchemy import Engine

from feedrouter.catalog import lease as leases
from feedrouter.catalog.lease import DEFAULT_LEASE_SECONDS, Lease, first_line

log = logging.getLogger("feedrouter.spark")

__all__ = ["DEFAULT_LEASE_SECONDS", "Heartbeat", "Lease", "hour_lock"]


@contextmanager
def hour_lock(engine: Engine, feed: str, hour: datetime, ttl: timedelta | None = None) -> Iterator[Lease]:
    """Hold the (feed, hour) lease for a whole run, renewed in the background, so two runs of one
    hour never interleave and a run that lost it cannot commit (:mod:`feedrouter.catalog.lease`).

    Raises:
        BatchBusyError: [FR605] another run holds the lease (transient).
        CatalogError: [FR405] no feed of that name.
    """
    held = leases.acquire(engine, feed, hour, ttl)
    try:
        with Heartbeat(engine, held):
            yield held
    finally:
        leases.release(engine, held)


class Heartbeat:
    """Renews a lease every third of its ttl in a daemon thread until stopped.

    ``lost`` is set once another run has taken the lease over; a renewal that fails for another
    reason (the database briefly unreachable) is logged and tried again at the next beat. Either
    way the ledger commit checks the lease itself, so the heartbeat only keeps a live run's lease.
    """

    def __init__(self, engine: Engine, lease: Lease) -> None:
        self.engine = engine
        self.lease = lease
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"lease {lease.label}", daemon=True)

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
                return
