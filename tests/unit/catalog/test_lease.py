"""The hour lease: plain rows of ``hour_leases``, locked FOR UPDATE, on the server's clock."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, create_engine, select, text, update

from feedrouter.catalog import lease as leases
from feedrouter.catalog import ledger, open_catalog
from feedrouter.catalog.models import Batch, HourLease
from feedrouter.errors import BatchBusyError, CatalogError, LockLostError

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
NOW = datetime(2026, 11, 22, 17, 5, tzinfo=timezone.utc)
BUILD = (
    "INSERT INTO plan_builds (id, feed_id, catalog_version, format_version, feedrouter_version, strategy,"
    " artifact_uri, digest, artifact_bytes, subscriptions, valid_count, invalid_count, never_matches_count,"
    " duration_seconds) VALUES (1, 1, 1, 1, 'x', 'FWR', 'file:///p', :d, 1, 0, 0, 0, 0, 0.1)"
)


@pytest.fixture
def engine(catalog_db_url: str) -> Engine:
    engine = open_catalog(catalog_db_url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO feeds (id, name, input_prefix) VALUES (1, 'news', 'file:///in')"))
        conn.execute(text(BUILD), {"d": "1" * 64})
    return engine


def expire(engine: Engine) -> None:
    """What a stalled or disconnected holder sees: its lease's time ran out."""
    with engine.begin() as conn:
        conn.execute(update(HourLease).values(expires_at=datetime.now(timezone.utc) - timedelta(seconds=1)))


def failed_entry() -> ledger.BatchEntry:
    return ledger.BatchEntry(1, HOUR, 1, "failed", NOW, NOW, error_message="boom")


def test_a_live_lease_is_busy_and_an_expired_one_is_taken_over_with_a_larger_token(engine: Engine) -> None:
    first = leases.acquire(engine, "news", HOUR)
    with pytest.raises(BatchBusyError, match="holds the hour's lease") as caught:
        leases.acquire(engine, "news", HOUR)
    assert caught.value.code == "FR605"
    expire(engine)
    second = leases.acquire(engine, "news", HOUR)
    assert second.token == first.token + 1
    assert not leases.renew(engine, first) and leases.renew(engine, second)


def test_a_run_that_lost_its_lease_commits_nothing(engine: Engine) -> None:
    first = leases.acquire(engine, "news", HOUR)
    expire(engine)
    with pytest.raises(LockLostError, match="expired") as caught:
        ledger.record_failure(engine, failed_entry(), first)
    assert caught.value.code == "FR606" and caught.value.transient
    leases.acquire(engine, "news", HOUR)  # a second run takes the hour over
    for write in (ledger.record, ledger.record_failure, ledger.mark_running):
        with pytest.raises(LockLostError, match="lost its hour lease to another run"):
            write(engine, failed_entry(), first)
    with engine.connect() as conn:
        assert conn.scalar(select(Batch.id)) is None


def test_a_stalled_run_nobody_overtook_renews_and_commits(engine: Engine) -> None:
    held = leases.acquire(engine, "news", HOUR)
    expire(engine)
    assert leases.renew(engine, held)
    assert ledger.record_failure(engine, failed_entry(), held) == 1


def test_release_frees_the_hour_and_never_raises(engine: Engine) -> None:
    held = leases.acquire(engine, "news", HOUR)
    leases.release(engine, held)
    again = leases.acquire(engine, "news", HOUR)
    unreachable = create_engine("postgresql+psycopg://nobody@127.0.0.1:1/none")
    leases.release(unreachable, again)  # the catalog is gone: logged, not raised


def test_an_unknown_feed_is_named(engine: Engine) -> None:
    with pytest.raises(CatalogError, match="no feed named 'sports'"):
        leases.acquire(engine, "sports", HOUR)


def test_runs_racing_for_an_hour_get_one_lease_and_busy_errors(engine: Engine) -> None:
    runs = 4
    barrier = threading.Barrier(runs)

    def take() -> object:
        barrier.wait()
        try:
            return leases.acquire(engine, "news", HOUR)
        except Exception as exc:
            return exc

    for _ in ("a free hour", "an expired lease"):
        with ThreadPoolExecutor(runs) as pool:
            outcomes = list(pool.map(lambda _: take(), range(runs)))
        won = [o for o in outcomes if isinstance(o, leases.Lease)]
        assert len(won) == 1, outcomes
        assert all(isinstance(o, BatchBusyError) for o in outcomes if o not in won), outcomes
        expire(engine)
