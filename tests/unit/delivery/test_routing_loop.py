"""One routing loop, three callers (issue 13, step 7): the Spark routing task, the single-process
hour run and ``feedrouter route`` all run :func:`route_objects`, so the same inputs give the same
results, the same refused documents and the same results refused to one subscription in each;
only where the outcomes go differs (records and the quarantine, memory, files)."""

from __future__ import annotations

import gzip
import io
import json
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from feedrouter import ResultLimits, Router
from feedrouter.catalog import CompiledPlan, FeedConfig, Target
from feedrouter.catalog.artifact import encode
from feedrouter.cli import main
from feedrouter.delivery import PlanRef, Splitter, route_locally
from feedrouter.delivery import routing as loop
from feedrouter.spark import tasks
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.storage import FileStore

INPUTS = {
    "x.xml": b"<r><a>1</a><a>22</a><b>333</b></r>",  # b gets its result; "as" passes its limit (FR310)
    "y.xml": b"<r><a>1</a>",  # malformed: refused whole (FR200)
    "z.xml.gz": gzip.compress(b"<r><b>4</b></r>")[:-9],  # truncated gzip (FR206)
}
SUBSCRIPTIONS = [("as", "//a"), ("b", "//b")]
LIMIT = 10
#: (source, subscription or None for the whole document, code) and (source, subscription, result)
Outcomes = tuple[set[tuple[str, str | None, str]], set[tuple[str, str, bytes]]]


def router() -> Router:
    return Router.compile(SUBSCRIPTIONS, result_limits=ResultLimits(per_subscription=LIMIT))


def through_the_loop() -> Outcomes:
    refused, results = set(), set()
    objects = [(key, io.BytesIO(data)) for key, data in INPUTS.items()]
    for routed in loop.route_objects(router(), Splitter(), objects):
        source = routed.message.source
        if routed.error is not None:
            refused.add((source, None, routed.error.code))  # type: ignore[attr-defined]
        refused |= {(source, sid, failure.code) for sid, failure in routed.failures.items()}
        results |= {(source, sid, body) for sid, body in routed.results.items()}
    return refused, results


def through_a_local_run() -> Outcomes:
    run = route_locally(router(), Splitter(), [(k, io.BytesIO(v)) for k, v in INPUTS.items()])
    refused = {(r.message.source, None, r.error.code) for r in run.rejected}  # type: ignore[union-attr]
    refused |= {(r.source, r.subscription_id, r.error.code) for r in run.refused}
    results = {(r.source, sid, r.body) for sid, rs in run.results.items() for r in rs}
    return refused, results


def through_a_spark_task(tmp_path: Path) -> Outcomes:
    feed = FeedConfig("news", (tmp_path / "in").as_uri(), "{prefix}/dt={date}/hour={hour}/")
    out = (tmp_path / "out").as_uri()
    targets = {sid: Target(n, sid, "alice", out) for n, (sid, _) in enumerate(SUBSCRIPTIONS)}
    artifact = encode(CompiledPlan(feed, 7, router(), targets))
    inputs = FileStore(tmp_path / "in")
    for key, data in INPUTS.items():
        inputs.put(key, data)
    spec = JobSpec(
        feed="news",
        hour=datetime(2026, 11, 22, 16, tzinfo=timezone.utc),
        input_uri=inputs.uri,
        quarantine_uri=(tmp_path / "quarantine").as_uri(),
        plan=PlanRef(3, artifact.digest, 7),
        stores=StoreOpener(),
        max_part_bytes=1 << 20,
        max_message_bytes=1 << 20,
    )
    tasks._PLANS.clear()
    keys = list(INPUTS)

    class Shipped:
        value = artifact.data

    records = list(tasks.route_partition(spec, Shipped(), enumerate(keys)))
    results = {(keys[o], sid, value[1]) for (sid, o, _), value in records if sid != tasks.STATS}
    quarantine = FileStore(tmp_path / "quarantine")
    reports = [json.loads(quarantine.get(k)) for k in quarantine.list() if k.endswith(".error.json")]
    refused = {(r["source"], r.get("subscription"), r["code"]) for r in reports}
    return refused, results


def through_the_command_line(tmp_path: Path) -> Outcomes:
    docs, out, subs = tmp_path / "docs", tmp_path / "cli", tmp_path / "subs.json"
    docs.mkdir()
    for key, data in INPUTS.items():
        (docs / key).write_bytes(data)
    subs.write_text(json.dumps(dict(SUBSCRIPTIONS)), encoding="utf-8")
    args = ["route", "--subscriptions", str(subs), "--input", str(docs), "--output", str(out)]
    result = CliRunner().invoke(main, [*args, "--max-result-bytes", str(LIMIT)])
    assert result.exit_code == 0, result.output
    refused = set()
    for path in out.rglob("*.error.json"):
        report = json.loads(path.read_text())
        refused.add((Path(report["source"]).name, report.get("subscription"), report["code"]))
    results = {(stem_to_key(path.name), path.parent.name, path.read_bytes()) for path in out.glob("*/*.xml")}
    return refused, results


def stem_to_key(name: str) -> str:
    stem = name.removesuffix(".xml")
    return next(key for key in INPUTS if key.split(".")[0] == stem)


EXPECTED_REFUSED = {("x.xml", "as", "FR310"), ("y.xml", None, "FR200"), ("z.xml.gz", None, "FR206")}
EXPECTED_RESULTS = {("x.xml", "b", b"<b>333</b>")}


def test_the_loop_yields_results_refused_documents_and_refused_results() -> None:
    assert through_the_loop() == (EXPECTED_REFUSED, EXPECTED_RESULTS)


def test_the_three_callers_give_the_loops_outcomes(tmp_path: Path) -> None:
    expected = through_the_loop()
    assert through_a_local_run() == expected
    assert through_a_spark_task(tmp_path) == expected
    assert through_the_command_line(tmp_path) == expected


def test_every_caller_routes_through_the_one_loop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A spy on the loop's per-message step sees every message of every caller."""
    seen: list[str] = []
    real = loop.route_message

    def spy(
        router: loop.Routes, message: loop.Message, internal_errors: loop.InternalErrors = "raise", sink=None
    ):  # type: ignore[no-untyped-def]
        seen.append(Path(message.source).name)
        return real(router, message, internal_errors, sink)

    monkeypatch.setattr(loop, "route_message", spy)
    through_a_local_run()
    assert sorted(seen) == sorted(INPUTS)
    seen.clear()
    through_a_spark_task(tmp_path)
    assert sorted(seen) == sorted(INPUTS)
    seen.clear()
    through_the_command_line(tmp_path)
    assert sorted(seen) == sorted(INPUTS)


def test_internal_errors_raise_unless_the_caller_sets_them_aside() -> None:
    class Broken:
        def route_outcome(self, document: bytes, source: str | None = None) -> None:
            raise RuntimeError("a bug")

    objects = [("x.xml", io.BytesIO(b"<r/>"))]
    with pytest.raises(RuntimeError):
        list(loop.route_objects(Broken(), Splitter(), objects))  # type: ignore[arg-type]
    [routed] = loop.route_objects(
        Broken(), Splitter(), [("x.xml", io.BytesIO(b"<r/>"))], internal_errors="reject"
    )  # type: ignore[arg-type]
    assert isinstance(routed.error, RuntimeError)


def test_the_loop_reports_each_objects_stored_size() -> None:
    sizes: list[tuple[str, int]] = []
    objects = [(key, io.BytesIO(data)) for key, data in INPUTS.items()]
    list(loop.route_objects(router(), Splitter(), objects, on_read=lambda key, n: sizes.append((key, n))))
    assert sizes == [(key, len(data)) for key, data in INPUTS.items()]
