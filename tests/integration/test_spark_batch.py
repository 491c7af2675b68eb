"""Hourly batches on Spark ``local[2]``: Postgres catalog, input and deliveries on moto's S3 server.

Every batch is compared with the single-process loop over the same inputs (same splitter, routing
and part writer): the subscribers' prefixes must hold exactly those objects, byte for byte.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from sqlalchemy import Engine, text

from feedrouter.catalog import CompiledPlan
from feedrouter.cli import main
from feedrouter.delivery import MANIFEST, SUCCESS, PlanRef, read_part
from feedrouter.spark import BatchOptions, BatchReport, NoPlanBuildError, route_batch
from feedrouter.spark.cli import route_batch_command
from feedrouter.storage import FileStore, ObjectStore, open_store
from feedrouter.workload import dtds, generate_documents
from tests.integration.rows import add_subscription
from tests.integration.spark_support import (
    HOUR,
    HOUR_TEXT,
    PART_BYTES,
    NewsFeed,
    add_feed,
    assert_interrupted_by_its_tag,
    assert_ledger_matches,
    batches,
    build,
    deliveries,
    expected_outputs,
    local_run,
    news_catalog,
    news_inputs,
    snapshot,
    spark_for_tests,
    upload,
)

pytestmark = [pytest.mark.integration, pytest.mark.xdist_group("spark")]

News = tuple[PlanRef, CompiledPlan, dict[str, bytes]]


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    with spark_for_tests("local[2]") as session:
        yield session


@pytest.fixture
def plans(plans_dir: Path) -> FileStore:
    return FileStore(plans_dir)


@pytest.fixture
def feed(s3_bucket: str) -> NewsFeed:
    return NewsFeed("news", f"s3://{s3_bucket}/in/news", f"s3://{s3_bucket}/out")


@pytest.fixture
def news(catalog: Engine, feed: NewsFeed, plans: FileStore) -> News:
    """The news feed with its plan built and one hour of messages uploaded."""
    news_catalog(catalog, feed)
    inputs = news_inputs()
    upload(open_store(feed.hour_prefix), inputs)
    ref, plan = build(catalog, plans)
    return ref, plan, inputs


def route(
    engine: Engine, plans: ObjectStore, spark: Any, feed: str = "news", progress: Any = None, **options: Any
) -> BatchReport:
    options = {"max_part_bytes": PART_BYTES, **options}
    chosen = BatchOptions(**options)
    return route_batch(engine, feed, HOUR, plans_store=plans, spark=spark, options=chosen, progress=progress)


def test_pyspark_is_the_version_of_its_jvm(spark: Any) -> None:
    import pyspark

    # pyspark-client (pulled in by the Airflow provider) overwrites pyspark's Python files.
    assert pyspark.__version__ == spark.version


def test_route_batch_delivers_what_the_local_loop_delivers(
    spark: Any,
    catalog: Engine,
    catalog_url: str,
    feed: NewsFeed,
    news: News,
    plans: FileStore,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    ref, plan, inputs = news
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", catalog_url)
    monkeypatch.setenv("FEEDROUTER_PLANS_URI", plans.uri)
    args = ["--feed", "news", "--hour", HOUR_TEXT, "--max-part-bytes", str(PART_BYTES)]
    result = CliRunner().invoke(route_batch_command, args)
    assert result.exit_code == 0, result.output
    assert f"of news {HOUR_TEXT} succeeded with plan build {ref.id}" in result.output

    run = local_run(plan, inputs)
    expected = expected_outputs(plan, ref, run, "news")
    actual = snapshot(open_store(feed.output_base))
    assert actual == expected
    assert any(uri.endswith("/part-00001.xml") for uri in actual)  # several parts somewhere
    assert sum(r.source == "batch-000.xml" for rs in run.results.values() for r in rs) >= 3
    _assert_manifests_describe_their_parts(actual)
    assert_ledger_matches(catalog, plan, run, expected)
    _assert_results_are_the_local_cli_results(catalog, plan, inputs, actual, tmp_path)


def _assert_manifests_describe_their_parts(objects: dict[str, bytes]) -> None:
    for uri, data in objects.items():
        if not uri.endswith(MANIFEST):
            continue
        folder = uri.rsplit("/", 1)[0]
        manifest = json.loads(data)
        names = sorted(u.rsplit("/", 1)[1] for u in objects if u.startswith(folder + "/part-"))
        assert [part["name"] for part in manifest["parts"]] == names
        for part in manifest["parts"]:
            assert part["sha256"] == hashlib.sha256(objects[f"{folder}/{part['name']}"]).hexdigest()
        assert objects[f"{folder}/{SUCCESS}"] == b""


def _assert_results_are_the_local_cli_results(
    engine: Engine, plan: CompiledPlan, inputs: dict[str, bytes], objects: dict[str, bytes], tmp_path: Path
) -> None:
    """Each result in the parts, for one-message objects, is what ``feedrouter route`` writes."""
    folder = tmp_path / "local-input"
    for key, data in inputs.items():
        if key != "batch-000.xml":
            (folder / key).parent.mkdir(parents=True, exist_ok=True)
            (folder / key).write_bytes(data)
    with engine.connect() as conn:
        queries = dict(conn.execute(text("SELECT id::text, query FROM feedrouter.subscriptions")).all())
    (tmp_path / "subs.json").write_text(json.dumps({sid: queries[sid] for sid in plan.targets}))
    (tmp_path / "news.dtd").write_text(dtds.load("news").text)
    args = ["route", "--subscriptions", str(tmp_path / "subs.json"), "--input", str(folder)]
    args += ["--dtd", str(tmp_path / "news.dtd"), "--output", str(tmp_path / "local-output")]
    assert CliRunner().invoke(main, args).exit_code == 0
    out = tmp_path / "local-output"
    # `feedrouter route` mirrors each input's path below the subscription's folder.
    local = {
        (path.relative_to(out).parts[0], "/".join(path.relative_to(out).parts[1:])): path.read_bytes()
        for path in out.glob("*/**/*.xml")
    }
    by_name = {target.subscription: sid for sid, target in plan.targets.items()}
    delivered = {}
    for uri, data in objects.items():
        if "/part-" in uri:
            sid = by_name[uri.split("/")[-5]]
            for result in read_part(data):
                if result.source != "batch-000.xml":
                    name = result.source.removesuffix(".gz")
                    delivered[(sid, name)] = result.body
    assert delivered == local and len(local) > 20


def test_a_rerun_is_identical_and_a_plan_change_is_a_new_version(
    spark: Any, catalog: Engine, feed: NewsFeed, news: News, plans: FileStore
) -> None:
    _, plan, inputs = news
    first = route(catalog, plans, spark)
    out = open_store(feed.output_base)
    before, rows_before = snapshot(out), deliveries(catalog)
    folder = next(uri for uri in before if uri.endswith(SUCCESS)).rsplit("/", 1)[0]
    out.put(out.key_of(f"{folder}/part-00099.xml"), b"<left-over/>")  # a part an earlier attempt left

    seen: list[tuple[int, int]] = []
    again = route(catalog, plans, spark, progress=lambda finished, total: seen.append((finished, total)))
    assert snapshot(out) == before
    assert seen[-1][0] == seen[-1][1] >= 2  # the status tracker saw the job's tasks finish
    assert again.batch_id == first.batch_id and len(batches(catalog)) == 1
    assert deliveries(catalog) == rows_before

    paused = plan.targets[max(local_run(plan, inputs).results, key=int)]
    with catalog.begin() as conn:
        add_subscription(conn, "carol", "news", "late", "//head/title")
        conn.execute(
            text("UPDATE feedrouter.subscriptions SET active = false WHERE id = :i"),
            {"i": paused.catalog_id},
        )
    new_ref, new_plan = build(catalog, plans)
    changed = route(catalog, plans, spark)

    assert changed.batch_id != first.batch_id and changed.withdrawn == 1
    assert snapshot(out) == expected_outputs(new_plan, new_ref, local_run(new_plan, inputs), "news")
    rows = {row["subscription_name"]: row for row in deliveries(catalog, changed.batch_id)}
    assert rows["late"]["delivery_version"] == 1 and rows["late"]["result_count"] > 0
    assert rows[paused.subscription]["result_count"] == 0 and not rows[paused.subscription]["object_keys"]
    assert {row["delivery_version"] for name, row in rows.items() if name != "late"} == {2}
    assert [b["status"] for b in batches(catalog)] == ["succeeded", "succeeded"]


#: Internal entities that expand to a billion "lol"s: libxml2 refuses the amplification.
ENTITY_BOMB = (
    b'<?xml version="1.0"?><!DOCTYPE nitf [<!ENTITY a "lollollollollollollollollollol">'
    + b"".join(f'<!ENTITY {chr(98 + i)} "{("&" + chr(97 + i) + ";") * 10}">'.encode() for i in range(8))
    + b"]><nitf><body>&i;</body></nitf>"
)


def test_bad_messages_are_quarantined_and_the_good_ones_delivered(
    spark: Any, catalog: Engine, plans: FileStore, tmp_path: Path
) -> None:
    feed = NewsFeed("wires", (tmp_path / "in" / "wires").as_uri(), (tmp_path / "out").as_uri())
    news_catalog(catalog, feed, record_element=None)
    good = {f"good-{i}.xml": doc for i, doc in enumerate(generate_documents(dtds.load("news"), 6, seed=3))}
    bad = {
        "bad-1-malformed.xml": b"<nitf>\n  <head><title>x</head>\n</nitf>",
        "bad-2-entity-bomb.xml": ENTITY_BOMB,
        "bad-3-latin1.xml": "<nitf><head><title>Café</title></head><body/></nitf>".encode("latin-1"),
        "bad-4-empty.xml": b"",
        "bad-5-oversized.xml": b"<nitf><body>" + b"x" * 5000 + b"</body></nitf>",
        "bad-6-not-gzip.xml.gz": b"<nitf/> but not gzip'd",
    }
    upload(open_store(feed.hour_prefix), good | bad)
    ref, plan = build(catalog, plans, "wires")

    report = route(catalog, plans, spark, "wires", max_message_bytes=4096)

    assert (report.status, report.documents, report.quarantined) == ("succeeded", 12, 6)
    expected = expected_outputs(plan, ref, local_run(plan, good), "wires")
    assert snapshot(open_store(feed.output_base)) == expected and expected
    quarantine = open_store(f"{feed.input_prefix}/_quarantine")
    reports = {
        r["source"]: r
        for r in (json.loads(quarantine.get(k)) for k in quarantine.list() if k.endswith(".json"))
    }
    assert set(reports) == set(bad)
    codes = {
        source: (r["code"], r["line"] is not None, r["copy"] is not None) for source, r in reports.items()
    }
    assert codes == {
        "bad-1-malformed.xml": ("FR200", True, True),
        "bad-2-entity-bomb.xml": ("FR203", True, True),
        "bad-3-latin1.xml": ("FR204", True, True),
        "bad-4-empty.xml": ("FR200", False, True),
        "bad-5-oversized.xml": ("FR201", False, False),
        "bad-6-not-gzip.xml.gz": ("FR206", False, True),
    }
    malformed = reports["bad-1-malformed.xml"]
    assert (malformed["line"], malformed["index"], malformed["hour"]) == (2, 0, HOUR_TEXT)
    assert (
        "title" in malformed["message"]
        and malformed["digest"] == hashlib.sha256(bad["bad-1-malformed.xml"]).hexdigest()
    )
    assert quarantine.get(malformed["copy"]) == bad["bad-1-malformed.xml"]
    assert [b["quarantined"] for b in batches(catalog, "wires")] == [6]


def test_an_empty_hour_is_recorded_and_a_feed_without_plan_is_refused(
    spark: Any,
    catalog: Engine,
    catalog_url: str,
    news: News,
    plans: FileStore,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, plan, _ = news
    empty = route_batch(catalog, "news", HOUR + timedelta(hours=1), plans_store=plans, spark=spark)
    assert (empty.status, empty.objects, empty.documents, empty.deliveries) == ("empty", 0, 0, 0)
    [batch] = batches(catalog)
    assert batch["status"] == "empty"
    rows = deliveries(catalog, batch["id"])
    assert len(rows) == len(plan.targets) and {row["result_count"] for row in rows} == {0}

    with catalog.begin() as conn:
        add_feed(conn, "sports", "s3://nowhere/sports")
    with pytest.raises(NoPlanBuildError, match="run `feedrouter build-plan --feed sports`") as caught:
        route_batch(catalog, "sports", HOUR, plans_store=plans, spark=spark)
    assert caught.value.code == "FR601"
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", catalog_url)
    result = CliRunner().invoke(route_batch_command, ["--feed", "sports", "--hour", HOUR_TEXT])
    assert result.exit_code == 1 and "[FR601] feed 'sports' has no plan build" in result.output


def test_the_embedded_default_needs_no_service(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Embedded PostgreSQL catalog, file:// prefixes, local Spark: the commands a user types first."""
    monkeypatch.setenv("FEEDROUTER_DATABASE_URL", "embedded")  # the explicit embedded mode
    monkeypatch.delenv("FEEDROUTER_PLANS_URI", raising=False)
    monkeypatch.setenv("FEEDROUTER_HOME", str(tmp_path))
    runner = CliRunner()
    for args in (["catalog", "init-sample", "--subscriptions", "20"], ["build-plan", "--feed", "news"]):
        assert runner.invoke(main, args).exit_code == 0
    upload(FileStore(tmp_path / "input" / "news" / "dt=2026-11-22" / "hour=16"), news_inputs(8, records=2))
    result = runner.invoke(route_batch_command, ["--feed", "news", "--hour", HOUR_TEXT])
    assert result.exit_code == 0, result.output
    # The sample feed has no record element: the container is one document like the others.
    assert "succeeded with plan build 1: 9 objects, 9 documents" in result.output
    assert list((tmp_path / "output").glob("*/*/news/dt=2026-11-22/hour=16/_SUCCESS"))


def test_two_runs_of_one_hour_never_interleave(
    spark: Any, catalog: Engine, news: News, plans: FileStore
) -> None:
    from feedrouter.spark.errors import BatchBusyError
    from feedrouter.spark.lease import hour_lock

    with hour_lock(catalog, "news", HOUR), pytest.raises(BatchBusyError) as caught:
        route(catalog, plans, spark)
    assert caught.value.transient and caught.value.code == "FR605"
    assert batches(catalog) == []  # the refused run recorded nothing
    assert route(catalog, plans, spark).status == "succeeded"  # the lock is free again


def test_a_lost_lease_interrupts_the_runs_spark_jobs_by_tag(spark: Any, tmp_path: Path) -> None:
    """The overtaken run's jobs are cancelled (its job tag), not left writing beside the new run."""
    assert_interrupted_by_its_tag(spark, tmp_path)
