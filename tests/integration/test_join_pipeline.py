"""Join subscriptions through the real pipeline (issue 16): Postgres catalog, moto's S3 server, Spark
``local[2]``. Three generated hours of two RSS-like feeds, 300 generated join subscriptions; every
delivered pair is compared with Saxon running the same text over every message up to its hour.

The hours are routed out of order (h2, h0, h1) and joined on Spark's executors (the default
engine: the shared stage, subscriptions partitioned by value slice), then routed and joined again in
order, the last hour (whose window reaches back to the others) on Spark SQL (one query per
template): the objects and the ledger must not change (the two engines give the same pairs), and no
delivery version is added. A spy checks which engine paired each hour.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, text

from feedrouter.catalog import build_plan, load_plan
from feedrouter.delivery import read_part
from feedrouter.delivery.layout import witness_dir
from feedrouter.hours import batch_prefix
from feedrouter.limits import JoinLimits
from feedrouter.spark import BatchOptions, joins, route_batch
from feedrouter.spark.joinparts import partitioned_pairs
from feedrouter.spark.joins import JoinOptions, join_batch
from feedrouter.spark.joinsql import spark_pairs
from feedrouter.storage import FileStore, ObjectStore, open_store
from feedrouter.workload.joins import generate_feed_hours, generate_join_subscriptions
from tests.differential.join_oracle import SaxonJoinOracle
from tests.differential.join_pipeline import saxon_messages, saxon_results
from tests.differential.oracle import canonical
from tests.integration.rows import add_subscription
from tests.integration.spark_support import (
    add_feed,
    add_subscriber,
    deliveries,
    snapshot,
    spark_for_tests,
    stored_witnesses,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("spark")]

FEEDS = ("news", "blogs")
SUBSCRIBERS = ("ada", "bo", "cy")
LATENESS = timedelta(hours=1)
LAYOUT = "{prefix}/dt={date}/hour={hour}"


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with spark_for_tests("local[2]") as session:
        yield session


def _catalog(engine: Engine, bucket: str, subscriptions: dict[str, tuple[str, str]]) -> None:
    with engine.begin() as conn:
        for feed in FEEDS:
            add_feed(conn, feed, f"s3://{bucket}/in/{feed}")
            conn.execute(
                text(
                    "UPDATE feedrouter.feeds SET event_time_path = '//pubDate', event_time_format = 'rfc822',"
                    " allowed_lateness = interval '1 hour' WHERE name = :f"
                ),
                {"f": feed},
            )
        for name in SUBSCRIBERS:
            add_subscriber(conn, name, f"s3://{bucket}/out/{name}")
        for i, (sid, (feed, query)) in enumerate(subscriptions.items()):
            add_subscription(conn, SUBSCRIBERS[i % 3], feed, sid, query)


def _upload(generated: Mapping[str, Any], bucket: str) -> None:
    """Each generated feed's hours of messages into its input prefix in ``bucket``."""
    for feed, batches in generated.items():
        for batch in batches:
            inputs = open_store(batch_prefix(LAYOUT, f"s3://{bucket}/in/{feed}", batch.hour))
            for message in batch.messages:
                inputs.put(message.key, message.data)


def _route_and_join(
    engine: Engine,
    plans: ObjectStore,
    spark: Any,
    state: str,
    order: list[datetime],
    join_engine: str,
    engines: Mapping[datetime, str] | None = None,
) -> None:
    """Route the hours in ``order``, then join them in that order with ``join_engine`` (an hour
    in ``engines`` with the engine it names)."""
    options = BatchOptions(state_uri=state, max_part_bytes=4096)
    for hour in order:
        for feed in FEEDS:
            route_batch(engine, feed, hour, plans_store=plans, spark=spark, options=options)
    for hour in order:  # every hour's witnesses are written: each join stage finds its window
        chosen = (engines or {}).get(hour, join_engine)
        joining = JoinOptions(state_uri=state, stream_start=min(order), engine=chosen)
        for feed in FEEDS:
            join_batch(engine, feed, hour, plans_store=plans, options=joining, spark=spark)


def _delivered(engine: Engine, bucket: str) -> dict[str, list[tuple[tuple[Any, ...], bytes, str]]]:
    """Every join subscription's delivered pairs: (order key, body, delivery hour), from the parts."""
    outputs = open_store(f"s3://{bucket}/out")
    found: dict[str, list[tuple[tuple[Any, ...], bytes, str]]] = {}
    for key in outputs.list(""):
        if not key.rsplit("/", 1)[-1].startswith("part-"):
            continue
        subscription, hour = key.split("/")[1], key.split("/")[3:5]
        for result in read_part(outputs.get(key)):
            if result.pair is None:
                continue  # an ordinary subscription's result
            left, right = result.pair
            order = (left.hour, left.source, left.index, right.hour, right.source, right.index)
            found.setdefault(subscription, []).append((order, result.body, "/".join(hour)))
            # delivered in the hour of the later-arriving message
            assert f"dt={max(left.hour, right.hour)[:10]}/hour={max(left.hour, right.hour)[11:]}" == "/".join(
                hour
            )
    return found


def _engines_used(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, datetime]]:
    """A list that records each join stage's engine and hour from now on (``join_batch`` calls
    ``partitioned_deliveries`` or ``spark_pairs`` once per feed and hour)."""
    used: list[tuple[str, datetime]] = []

    def spy(name: str, real: Any) -> Any:
        def called(session: Any, stage: Any, hour: datetime, *args: Any, **kwargs: Any) -> Any:
            used.append((name, hour))
            return real(session, stage, hour, *args, **kwargs)

        return called

    monkeypatch.setattr(joins, "spark_pairs", spy("spark", joins.spark_pairs))
    monkeypatch.setattr(joins, "partitioned_deliveries", spy("partitioned", joins.partitioned_deliveries))
    return used


def test_joins_through_spark_s3_and_postgres_agree_with_saxon(
    spark: Any, catalog: Engine, s3_bucket: str, plans_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    generated = generate_feed_hours(seed=16, feeds=FEEDS, hours=3, items_per_hour=20, lateness=LATENESS)
    texts = generate_join_subscriptions(240, seed=16, feeds=FEEDS, own="news")
    texts += generate_join_subscriptions(60, seed=17, feeds=FEEDS, own="blogs")
    subscriptions = {f"j{i:03d}": ("news" if i < 240 else "blogs", t) for i, t in enumerate(texts)}
    _catalog(catalog, s3_bucket, subscriptions)
    feeds = {
        feed: {b.hour: [(m.key, m.data) for m in b.messages] for b in batches}
        for feed, batches in generated.items()
    }
    for feed, hours in feeds.items():
        for hour, messages in hours.items():
            inputs = open_store(batch_prefix(LAYOUT, f"s3://{s3_bucket}/in/{feed}", hour))
            for key, data in messages:
                inputs.put(key, data)
    plans = FileStore(plans_dir)
    built = {feed: build_plan(catalog, feed, plans) for feed in FEEDS}
    statuses = _statuses(catalog)
    assert statuses == {"valid": 300}, statuses
    loaded = load_plan(plans, built["news"].artifact_uri, built["news"].digest)
    news = loaded.joins
    # most of the news blocks are served by one base witness plan, found by their selections; it
    # binds every item, found by a walk of the parsed tree (as is the clock, //pubDate)
    assert news is not None and any(served.index for served in news.witnessing.served.values())
    assert set(news.witnessing.bases) & set(loaded.router._walked) and loaded.router._clocks
    hours = sorted(feeds["news"])
    state = f"s3://{s3_bucket}/state"

    # stage 2 on Spark's executors (the default engine), the hours routed out of order
    used = _engines_used(monkeypatch)
    _route_and_join(catalog, plans, spark, state, [hours[2], hours[0], hours[1]], "partitioned")
    assert sorted(used) == sorted(("partitioned", hour) for hour in hours for _ in FEEDS)
    first = snapshot(open_store(f"s3://{s3_bucket}/out"))
    ledger = [(r["subscription_name"], r["delivery_version"], r["digest"]) for r in deliveries(catalog)]

    delivered = _delivered(catalog, s3_bucket)
    expected = saxon_results(SaxonJoinOracle(), feeds, subscriptions, hours[-1], LATENESS)
    pairs = 0
    for sid in subscriptions:
        ours = sorted(delivered.get(sid, []))
        assert len({order for order, _, _ in ours}) == len(ours), f"{sid}: a pair delivered twice"
        got = b"".join(body for _, body, _ in ours)
        assert canonical(got) == canonical(expected[sid]), (sid, subscriptions[sid][1])
        pairs += len(ours)
    assert pairs >= 300 and sum(1 for sid in subscriptions if delivered.get(sid)) >= 100

    # again, in order, the last hour (whose window reaches back to the others) joined on Spark
    # SQL (one query per template): the same pairs, the same bytes. Spark SQL's pairs are also
    # compared with the other engines' in test_engines_give_the_same_pairs; joining all three
    # hours here on it took four of this test's six minutes.
    used.clear()
    _route_and_join(catalog, plans, spark, state, hours, "partitioned", {hours[-1]: "spark"})
    # each engine really paired its hours (a stage that skipped a joined hour would pass the rest)
    assert used == [
        (engine, hour)
        for hour in hours
        for engine in ["partitioned" if hour < hours[-1] else "spark"] * len(FEEDS)
    ]
    assert snapshot(open_store(f"s3://{s3_bucket}/out")) == first
    again = [(r["subscription_name"], r["delivery_version"], r["digest"]) for r in deliveries(catalog)]
    assert again == ledger  # no new delivery version
    with catalog.connect() as conn:
        untimed = conn.execute(text("SELECT sum(untimed) FROM feedrouter.batches")).scalar_one()
    assert untimed > 0  # the generator leaves some messages without a usable time


def _statuses(engine: Engine) -> dict[str, int]:
    with engine.connect() as conn:
        rows = conn.execute(text("SELECT status, count(*) FROM feedrouter.subscriptions GROUP BY status"))
        return {row[0]: row[1] for row in rows}


def test_a_new_join_subscription_is_back_filled_over_its_window(
    spark: Any, catalog: Engine, s3_bucket: str, plans_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hours routed before a join subscription existed lack its blocks: its first join stage
    routes them again from the inputs still in the store (witnesses only), then delivers the pairs
    its window reaches back to."""
    generated = generate_feed_hours(seed=18, feeds=FEEDS, hours=2, items_per_hour=15, lateness=LATENESS)
    feeds = {
        f: {b.hour: [(m.key, m.data) for m in b.messages] for b in batches}
        for f, batches in generated.items()
    }
    _catalog(catalog, s3_bucket, {})
    for feed, hours in feeds.items():
        for hour, messages in hours.items():
            inputs = open_store(batch_prefix(LAYOUT, f"s3://{s3_bucket}/in/{feed}", hour))
            for key, data in messages:
                inputs.put(key, data)
    plans = FileStore(plans_dir)
    hours = sorted(feeds["news"])
    state = f"s3://{s3_bucket}/state"
    options = BatchOptions(state_uri=state, inline=True)
    with catalog.begin() as conn:  # something to route, so that each feed has a plan
        add_subscription(conn, "ada", "news", "plain", "//item/title")
        add_subscription(conn, "bo", "blogs", "plain", "//item/title")
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
        route_batch(catalog, feed, hours[0], plans_store=plans, options=options)  # no join yet
    query = (
        'import module namespace fr = "urn:feedrouter:stream:1";\n'
        'for $a in fr:stream()//item, $b in fr:stream("blogs")//item\n'
        'where $a/author = $b/author and fr:within($a, $b, "PT3H")\n'
        "return <pair>{ $a/guid }{ $b/guid }</pair>"
    )
    with catalog.begin() as conn:
        add_subscription(conn, "bo", "news", "late", query)
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
        route_batch(catalog, feed, hours[1], plans_store=plans, options=options)
    joining = JoinOptions(state_uri=state, stream_start=hours[0])
    with pytest.raises(Exception, match="FR610"):  # without a back-fill: refused, naming the hours
        join_batch(catalog, "news", hours[1], plans_store=plans, options=joining)
    backfilling = JoinOptions(state_uri=state, stream_start=hours[0], backfill=BatchOptions(inline=True))
    required: list[frozenset[tuple[str, datetime]]] = []
    real = joins._delivered

    def spy(stage: Any, spec: Any, targets: Any, source: Any, *args: Any) -> Any:
        required.append(source.required)
        return real(stage, spec, targets, source, *args)

    monkeypatch.setattr(joins, "_delivered", spy)
    report = join_batch(catalog, "news", hours[1], plans_store=plans, options=backfilling, spark=spark)
    # the window's hours from the stream's start, back-filled ones too: one gone while pairing fails it
    assert required == [frozenset((feed, hour) for feed in FEEDS for hour in hours)]
    delivered = [(order, body) for order, body, _ in _delivered(catalog, s3_bucket).get("late", [])]
    oracle = SaxonJoinOracle()
    up_to = [oracle.run(saxon_messages(feeds, hour, LATENESS), "news", query) for hour in hours]
    # the pairs of hour 0 alone were hour 0's join stage's, which ran before the subscription existed
    expected = _after(up_to[1], up_to[0])
    later = [body for _, body in sorted(delivered)]
    assert report.pairs == len(later) > 0
    assert [canonical(item) for item in later] == [canonical(item) for item in expected]
    # back-filled already (by another join stage, say, while this one waited for the lease): left
    from feedrouter.spark.backfill import backfill_witnesses
    from feedrouter.spark.tasks import WitnessReport

    again = backfill_witnesses(
        catalog, "news", hours[0], plans_store=plans, options=BatchOptions(inline=True, state_uri=state)
    )
    assert again == WitnessReport(0, 0, 0, 0)


@pytest.mark.parametrize("unadoptable", [False, True], ids=["alone", "beside-one-that-cannot-be"])
def test_a_join_subscription_sharing_a_base_is_back_filled_without_routing_again(
    spark: Any,
    catalog: Engine,
    s3_bucket: str,
    plans_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    unadoptable: bool,
) -> None:
    """Hours routed with blocks that share one base witness plan keep the plan's rows whole and
    record what they hold. A join subscription added later whose block the base serves, with
    leaves and fragments the rows hold, is back-filled over its window by rewriting each hour's
    ``blocks.json``: with the window's inputs deleted (routing again would fail, FR612), its
    first join stage delivers exactly the pairs Saxon gives, and the hours' tables are unchanged.
    The feed's plan build is loaded once for the stage and all the hours it back-fills. Added
    beside a join that reads a leaf the rows never held (``unadoptable``: the hours would have to be
    routed again, and their inputs are gone), it is still covered so and paired; only that join is
    left out (FR612)."""
    from lxml import etree

    from feedrouter.spark.witnesses import blocks_of_hour

    generated = generate_feed_hours(seed=24, feeds=FEEDS, hours=2, items_per_hour=15, lateness=LATENESS)
    feeds = {
        f: {b.hour: [(m.key, m.data) for m in b.messages] for b in batches}
        for f, batches in generated.items()
    }
    hours = sorted(feeds["news"])
    prolog = 'import module namespace fr = "urn:feedrouter:stream:1";\n'

    def query(binding: str) -> str:
        return prolog + (
            f'for $a in fr:stream(){binding}, $b in fr:stream("blogs")//item\n'
            'where $a/author = $b/author and fr:within($a, $b, "PT3H")\n'
            "return <pair>{ $a/guid }{ $b/guid }</pair>"
        )

    # one broad block and 16 selective ones on the news feed: one base serves them (MIN_SHARED)
    earlier = {"broad": ("news", query("//item"))}
    earlier |= {f"c{i}": ("news", query(f'//item[category = "none-{i}"]')) for i in range(16)}
    _catalog(catalog, s3_bucket, earlier)
    _upload(generated, s3_bucket)
    plans, state = FileStore(plans_dir), f"s3://{s3_bucket}/state"
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
        for hour in hours:
            route_batch(
                catalog, feed, hour, plans_store=plans, options=BatchOptions(state_uri=state, inline=True)
            )
    oracle = SaxonJoinOracle()
    categories = sorted(
        {c.text or "" for _, data in feeds["news"][hours[1]] for c in etree.fromstring(data).iter("category")}
    )
    for category in categories:  # one whose subscription has pairs in hour 1
        added = query(f'//item[category = "{category}"]')
        up_to = [oracle.run(saxon_messages(feeds, hour, LATENESS), "news", added) for hour in hours]
        expected = _after(up_to[1], up_to[0])
        if expected:
            break
    assert expected, "no category of the generated hour pairs"
    with catalog.begin() as conn:
        add_subscription(conn, "ada", "news", "added", added)
        if unadoptable:  # the broad block, joined on a title
            add_subscription(conn, "bo", "news", "titled", query("//item").replace("author", "title"))
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
    store = open_store(state)
    tables = {
        hour: {name: store.get(f"{witness_dir('news', hour)}/{name}.parquet") for name in ("roots", "values")}
        for hour in hours
    }
    for hour in hours:  # routing the window again is impossible now
        gone = open_store(batch_prefix(LAYOUT, f"s3://{s3_bucket}/in/news", hour))
        for key in gone.list(""):
            gone.delete(key)
    before = {hour: blocks_of_hour(store, "news", hour) for hour in hours}
    backfilling = JoinOptions(state_uri=state, stream_start=hours[0], backfill=BatchOptions(inline=True))
    from feedrouter.spark import backfill

    loads: list[str] = []
    real = joins.load_plan_build

    def counted(engine: Engine, feed: str, store: ObjectStore) -> Any:
        loads.append(feed)
        return real(engine, feed, store)

    monkeypatch.setattr(joins, "load_plan_build", counted)
    monkeypatch.setattr(backfill, "load_plan_build", counted)
    report = join_batch(catalog, "news", hours[1], plans_store=plans, options=backfilling, spark=spark)
    # the stage's, and its back-fill of both hours reads no other (the blogs hours lack the title
    # too, and are routed again from their inputs, with the blogs plan)
    assert loads == (["news", "blogs"] if unadoptable else ["news"])
    assert report.cut_off == (("bo/titled",) if unadoptable else ())
    for hour in hours:
        after = blocks_of_hour(store, "news", hour)
        assert after is not None and before[hour] is not None and len(after - before[hour]) == 1
        assert {
            name: store.get(f"{witness_dir('news', hour)}/{name}.parquet") for name in ("roots", "values")
        } == tables[hour]
    delivered = [body for _, body, _ in sorted(_delivered(catalog, s3_bucket).get("added", []))]
    assert [canonical(item) for item in delivered] == [canonical(item) for item in expected]


def test_an_hour_to_back_fill_whose_inputs_are_gone_fails_the_stage_naming_it(
    catalog: Engine, s3_bucket: str, plans_dir: Path
) -> None:
    """An hour that routed documents, whose witnesses and inputs are both gone, cannot be
    back-filled: the join stage fails with FR612 naming the hour and its inputs (an empty hour
    written in its place would cost every join whose window reaches it its pairs, without a
    word), and no witnesses are written for it."""
    from feedrouter.errors import InputsGone
    from feedrouter.spark.witnesses import delete_hour, has_hour

    generated = generate_feed_hours(seed=19, feeds=FEEDS, hours=2, items_per_hour=5, lateness=LATENESS)
    query = (
        'import module namespace fr = "urn:feedrouter:stream:1";\n'
        'for $a in fr:stream()//item, $b in fr:stream("blogs")//item\n'
        'where $a/author = $b/author and fr:within($a, $b, "PT3H")\n'
        "return <pair>{ $a/guid }{ $b/guid }</pair>"
    )
    _catalog(catalog, s3_bucket, {"j": ("news", query)})
    _upload(generated, s3_bucket)
    plans = FileStore(plans_dir)
    hours = sorted(batch.hour for batch in generated["news"])
    state = f"s3://{s3_bucket}/state"
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
        for hour in hours:
            route_batch(
                catalog, feed, hour, plans_store=plans, options=BatchOptions(state_uri=state, inline=True)
            )
    delete_hour(open_store(state), "news", hours[0])
    gone = open_store(batch_prefix(LAYOUT, f"s3://{s3_bucket}/in/news", hours[0]))
    for key in gone.list(""):
        gone.delete(key)
    backfilling = JoinOptions(state_uri=state, stream_start=hours[0], backfill=BatchOptions(inline=True))
    named = rf"news {hours[0]:%Y-%m-%dT%H} must be back-filled, but its inputs are gone .* routed 5 documents"
    with pytest.raises(InputsGone, match=named):
        join_batch(catalog, "news", hours[1], plans_store=plans, options=backfilling)
    assert not has_hour(open_store(state), "news", hours[0])


def test_a_join_whose_lost_hour_cannot_be_back_filled_costs_the_other_joins_nothing(
    spark: Any, catalog: Engine, s3_bucket: str, plans_dir: Path
) -> None:
    """A join subscription added later that needs what an hour of its window lacks (a leaf the
    hour's rows never read), that hour's inputs gone: it cannot be back-filled (FR612). Only it is
    left out, with a ``failed`` row naming the hour; the feed's other join, which the hour holds
    everything for, is paired and delivered as before (the same bytes, no new delivery version).
    A join delivered before an hour of its window was lost keeps that delivery."""
    from feedrouter.spark.witnesses import delete_hour

    generated = generate_feed_hours(seed=25, feeds=FEEDS, hours=2, items_per_hour=15, lateness=LATENESS)
    prolog = 'import module namespace fr = "urn:feedrouter:stream:1";\n'

    def query(leaf: str) -> str:
        return prolog + (
            'for $a in fr:stream()//item, $b in fr:stream("blogs")//item\n'
            f'where $a/{leaf} = $b/{leaf} and fr:within($a, $b, "PT3H")\n'
            "return <pair>{ $a/guid }{ $b/guid }</pair>"
        )

    _catalog(catalog, s3_bucket, {"old": ("news", query("author"))})
    _upload(generated, s3_bucket)
    plans, state = FileStore(plans_dir), f"s3://{s3_bucket}/state"
    hours = sorted(batch.hour for batch in generated["news"])
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
        for hour in hours:
            route_batch(
                catalog, feed, hour, plans_store=plans, options=BatchOptions(state_uri=state, inline=True)
            )
    backfilling = JoinOptions(state_uri=state, stream_start=hours[0], backfill=BatchOptions(inline=True))
    first = join_batch(catalog, "news", hours[1], plans_store=plans, options=backfilling, spark=spark)
    assert first.pairs > 0 and not first.cut_off
    delivered = snapshot(open_store(f"s3://{s3_bucket}/out"))
    ledger = [(r["subscription_name"], r["delivery_version"], r["digest"]) for r in deliveries(catalog)]

    with catalog.begin() as conn:  # joins on title: no hour routed so far read it
        add_subscription(conn, "cy", "news", "new", query("title"))
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
    gone = open_store(batch_prefix(LAYOUT, f"s3://{s3_bucket}/in/news", hours[0]))
    for key in gone.list(""):
        gone.delete(key)
    report = join_batch(catalog, "news", hours[1], plans_store=plans, options=backfilling, spark=spark)

    assert report.cut_off == ("cy/new",) and report.pairs == first.pairs
    assert (report.subscriptions, report.deliveries) == (2, first.deliveries)
    assert "[FR612]" in report.describe() and not report.failed
    # nothing for "new"; "old" as before (its manifest names the plan build that wrote it)
    assert _parts(snapshot(open_store(f"s3://{s3_bucket}/out"))) == _parts(delivered)
    rows = deliveries(catalog)
    assert [
        (r["subscription_name"], r["delivery_version"], r["digest"]) for r in rows[: len(ledger)]
    ] == ledger
    [failed] = rows[len(ledger) :]
    assert (failed["subscription_name"], failed["status"], failed["error_code"]) == ("new", "failed", "FR612")
    assert (
        f"news {hours[0]:%Y-%m-%dT%H} must be back-filled, but its inputs are gone" in failed["error_message"]
    )
    again = join_batch(catalog, "news", hours[1], plans_store=plans, options=backfilling, spark=spark)
    assert again.cut_off == ("cy/new",) and len(deliveries(catalog)) == len(rows)  # nothing new to say

    # the blogs hour 0 lost too (its witnesses deleted, then its inputs): both joins read it, but
    # "same" (news with news) does not, so the stage goes on; "old" was delivered for the hour
    # when its window was whole, and that row and its folder stand (nothing could make them
    # again); "new" now says which hours cost it
    with catalog.begin() as conn:
        add_subscription(conn, "ada", "news", "same", query("author").replace('"blogs"', ""))
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
    delete_hour(open_store(state), "blogs", hours[0])
    gone = open_store(batch_prefix(LAYOUT, f"s3://{s3_bucket}/in/blogs", hours[0]))
    for key in gone.list(""):
        gone.delete(key)
    last = join_batch(catalog, "news", hours[1], plans_store=plans, options=backfilling, spark=spark)
    assert last.cut_off == ("ada/old", "cy/new") and last.pairs > 0 and last.subscriptions == 3
    added = deliveries(catalog)[len(rows) :]
    assert sorted((r["subscription_name"], r["status"]) for r in added) == [
        ("new", "failed"),
        ("same", "delivered"),
    ]
    [reason] = [r["error_message"] for r in added if r["subscription_name"] == "new"]
    assert f"news {hours[0]:%Y-%m-%dT%H}" in reason and f"blogs {hours[0]:%Y-%m-%dT%H}" in reason
    assert _parts(snapshot(open_store(f"s3://{s3_bucket}/out"))).keys() >= _parts(delivered).keys()


def _parts(objects: Mapping[str, bytes]) -> dict[str, bytes]:
    return {key: data for key, data in objects.items() if not key.endswith("/_manifest.json")}


def _latest_rows(engine: Engine, feed: str) -> dict[str, dict[str, Any]]:
    """Each subscription's latest delivery row of the feed's batches, by subscription name."""
    query = (
        "SELECT DISTINCT ON (d.subscription_name) d.* FROM feedrouter.deliveries d"
        " JOIN feedrouter.batches b ON b.id = d.batch_id JOIN feedrouter.feeds f ON f.id = b.feed_id"
        " WHERE f.name = :f ORDER BY d.subscription_name, d.delivery_version DESC, d.id DESC"
    )
    with engine.connect() as conn:
        return {row.subscription_name: dict(row._mapping) for row in conn.execute(text(query), {"f": feed})}


def test_a_feeds_join_limits_reach_every_engine(
    spark: Any, catalog: Engine, s3_bucket: str, plans_dir: Path
) -> None:
    """The limits are the feed's catalog settings, carried by its plan to each engine, the
    partitioned engine's tasks included: a pair whose result alone passes ``max_result_bytes`` is
    left out (FR310, named in a delivered row) and the others delivered; an hour past
    ``max_join_result_bytes`` or ``max_join_pairs`` is withheld (FR313), naming the setting."""
    generated = generate_feed_hours(seed=23, feeds=FEEDS, hours=1, items_per_hour=12, lateness=LATENESS)
    prolog = (
        'import module namespace fr = "urn:feedrouter:stream:1";\n'
        "for $a in fr:stream()//item, $b in fr:stream()//item\n"
        'where $a/category = $b/category and fr:within($a, $b, "PT1H")\n'
    )
    subscriptions = {
        "whole": ("news", prolog + "return <pair>{ $a }{ $b }</pair>"),
        "guids": ("news", prolog + "return <pair>{ $a/guid }</pair>"),
    }
    _catalog(catalog, s3_bucket, subscriptions)
    _upload(generated, s3_bucket)
    plans = FileStore(plans_dir)
    (hour,) = (batch.hour for batch in generated["news"])
    state = f"s3://{s3_bucket}/state"
    for feed in FEEDS:
        build_plan(catalog, feed, plans)
        route_batch(
            catalog, feed, hour, plans_store=plans, options=BatchOptions(state_uri=state, inline=True)
        )

    def joined(engine_name: str, **settings: int) -> dict[str, dict[str, Any]]:
        assignments = ", ".join(f"{name} = {value}" for name, value in settings.items())
        with catalog.begin() as conn:
            conn.execute(text(f"UPDATE feedrouter.feeds SET {assignments} WHERE name = 'news'"))
        build_plan(catalog, "news", plans)
        options = JoinOptions(state_uri=state, stream_start=hour, engine=engine_name)
        join_batch(catalog, "news", hour, plans_store=plans, options=options, spark=spark)
        return _latest_rows(catalog, "news")

    defaults = {"max_result_bytes": 16 << 20, "max_join_pairs": 100_000, "max_join_result_bytes": 64 << 20}
    unlimited = joined("python", **defaults)
    pairs = unlimited["whole"]["result_count"]
    assert pairs == unlimited["guids"]["result_count"] > 2 and unlimited["whole"]["error_code"] is None
    sizes = sorted(len(r.body) for r in _results(s3_bucket, "whole"))
    assert len(sizes) == pairs and sizes[0] < sizes[-1]  # some results larger than others
    limit = sizes[len(sizes) // 2]
    assert max(len(r.body) for r in _results(s3_bucket, "guids")) < sizes[0]  # none of them past it
    left_out = sum(1 for size in sizes if size > limit)
    for engine_name in ("python", "spark", "partitioned"):
        rows = joined(engine_name, **{**defaults, "max_result_bytes": limit})
        whole, guids = rows["whole"], rows["guids"]
        assert (whole["status"], whole["result_count"], whole["error_code"]) == (
            "delivered",
            pairs - left_out,
            "FR310",
        ), engine_name
        assert f"max_result_bytes ({limit})" in whole["error_message"], engine_name
        assert sorted(len(r.body) for r in _results(s3_bucket, "whole")) == [s for s in sizes if s <= limit]
        assert (guids["result_count"], guids["error_code"]) == (pairs, None), engine_name
        guid_bytes = guids["bytes"]
    rows = joined("partitioned", **{**defaults, "max_join_result_bytes": sum(sizes) - 1})
    assert (rows["whole"]["status"], rows["whole"]["error_code"]) == ("withheld", "FR313")
    assert "max_join_result_bytes" in rows["whole"]["error_message"]
    assert rows["guids"]["status"] == "delivered" and rows["guids"]["bytes"] == guid_bytes
    rows = joined("partitioned", **{**defaults, "max_join_pairs": pairs - 1})
    assert all(rows[name]["status"] == "withheld" for name in subscriptions)
    assert "max_join_pairs" in rows["guids"]["error_message"]


def _results(bucket: str, subscription: str) -> list[Any]:
    """The results in a subscription's folders now (of its latest delivery)."""
    outputs = open_store(f"s3://{bucket}/out")
    return [
        result
        for key in outputs.list("")
        if key.split("/")[1] == subscription and key.rsplit("/", 1)[-1].startswith("part-")
        for result in read_part(outputs.get(key))
    ]


def _after(items: list[bytes], earlier: list[bytes]) -> list[bytes]:
    """``items`` without ``earlier``, a subsequence of them (the results of fewer messages)."""
    rest, position = [], 0
    for item in items:
        if position < len(earlier) and item == earlier[position]:
            position += 1
        else:
            rest.append(item)
    assert position == len(earlier)
    return rest


def test_both_engines_stop_collecting_a_subscription_past_its_cap(spark: Any, tmp_path: Path) -> None:
    """A low-cardinality join (every message pairs with every other): past the cap, both engines
    keep the first cap + 1 pairs in XQuery's order, and the subscription is withheld."""
    from datetime import timezone

    from feedrouter.join.plan import JoinSet
    from feedrouter.join.relations import HourWitnesses, MessageRef
    from feedrouter.join.stage import JoinStage
    from feedrouter.lang import parse

    query = (
        'import module namespace fr = "urn:feedrouter:stream:1";\n'
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k "
        "and fr:within($a, $b, 'PT1H') return <p/>"
    )
    joins = JoinSet()
    joins.add("s", parse(query), "f")
    (block,) = joins.specs
    hour = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
    witnesses = HourWitnesses("f", hour, (block,))
    for number in range(40):
        witnesses.messages.append(MessageRef(f"m{number:02d}.xml", 0, hour + timedelta(minutes=number)))
        witnesses.roots.setdefault(block, []).append((number, 0))
        witnesses.values[(number, 0)] = {"k": ("same",)}
    read = lambda feed, h: witnesses if (feed, h) == ("f", hour) else None  # noqa: E731
    stage = JoinStage(joins.plans.values(), joins.specs, limits=JoinLimits(pairs_per_hour=5))
    in_process = stage.pairs(hour, read)["s"]
    source = stored_witnesses(tmp_path, [witnesses])
    on_spark = spark_pairs(spark, list(joins.plans.values()), hour, source, timedelta(hours=1), max_pairs=5)
    on_spark = on_spark["s"]
    assert on_spark == in_process[:6] and len(in_process) == 6  # the engine filters as it goes
    parted = partitioned_pairs(
        spark, list(joins.plans.values()), hour, source, timedelta(hours=1), max_pairs=5
    )
    assert parted["s"] == in_process
    # the stage sized the session's shuffles to its cores while it ran, and gave the default back
    assert spark.conf.get("spark.sql.shuffle.partitions") == "200"
    assert stage.deliver(hour, read, {"s": on_spark})["s"].withheld is not None


def test_the_engines_give_the_same_pairs_over_generated_hours(spark: Any, tmp_path: Path) -> None:
    """Spark SQL's query per template and the partitioned stage on Spark's executors (in more parts
    than the slices, so that slices are split) against the in-process stage (itself compared with
    Saxon in tests/differential) on generated hours of two feeds and 400 join subscriptions of both
    feeds: every subscription's pairs of every hour equal, Spark SQL's of the last hour (its window
    reaches back to the others; a Spark SQL stage of this size takes half a minute an hour)."""
    from tests.differential.join_pipeline import JoinPipeline

    generated = generate_feed_hours(seed=23, feeds=FEEDS, hours=3, items_per_hour=30, lateness=LATENESS)
    texts = generate_join_subscriptions(300, seed=23, feeds=FEEDS, own="news")
    texts += generate_join_subscriptions(100, seed=24, feeds=FEEDS, own="blogs")
    pipeline = JoinPipeline(
        {f"j{i:03d}": ("news" if i < 300 else "blogs", t) for i, t in enumerate(texts)}, FEEDS
    )
    for feed, batches in generated.items():
        for batch in batches:
            pipeline.collect(feed, batch.hour, [(m.key, m.data) for m in batch.messages])
    read = lambda feed, h: pipeline.store.get((feed, h))  # noqa: E731
    plans = list(pipeline.joins.plans.values())
    source = stored_witnesses(tmp_path, pipeline.store.values())
    total = 0
    for batch in generated["news"]:
        in_process = pipeline.stage.pairs(batch.hour, read)
        if batch is generated["news"][-1]:
            on_spark = spark_pairs(spark, plans, batch.hour, source, LATENESS)
            assert {sid: on_spark.get(sid, []) for sid in in_process} == in_process
        for parts in (3, 64):
            parted = partitioned_pairs(spark, plans, batch.hour, source, LATENESS, parts=parts)
            assert parted == in_process
        total += sum(len(pairs) for pairs in in_process.values())
    assert total >= 500  # not a comparison of empty sets


@pytest.mark.shared_data
def test_the_engines_give_the_same_pairs_over_real_guardian_stories(
    spark: Any, tmp_path: Path, shared_data: Path
) -> None:
    """The same over a real feed (:mod:`tests.differential.real_feeds`, whose in-process pairs
    tests/differential compares with Saxon): a day of the Guardian's stories in two feeds, several
    categories a story, namespaced leaves, an attribute below a child. The partitioned stage every
    hour, Spark SQL the last (its window reaches back to the others)."""
    from tests.differential.join_pipeline import JoinPipeline
    from tests.differential.real_feeds import GUARDIAN_JOINS, guardian_feeds

    feeds, hours = guardian_feeds(shared_data)
    pipeline = JoinPipeline(GUARDIAN_JOINS, list(feeds))
    for feed, by_hour in feeds.items():
        for hour, messages in by_hour.items():
            pipeline.collect(feed, hour, messages)
    read = lambda feed, h: pipeline.store.get((feed, h))  # noqa: E731
    plans = list(pipeline.joins.plans.values())
    source = stored_witnesses(tmp_path, pipeline.store.values())
    total = 0
    for hour in hours:
        in_process = pipeline.stage.pairs(hour, read)
        assert partitioned_pairs(spark, plans, hour, source, LATENESS, parts=3) == in_process, hour
        if hour == hours[-1]:
            on_spark = spark_pairs(spark, plans, hour, source, LATENESS)
            assert {sid: on_spark.get(sid, []) for sid in in_process} == in_process
        total += sum(len(pairs) for pairs in in_process.values())
    assert total >= 50  # not a comparison of empty sets


def test_a_leaf_compared_twice_may_match_with_a_different_value_each_time(spark: Any, tmp_path: Path) -> None:
    """``$a/category = $b/category and $a/category = $b/title``: each general comparison holds on
    its own (XQuery: some value of each side equal), so an item with categories x and y pairs with
    one whose category is x and title y. Both engines find it."""
    from datetime import timezone

    from feedrouter.join.stage import JoinStage
    from tests.unit.join.support import bound_hour, join_set

    joins = join_set(
        "for $a in fr:stream()//item, $b in fr:stream()//item "
        "where $a/category = $b/category and $a/category = $b/title "
        "and fr:followed-by($a, $b, 'PT1H') return <p/>"
    )
    hour = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
    leaves = [
        {"category": ("x", "y"), "title": ("t",)},
        {"category": ("x",), "title": ("y",)},  # pairs with 0 through two different values
        {"category": ("y",), "title": ("y",)},  # pairs with 0 through one value
        {"category": ("x",), "title": ("z",)},  # pairs with none
    ]
    witnesses = bound_hour(joins, hour, leaves)
    read = lambda feed, h: witnesses if (feed, h) == ("f", hour) else None  # noqa: E731
    expected = [((hour, 0, 0), (hour, 1, 0)), ((hour, 0, 0), (hour, 2, 0))]
    assert JoinStage(joins.plans.values(), joins.specs).pairs(hour, read)["s0"] == expected
    source = stored_witnesses(tmp_path, [witnesses])
    assert spark_pairs(spark, list(joins.plans.values()), hour, source, timedelta(hours=1))["s0"] == expected
    assert (
        partitioned_pairs(spark, list(joins.plans.values()), hour, source, timedelta(hours=1))["s0"]
        == expected
    )


def test_the_query_of_a_templates_subscriptions_reads_its_node_pairs_from_the_cache(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A template's node pairs are computed once and cached; the query finding their subscriptions
    reads them from the cache. Spark does not match a cached query holding a CTE inside another
    query holding one: the pairs were computed again by every query reading them (three quarters
    of a stage's time at the benchmark's scale)."""
    from datetime import timezone

    from feedrouter.spark import joinsql
    from tests.unit.join.support import bound_hour, join_set

    joins = join_set(
        "for $a in fr:stream()//item, $b in fr:stream()//item "
        "where $a/k = $b/k and $a/j = $b/j and fr:followed-by($a, $b, 'PT1H') return <p/>"
    )
    hour = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
    witnesses = bound_hour(joins, hour, [{"k": ("same",), "j": (str(number % 2),)} for number in range(4)])
    leaves: list[list[tuple[str, str]]] = []
    collect = joinsql._collect

    def spied(frame: Any, found: dict[str, list[Any]]) -> None:
        seq = frame._jdf.queryExecution().withCachedData().collectLeaves()
        nodes = [seq.apply(i) for i in range(seq.size())]
        leaves.append([(node.nodeName(), node.output().mkString(",")) for node in nodes])
        collect(frame, found)

    monkeypatch.setattr(joinsql, "_collect", spied)
    source = stored_witnesses(tmp_path, [witnesses])
    pairs = spark_pairs(spark, list(joins.plans.values()), hour, source, timedelta(hours=1))
    assert pairs["s0"] == [((hour, 0, 0), (hour, 2, 0)), ((hour, 1, 0), (hour, 3, 0))]
    (read,) = leaves
    cached = [output for name, output in read if name == "InMemoryRelation"]
    assert any("lset#" in output and "l_time#" in output for output in cached), read


def test_each_part_of_the_population_has_a_task_of_its_own(spark: Any) -> None:
    from pyspark.sql.functions import spark_partition_id

    from feedrouter.spark.joinparts import parts_frame

    for parts in (2, 5, 64):
        frame = parts_frame(spark, [(number, b"") for number in range(parts)])
        placed = frame.select(spark_partition_id().alias("task"), "part").collect()
        assert len({row.task for row in placed}) == parts, parts


def test_a_damaged_hour_of_the_window_fails_the_stage_with_its_own_error(spark: Any, tmp_path: Path) -> None:
    """The executors read the window's hours: one of them damaged fails the stage with FR611 (what
    to delete, terminal: not retried), rebuilt from the task's error, never a bare Spark error."""
    from datetime import timezone

    from feedrouter.catalog import Target
    from feedrouter.delivery import PlanRef
    from feedrouter.errors import WitnessesUnreadable
    from feedrouter.join.stage import JoinStage
    from feedrouter.spark.joins import _delivered
    from feedrouter.spark.spec import JobSpec
    from tests.unit.join.support import bound_hour, join_set

    joins = join_set(
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k"
        " and fr:within($a, $b, 'PT1H') return <p/>"
    )
    hour = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
    hours = [bound_hour(joins, when, [{"k": ("1",)}] * 3) for when in (hour - timedelta(hours=1), hour)]
    source = stored_witnesses(tmp_path, hours)
    store = source.stores.open(source.state_uri)
    key = "witnesses/f/dt=2026-05-01/hour=07/roots.parquet"
    store.put(key, store.get(key)[:40])
    stage = JoinStage(joins.plans.values(), joins.specs, lateness=timedelta(hours=1))
    spec = JobSpec("f", hour, "", None, PlanRef(3, "d" * 64, 7), source.stores, 1 << 20, 1 << 20)
    targets = {sid: Target(1, "s", "alice", (tmp_path / "out").as_uri()) for sid in joins.plans}
    with pytest.raises(WitnessesUnreadable, match=r"roots\.parquet of the join witnesses of f 2026-05-01T07"):
        _delivered(stage, spec, targets, source, JoinOptions(), spark)
    assert not (tmp_path / "out").exists()  # nothing delivered from a window it could not read


@pytest.mark.parametrize("engine", ["python", "spark", "partitioned"])
def test_an_hour_of_the_window_deleted_while_the_stage_runs_fails_it_to_be_retried(
    spark: Any, tmp_path: Path, engine: str
) -> None:
    """An hour the stage found written before it began (``WitnessSource.required``) and the
    retention DAG deleted since is FR609, transient, for every engine: the stage is retried and
    back-fills it, where pairing without it would lose its pairs without a word. Nothing is
    delivered. An hour the stage did not find written (before the stream began) is no error."""
    from dataclasses import replace
    from datetime import timezone

    from feedrouter.catalog import Target
    from feedrouter.delivery import PlanRef
    from feedrouter.errors import WitnessesNotReady
    from feedrouter.join.stage import JoinStage
    from feedrouter.spark.joins import _delivered
    from feedrouter.spark.spec import JobSpec
    from feedrouter.spark.witnesses import delete_hour
    from tests.unit.join.support import bound_hour, join_set

    joins = join_set(
        "for $a in fr:stream()//item, $b in fr:stream()//item where $a/k = $b/k"
        " and fr:within($a, $b, 'PT1H') return <p/>"
    )
    hour = datetime(2026, 5, 1, 8, tzinfo=timezone.utc)
    earlier = hour - timedelta(hours=1)
    hours = [bound_hour(joins, when, [{"k": ("1",)}] * 3) for when in (earlier, hour)]
    source = stored_witnesses(tmp_path, hours)
    delete_hour(source.stores.open(source.state_uri), "f", earlier)
    stage = JoinStage(joins.plans.values(), joins.specs, lateness=timedelta(hours=1))
    spec = JobSpec("f", hour, "", None, PlanRef(3, "d" * 64, 7), source.stores, 1 << 20, 1 << 20)
    targets = {sid: Target(1, "s", "alice", (tmp_path / "out").as_uri()) for sid in joins.plans}
    required = replace(source, required=frozenset({("f", earlier), ("f", hour)}))
    options = JoinOptions(engine=engine)
    with pytest.raises(WitnessesNotReady, match=r"f 2026-05-01T07 were written .* are gone"):
        _delivered(stage, spec, targets, required, options, spark)
    assert not (tmp_path / "out").exists()
    not_required = replace(source, required=frozenset({("f", hour)}))
    assert _delivered(stage, spec, targets, not_required, options, spark)  # hour 08's own pairs
