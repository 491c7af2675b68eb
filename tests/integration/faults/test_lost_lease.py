"""The hour lease on Postgres (issue 18, item 9): dropping the lease holder's database connections
does not free the hour (a second run is refused, not let in alongside), and once the lease has
expired and a second run has taken it over, the first run can no longer commit anything; its
release never raises."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from sqlalchemy import Engine, text

from feedrouter.catalog import lease as leases
from feedrouter.catalog.database import create_catalog_engine
from feedrouter.errors import BatchBusyError, LockLostError
from feedrouter.spark import batch as batch_module
from feedrouter.storage import FileStore
from tests.integration.faults.support import News, assert_ledger_matches_store, route_inline
from tests.integration.spark_support import HOUR, batches, snapshot

pytestmark = pytest.mark.integration

FIRST = "feedrouter-first-run"


def drop_connections(engine: Engine, application: str) -> int:
    """pg_terminate_backend on every server process of ``application``: a network cut, a failover."""
    with engine.begin() as conn:
        return int(
            conn.scalar(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE application_name = :a AND pid <> pg_backend_pid()"
                ),
                {"a": application},
            )
        )


def expire_lease(engine: Engine) -> None:
    """What a stall longer than the lease's ttl does, without waiting for it."""
    with engine.begin() as conn:
        conn.execute(text("UPDATE feedrouter.hour_leases SET expires_at = now() - interval '1 second'"))


def test_a_run_that_lost_its_lease_commits_nothing(
    catalog: Engine, catalog_url: str, news: News, plans: FileStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    first_engine = create_catalog_engine(catalog_url, connect_args={"application_name": FIRST})
    seen: dict[str, Any] = {}
    run_job = batch_module.run_routing

    def cut_off_then_overtaken(*args: Any, **kwargs: Any) -> Any:
        output = run_job(*args, **kwargs)  # the first run has written its folders
        if "dropped" not in seen:  # once: the second run goes through here too
            seen["dropped"] = drop_connections(catalog, FIRST)
            with pytest.raises(BatchBusyError) as busy:  # its lease outlives its connections
                route_inline(catalog, plans)
            seen["busy"] = busy.value.code
            expire_lease(catalog)
            seen["second"] = route_inline(catalog, plans)  # takes the hour over, delivers, records
        return output

    monkeypatch.setattr(batch_module, "run_routing", cut_off_then_overtaken)
    with pytest.raises(LockLostError) as lost:
        route_inline(first_engine, plans)
    first_engine.dispose()

    assert lost.value.code == "FR606" and lost.value.transient
    assert seen["dropped"] >= 1 and seen["busy"] == "FR605"
    [only] = batches(catalog)
    assert (only["id"], only["status"]) == (seen["second"].batch_id, "succeeded")
    assert snapshot(news.out) == news.expected()
    assert_ledger_matches_store(catalog, news.out)
    with catalog.connect() as conn:
        token = conn.scalar(text("SELECT token FROM feedrouter.hour_leases"))
    assert token == 2
    assert route_inline(catalog, plans).batch_id == only["id"]  # released: the hour is free again


def racing_acquires(engine: Engine, runs: int = 4) -> list[object]:
    """``runs`` threads taking the news hour's lease at the same moment: each one's lease or error."""
    barrier = threading.Barrier(runs)

    def take() -> object:
        barrier.wait()
        try:
            return leases.acquire(engine, "news", HOUR)
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(runs) as pool:
        return list(pool.map(lambda _: take(), range(runs)))


def test_racing_runs_get_one_lease_and_busy_errors(catalog: Engine, news: News) -> None:
    for _ in ("a free hour", "an expired lease"):
        outcomes = racing_acquires(catalog)
        won = [o for o in outcomes if isinstance(o, leases.Lease)]
        assert len(won) == 1, outcomes
        assert all(isinstance(o, BatchBusyError) for o in outcomes if o not in won), outcomes
        expire_lease(catalog)
    assert won[0].token == 2
