"""The batches/deliveries ledger on the embedded SQLite catalog: upserts, versions, failures."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, select, text

from feedrouter.catalog import Batch, Delivery, ledger, open_catalog

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
NOW = datetime(2026, 11, 22, 17, 5, tzinfo=timezone.utc)


SUBSCRIPTION = (
    "INSERT INTO subscriptions (id, subscriber_id, feed_id, name, query) VALUES (:i, 1, 1, :n, '//x')"
)
BUILD = (
    "INSERT INTO plan_builds (id, feed_id, catalog_version, format_version, feedrouter_version, strategy,"
    " artifact_uri, digest, artifact_bytes, subscriptions, valid_count, invalid_count, never_matches_count,"
    " duration_seconds) VALUES (:b, 1, :b, 1, 'x', 'FWR', 'file:///p', :d, 1, 2, 2, 0, 0, 0.1)"
)


@pytest.fixture
def engine(catalog_db_url: str) -> Engine:
    """A catalog with feed news, subscriber alice, subscriptions titles and quiet, builds 1 and 2."""
    engine = open_catalog(catalog_db_url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO feeds (id, name, input_prefix) VALUES (1, 'news', 'file:///in')"))
        conn.execute(
            text("INSERT INTO subscribers (id, name, output_prefix) VALUES (1, 'alice', 'file:///o')")
        )
        for sid, name in ((1, "titles"), (2, "quiet")):
            conn.execute(text(SUBSCRIPTION), {"i": sid, "n": name})
        for build in (1, 2):
            conn.execute(text(BUILD), {"b": build, "d": f"{build}" * 64})
    return engine


def entry(build: int = 1, keys: tuple[str, ...] = ("file:///o/p0",), results: int = 3) -> ledger.BatchEntry:
    rows = (
        ledger.DeliveryRow(1, "alice", "titles", keys, results, 10 * results, "d" * 64 if results else None),
        ledger.DeliveryRow(2, "alice", "quiet"),
    )
    return ledger.BatchEntry(
        1, HOUR, build, "succeeded", NOW, NOW + timedelta(minutes=1), 5, 50, 1, None, rows
    )


def versions(engine: Engine) -> list[tuple[int, str, int, int]]:
    with engine.connect() as conn:
        query = select(
            Delivery.batch_id, Delivery.subscription_name, Delivery.delivery_version, Delivery.result_count
        )
        return [tuple(row) for row in conn.execute(query.order_by(Delivery.id))]


def test_a_rerun_with_the_same_content_adds_nothing(engine: Engine) -> None:
    first = ledger.record(engine, entry())
    assert ledger.record(engine, entry()) == first
    assert versions(engine) == [(first, "titles", 1, 3), (first, "quiet", 1, 0)]


def test_changed_content_and_a_new_plan_build_are_new_versions(engine: Engine) -> None:
    first = ledger.record(engine, entry())
    ledger.record(engine, entry(keys=("file:///o/p0", "file:///o/p1"), results=4))
    second = ledger.record(engine, entry(build=2))
    assert second != first
    assert versions(engine)[2:] == [
        (first, "titles", 2, 4),
        (second, "titles", 3, 3),
        (second, "quiet", 2, 0),
    ]
    prior = ledger.prior_deliveries(engine.connect(), 1, HOUR)
    assert prior[("alice", "titles")].version == 3 and prior[("alice", "quiet")].object_keys == ()


def test_a_failure_marks_the_batch_and_a_deleted_subscription_keeps_its_names(engine: Engine) -> None:
    failed = ledger.BatchEntry(1, HOUR, 1, "failed", NOW, NOW, error_message="boom")
    batch_id = ledger.record_failure(engine, failed)
    with engine.begin() as conn:
        conn.execute(text("DELETE FROM subscriptions WHERE id = 2"))
    assert ledger.record(engine, entry()) == batch_id
    with engine.connect() as conn:
        status, error = conn.execute(select(Batch.status, Batch.error_message)).one()
        ids = dict(conn.execute(select(Delivery.subscription_name, Delivery.subscription_id)).all())
    assert (status, error) == ("succeeded", None)
    assert ids == {"titles": 1, "quiet": None}


def test_a_run_marked_running_is_unfinished_until_it_records(engine: Engine) -> None:
    running = ledger.BatchEntry(1, HOUR, 1, "running", NOW, None)
    batch_id = ledger.mark_running(engine, running)
    with engine.connect() as conn:
        assert conn.scalar(select(Batch.status).where(Batch.id == batch_id)) == "running"
        assert ledger.unfinished_builds(conn, 1, HOUR) == {1}
    assert ledger.record(engine, entry()) == batch_id
    with engine.connect() as conn:
        assert ledger.unfinished_builds(conn, 1, HOUR) == set()
        assert ledger.recorded_deliveries(conn, 1, HOUR) == [("titles", ("file:///o/p0",))]


def test_a_refused_delivery_is_a_failed_row_and_a_later_success_a_new_version(engine: Engine) -> None:
    refused = ledger.DeliveryRow(
        1, "alice", "titles", status="failed", error_code="FR607", error_message="no bucket"
    )
    failed = ledger.BatchEntry(1, HOUR, 1, "succeeded", NOW, NOW, deliveries=(refused,))
    batch_id = ledger.record(engine, failed)
    assert ledger.record(engine, failed) == batch_id  # the same failure again adds nothing
    ledger.record(engine, entry())
    with engine.connect() as conn:
        query = select(
            Delivery.delivery_version, Delivery.status, Delivery.error_code, Delivery.error_message
        )
        rows = [tuple(row) for row in conn.execute(query.where(Delivery.subscription_name == "titles"))]
    assert rows == [(1, "failed", "FR607", "no bucket"), (2, "delivered", None, None)]


def test_a_row_whose_reason_changed_is_a_new_version(engine: Engine) -> None:
    """A review found the ledger keeping a reason no longer true: a withheld hour whose first run
    could not take its folder back, withheld again once it could, still said it could not; a pair
    cap's reason stayed when the bytes cap withheld it. The reason is part of what a row says."""

    def withheld(message: str) -> ledger.BatchEntry:
        row = ledger.DeliveryRow(
            1, "alice", "titles", status="withheld", error_code="FR313", error_message=message
        )
        return ledger.BatchEntry(1, HOUR, 1, "succeeded", NOW, NOW, deliveries=(row,))

    reasons = [
        "[FR313] more than 4 pairs in the hour; [FR500] taking back its folder failed",
        "[FR313] more than 4 pairs in the hour",
        "[FR313] more than 4 pairs in the hour",  # the same again: nothing new
        "[FR313] more than 99 bytes of results in the hour",
    ]
    for reason in reasons:
        ledger.record(engine, withheld(reason))
    with engine.connect() as conn:
        query = select(Delivery.delivery_version, Delivery.error_message).order_by(Delivery.id)
        rows = [tuple(row) for row in conn.execute(query.where(Delivery.subscription_name == "titles"))]
    assert rows == [(1, reasons[0]), (2, reasons[1]), (3, reasons[3])]
    # a failed row's reason is the store's words, which vary from run to run: only its code counts
    for words in ("AccessDenied for botocore-session-1", "AccessDenied for botocore-session-2"):
        row = ledger.DeliveryRow(
            1, "alice", "titles", status="failed", error_code="FR607", error_message=words
        )
        ledger.record(engine, ledger.BatchEntry(1, HOUR, 1, "succeeded", NOW, NOW, deliveries=(row,)))
    with engine.connect() as conn:
        rows = [tuple(row) for row in conn.execute(query.where(Delivery.subscription_name == "titles"))]
    assert rows[3:] == [(4, "AccessDenied for botocore-session-1")]
    # a join left out names the hour whose inputs are gone (FR612): another hour is another reason
    # (a review found the ledger still naming the first, which the operator had restored since)
    for words in ["news 2026-05-01T06 lost its inputs"] * 2 + ["news 2026-05-01T07 lost its inputs"]:
        row = ledger.DeliveryRow(
            1, "alice", "titles", status="failed", error_code="FR612", error_message=words
        )
        ledger.record(engine, ledger.BatchEntry(1, HOUR, 1, "succeeded", NOW, NOW, deliveries=(row,)))
    with engine.connect() as conn:
        rows = [tuple(row) for row in conn.execute(query.where(Delivery.subscription_name == "titles"))]
    assert rows[4:] == [(5, "news 2026-05-01T06 lost its inputs"), (6, "news 2026-05-01T07 lost its inputs")]


def test_the_status_questions_read_back_what_a_batch_recorded(engine: Engine) -> None:
    from feedrouter.catalog import status

    batch_id = ledger.record(engine, entry())
    with engine.connect() as conn:
        [row] = status.batch_ledger(conn, "news", HOUR)
        delivered = status.batch_deliveries(conn, batch_id)
    assert (row["id"], row["status"], row["deliveries"], row["results"]) == (batch_id, "succeeded", 2, 3)
    assert [(d["subscription_name"], d["result_count"]) for d in delivered] == [("titles", 3), ("quiet", 0)]
    assert delivered[0]["object_keys"] == list(entry().deliveries[0].object_keys)


def test_an_hours_listing_is_the_feeds_its_route_runs_listed(engine: Engine) -> None:
    """The route run of an hour records the feeds it listed; a run listed again adds the feeds it
    lists then (a feed added meanwhile); an hour no run listed has no listing."""
    with engine.begin() as conn:
        assert ledger.listed_feeds(conn, HOUR) is None
        ledger.record_listing(conn, HOUR, ["news", "blogs"])
    with engine.begin() as conn:
        ledger.record_listing(conn, HOUR, ["trades", "news"])
        ledger.record_listing(conn, HOUR + timedelta(hours=1), [])
    with engine.connect() as conn:
        assert ledger.listed_feeds(conn, HOUR) == {"blogs", "news", "trades"}
        assert ledger.listed_feeds(conn, HOUR + timedelta(hours=1)) == frozenset()  # listed, no feed
        assert ledger.listed_feeds(conn, HOUR - timedelta(hours=1)) is None
