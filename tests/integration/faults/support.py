"""Shared pieces of the fault-injection suite: inline runs (the tasks' code without Spark) and the
check that the ledger and the store agree."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Engine, select

from feedrouter.catalog import CompiledPlan, ledger
from feedrouter.catalog.models import Feed
from feedrouter.delivery import PlanRef
from feedrouter.errors import BatchBusyError
from feedrouter.spark import BatchOptions, BatchReport, StoreOpener, route_batch
from feedrouter.storage import ObjectStore, open_store
from tests.integration.spark_support import HOUR, PART_BYTES, NewsFeed, expected_outputs, local_run, snapshot

T = TypeVar("T")


@dataclass(frozen=True)
class News:
    """The news feed of a test: where it lives, its plan build and the hour's inputs."""

    feed: NewsFeed
    ref: PlanRef
    plan: CompiledPlan
    inputs: dict[str, bytes]

    @property
    def out(self) -> ObjectStore:
        return open_store(self.feed.output_base)

    def expected(self, ref: PlanRef | None = None, plan: CompiledPlan | None = None) -> dict[str, bytes]:
        """Every object the subscribers' prefixes must hold after a good run with ``plan``."""
        plan = plan or self.plan
        return expected_outputs(plan, ref or self.ref, local_run(plan, self.inputs), self.feed.name)


def route_inline(engine: Engine, plans: ObjectStore, **options: Any) -> BatchReport:
    """A batch of the news hour run in this process (the tasks' own code, no Spark)."""
    chosen = BatchOptions(inline=True, max_part_bytes=PART_BYTES, **options)
    return route_batch(engine, "news", HOUR, plans_store=plans, options=chosen, stores=StoreOpener.from_env())


def when_free(call: Callable[[], T], timeout: float = 60) -> T:
    """``call()``, retried while another run's lease on the hour is still live (what a scheduler's
    retry does); a lease left by a killed run expires after its ttl."""
    from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_fixed

    retrying = Retrying(
        retry=retry_if_exception_type(BatchBusyError),
        stop=stop_after_delay(timeout),
        wait=wait_fixed(0.5),
        reraise=True,  # the last BatchBusyError itself, not tenacity's RetryError
    )
    return retrying(call)


def assert_ledger_matches_store(engine: Engine, out: ObjectStore, feed: str = "news") -> None:
    """Every object under the subscribers' prefixes is one that the latest recorded delivery of its
    subscription names, and every object a latest delivery names is there."""
    with engine.connect() as conn:
        feed_id = conn.scalar(select(Feed.id).where(Feed.name == feed))
        latest = ledger.prior_deliveries(conn, int(feed_id), HOUR)
    recorded = {uri for d in latest.values() if d.status == "delivered" for uri in d.object_keys}
    assert set(snapshot(out)) == recorded
