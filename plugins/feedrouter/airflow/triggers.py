"""Event-driven plan rebuilds: a trigger in the triggerer that notices catalog changes.

Nothing shipped with Airflow watches a SQL table. :class:`CatalogChangeTrigger` polls the catalog
for feeds whose catalog version differs from the version of their latest plan build (one small
query; the catalog's triggers keep the versions) and
fires one event per change it has not fired for yet. Used through an ``AssetWatcher``, each event
becomes an asset event that schedules the ``feedrouter_plans`` DAG.

The trigger compares with ground truth (the plan builds), not with what it saw last: after a
restart it fires at most once more for a change still waiting for its build, and a missed event
only delays a rebuild until the next poll. The DAG decides what to build from the catalog itself,
so a duplicate event builds nothing twice.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from feedrouter.airflow.settings import catalog_poll_seconds

if TYPE_CHECKING:
    from sqlalchemy import Engine

log = logging.getLogger(__name__)


class CatalogChangeTrigger(BaseEventTrigger):
    """Fire when a feed's catalog version moves past its latest plan build.

    Each event's payload is ``{"feeds": {feed: catalog_version}}`` with the feeds newly out of date.

    Args:
        catalog_conn_id: the catalog's postgres connection; None: ``FEEDROUTER_CATALOG_CONN_ID`` or
            the library's environment configuration (read in the triggerer). With neither, the
            trigger fails at once with FR401 naming both settings: a triggerer that polled an
            empty catalog would report "nothing to do" forever.
        poll_seconds: seconds between polls; None: the ``catalog_poll`` setting
            (``FEEDROUTER_CATALOG_POLL`` or ``[feedrouter] catalog_poll``, default 30), read and
            validated in the triggerer when the trigger starts.
    """

    def __init__(self, *, catalog_conn_id: str | None = None, poll_seconds: float | None = None) -> None:
        super().__init__()
        self.catalog_conn_id = catalog_conn_id
        self.poll_seconds = poll_seconds

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {"catalog_conn_id": self.catalog_conn_id, "poll_seconds": self.poll_seconds},
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        poll = self.poll_seconds or catalog_poll_seconds()
        engine = await sync_to_async(self._engine)()
        fired: dict[str, int] = {}  # the stale feeds (and versions) events were fired for
        try:
            while True:
                stale = await self._poll(engine)
                if stale is not None:
                    news = unseen(stale, fired)
                    # Forget feeds that were built since, so a later change to them fires again.
                    fired = stale
                    if news:
                        log.info("Catalog changed: %s", news)
                        yield TriggerEvent({"feeds": news})
                await asyncio.sleep(poll)
        finally:
            engine.dispose()

    def _engine(self) -> Engine:
        from feedrouter.airflow.hooks import FeedrouterHook

        return FeedrouterHook(catalog_conn_id=self.catalog_conn_id).catalog_engine()

    async def _poll(self, engine: Engine) -> dict[str, int] | None:
        """The stale feeds, or None when the catalog could not be read: that is logged and retried
        at the next poll, as the trigger must outlive database restarts."""
        try:
            return await sync_to_async(stale_feeds)(engine)
        except Exception:
            log.warning("Could not read the catalog versions; retrying at the next poll", exc_info=True)
            return None


def stale_feeds(engine: Engine) -> dict[str, int]:
    """Feeds whose plan build is behind their catalog version, with that version."""
    from feedrouter.catalog.status import stale_feeds as query

    with engine.connect() as conn:
        return query(conn)


def unseen(stale: dict[str, int], fired: dict[str, int]) -> dict[str, int]:
    """The stale feeds at versions no event was fired for yet.

    >>> unseen({"news": 4, "wire": 2}, {"news": 4})
    {'wire': 2}
    """
    return {feed: version for feed, version in stale.items() if fired.get(feed) != version}
