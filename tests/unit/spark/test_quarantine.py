"""Quarantine.put records a result refused to one subscription as a JSON report beside the message
reports (issue 18, items 3 and 15): code, reason, subscription id and source, one per (message,
subscription); refused messages keep their copy and report."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pytest

from feedrouter import ResultLimits, Router
from feedrouter.delivery import Message, PlanRef, route_message
from feedrouter.spark.quarantine import Quarantine, prune, subscription_tag
from feedrouter.spark.spec import JobSpec
from feedrouter.spark.stores import StoreOpener
from feedrouter.storage import FileStore

HOUR = datetime(2026, 11, 22, 16, tzinfo=timezone.utc)
DOC = b"<r><a>1</a><a>22</a><b>333</b></r>"


@pytest.fixture
def quarantine(tmp_path: Path) -> Quarantine:
    inputs = FileStore(tmp_path / "in")
    spec = JobSpec(
        feed="news",
        hour=HOUR,
        input_uri=inputs.uri,
        quarantine_uri=(tmp_path / "quarantine").as_uri(),
        plan=PlanRef(3, "0" * 64, 7),
        stores=StoreOpener(),
        max_part_bytes=1 << 20,
        max_message_bytes=1 << 20,
    )
    return Quarantine(spec, inputs)


def test_each_refused_result_gets_a_report_naming_code_subscription_and_source(
    quarantine: Quarantine,
) -> None:
    router = Router.compile(
        [("17", "//a"), ("18", "//a"), ("odd id/é", "//r"), ("19", "//b")],
        result_limits=ResultLimits(per_subscription=12),
    )
    routed = route_message(router, Message("feed/x.xml", 4, DOC))
    assert set(routed.failures) == {"17", "18", "odd id/é"}

    keys = quarantine.put(routed)
    assert len(keys) == 3 and len(set(keys)) == 3
    assert "news/dt=2026-11-22/hour=16/feed%2Fx.xml/000004.sub-17.error.json" in keys
    reports = {
        json.loads(quarantine.store.get(key))["subscription"]: json.loads(quarantine.store.get(key))
        for key in keys
    }
    assert set(reports) == {"17", "18", "odd id/é"}
    report = reports["17"]
    assert report["code"] == "FR310" and "per-subscription limit of 12 bytes" in report["message"]
    assert (report["source"], report["index"], report["feed"], report["hour"]) == (
        "feed/x.xml",
        4,
        "news",
        "2026-11-22T16",
    )
    assert report["source_uri"].endswith("/in/feed/x.xml")
    # no copy of a routed message: its other subscribers were served
    assert not any(key.endswith(".xml") for key in quarantine.store.list())


def test_refused_messages_keep_their_copy_and_report(quarantine: Quarantine) -> None:
    routed = route_message(Router.compile([("1", "//a")]), Message("x.xml", 0, b"<r><a></r>"))
    keys = quarantine.put(routed)
    assert [key.rsplit("/", 1)[1] for key in keys] == ["000000.xml", "000000.error.json"]
    assert json.loads(quarantine.store.get(keys[1]))["code"] == "FR200"


def test_failure_reports_survive_pruning_when_kept(quarantine: Quarantine) -> None:
    router = Router.compile([("1", "//a")], result_limits=ResultLimits(per_subscription=5))
    keys = quarantine.put(route_message(router, Message("x.xml", 0, DOC)))
    assert prune(quarantine.store, "news", HOUR, keys) == 0 and list(quarantine.store.list()) == keys
    assert prune(quarantine.store, "news", HOUR, []) == 1


def test_subscription_tags_are_plain_ids_or_digests() -> None:
    assert subscription_tag("42") == "sub-42"
    assert subscription_tag("a/b").startswith("sub-sha256-") and len(subscription_tag("x" * 500)) == 43
