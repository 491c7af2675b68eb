"""Results refused to a subscription (issue 18, items 3 and 15) reach the delivery layer: route_message
keeps them in Routed.failures, the one-process loop counts and keeps them, failure_report names them."""

from __future__ import annotations

import io

from feedrouter import ResultLimits, Router
from feedrouter.delivery import Message, Splitter, route_locally, route_message
from feedrouter.delivery.routing import failure_report

DOC = b"<r><a>1</a><a>22</a><b>333</b></r>"


def small_router() -> Router:
    return Router.compile([("as", "//a"), ("b", "//b")], result_limits=ResultLimits(per_subscription=10))


def test_route_message_keeps_the_subscriptions_refused_a_result() -> None:
    routed = route_message(small_router(), Message("in/x.xml", 3, DOC))
    assert routed.error is None
    assert routed.results == {"b": b"<b>333</b>"}
    assert {sid: f.code for sid, f in routed.failures.items()} == {"as": "FR310"}
    assert routed.failures["as"].source == "in/x.xml#3"


def test_failure_report_names_code_reason_subscription_and_source() -> None:
    routed = route_message(small_router(), Message("in/x.xml", 3, DOC))
    report = failure_report(routed, "as", feed="news", hour="2026-11-22T16", source_uri="file:///in/x.xml")
    assert report["code"] == "FR310" and "per-subscription limit of 10 bytes" in report["message"]
    assert report["subscription"] == "as" and report["scope"] == "subscription"
    assert (report["source"], report["index"], report["source_uri"]) == ("in/x.xml", 3, "file:///in/x.xml")
    assert report["digest"] == Message("in/x.xml", 3, DOC).digest


def test_the_local_loop_counts_and_keeps_refused_results_in_input_order() -> None:
    objects = [
        ("x.xml", io.BytesIO(b"<all><m>" + DOC + b"</m><m><r><b>4</b></r></m><m>" + DOC + b"</m></all>"))
    ]
    run = route_locally(small_router(), Splitter("m"), objects)
    assert run.documents == 3 and run.rejected == []
    assert [(r.source, r.index, r.subscription_id, r.error.code) for r in run.refused] == [
        ("x.xml", 0, "as", "FR310"),
        ("x.xml", 2, "as", "FR310"),
    ]
    assert run.refused_by_code() == {"FR310": 2}
    assert [r.index for r in run.results["b"]] == [0, 1, 2] and "as" not in run.results
