"""Result limits (issue 18, item 3) and routing-time isolation (item 15) of Router.route_outcome.

A result past the per-subscription limit (FR310) or past what is left of the document's limit
(FR311) is refused for its subscriptions and given up while it is built, never assembled whole; an
internal error of one plan group fails only that group's subscriptions (FR312).
"""

from __future__ import annotations

import pytest

from feedrouter import DocumentError, ResultLimits, Router, RoutingError
from feedrouter.errors import error
from feedrouter.plan.context import DocumentContext

DOC = b"<r><a>1</a><a>22</a><b>333</b><c>4444</c></r>"

#: 40 chains of <a> nested 120 deep: `//a` copies every chain once per level (about 2 MB of result
#: from a 20 KB document), the shape that makes nested documents give results far larger than they are.
NESTED = b"<r>" + b"".join(b"<a>" * 120 + b"x" + b"</a>" * 120 for _ in range(40)) + b"</r>"


def limited(per_subscription: int = 1 << 20, per_document: int = 1 << 24) -> ResultLimits:
    return ResultLimits(per_subscription=per_subscription, per_document=per_document)


def test_a_result_past_the_per_subscription_limit_is_refused_and_the_others_delivered() -> None:
    router = Router.compile([("as", "//a"), ("b", "//b")], result_limits=limited(per_subscription=16))
    outcome = router.route_outcome(DOC, source="doc.xml")
    assert outcome.results == {"b": b"<b>333</b>"}
    failure = outcome.failures["as"]
    assert isinstance(failure, RoutingError) and failure.code == "FR310"
    assert "per-subscription limit of 16 bytes" in failure.message and failure.source == "doc.xml"
    assert router.route(DOC) == {"b": b"<b>333</b>"}


def test_a_result_exactly_at_the_limit_is_delivered() -> None:
    result = b"<a>1</a><a>22</a>"
    assert Router.compile([("as", "//a")], result_limits=limited(len(result))).route(DOC) == {"as": result}
    outcome = Router.compile([("as", "//a")], result_limits=limited(len(result) - 1)).route_outcome(DOC)
    assert outcome.results == {} and outcome.failures["as"].code == "FR310"


@pytest.mark.parametrize(
    "text",
    [
        "//a",
        "for $a in //a return <hit>{ $a }</hit>",
        "for $a in //a return <hit>{ $a }{ $a }{ $a }</hit>",
        "for $a in //a return $a",
        "for $a in //r return <all>{ $a//a }</all>",
    ],
)
def test_a_result_past_its_limit_is_given_up_while_it_is_built(text: str, monkeypatch) -> None:
    built: list[int] = []
    serialize = DocumentContext.serialized

    def counting(ctx: DocumentContext, nid: int) -> bytes:
        data = serialize(ctx, nid)
        built.append(len(data))
        return data

    monkeypatch.setattr(DocumentContext, "serialized", counting)
    limit = 10_000
    outcome = Router.compile([("s", text)], result_limits=limited(limit)).route_outcome(NESTED)
    assert outcome.results == {} and outcome.failures["s"].code == "FR310"
    # at most the limit and one more node (an outer <a> of 120 levels: under 1,000 bytes)
    assert sum(built) < limit + 1_000, sum(built)


def test_the_document_limit_counts_a_result_shared_by_identical_plans_once() -> None:
    # 17 + 11 bytes: within 30 only if the two identical subscriptions' result counts once
    subscriptions = [("a1", "//a"), ("a2", "//a"), ("c", "//c")]
    outcome = Router.compile(subscriptions, result_limits=limited(per_document=30)).route_outcome(DOC)
    assert set(outcome.results) == {"a1", "a2", "c"} and outcome.failures == {}
    assert outcome.results["a1"] is outcome.results["a2"]


def test_past_the_document_limit_every_subscription_not_yet_served_is_refused() -> None:
    subscriptions = [("a", "//a"), ("b", "//b"), ("c", "//c"), ("outer-a", "/r/a"), ("r", "/r")]
    unlimited = Router.compile(subscriptions).route(DOC)  # in the order the router serves them
    per_document = 70  # the first two or three of 45, 17, 17, 10 and 11 bytes
    served, spent, expected = [], 0, {}
    for sid, result in unlimited.items():
        if expected or spent + len(result) > per_document:
            expected[sid] = "FR311"
        else:
            served.append(sid)
            spent += len(result)
    assert served and expected  # the document is cut somewhere in the middle

    router = Router.compile(subscriptions, result_limits=limited(per_document=per_document))
    outcome = router.route_outcome(DOC)
    assert list(outcome.results) == served
    assert {sid: failure.code for sid, failure in outcome.failures.items()} == expected
    assert "per-document limit of 70 bytes" in next(iter(outcome.failures.values())).message


def test_subscriptions_that_do_not_match_are_neither_results_nor_failures() -> None:
    router = Router.compile([("as", "//a"), ("none", "//z")], result_limits=limited(per_subscription=5))
    assert router.route_outcome(DOC).failures.keys() == {"as"}


def test_a_nested_document_is_refused_per_subscription_with_the_default_limits_scaled_down() -> None:
    # 2 MB of results for `//a` from a 20 KB document: refused; `//r/a` (the outer chains) is served
    router = Router.compile(
        [("all", "//a"), ("outer", "/r/a")], result_limits=limited(per_subscription=200_000)
    )
    outcome = router.route_outcome(NESTED)
    assert outcome.failures["all"].code == "FR310"
    assert len(outcome.results["outer"]) == 40 * (120 * 7 + 1)


# -- isolation (item 15) ----------------------------------------------------------------------------


def _group_plan(router: Router, sid: str):  # type: ignore[no-untyped-def]
    return router._shared.group_of(router._plans[sid]).plan


def test_an_internal_error_in_one_plan_group_fails_only_its_subscriptions(monkeypatch) -> None:
    router = Router.compile([("as", "//a"), ("as-too", "//a"), ("b", "//b")])

    def broken(ctx: DocumentContext) -> list[int]:
        raise ZeroDivisionError("injected")

    monkeypatch.setattr(_group_plan(router, "as"), "bindings", broken)
    outcome = router.route_outcome(DOC, source="doc.xml")
    assert outcome.results == {"b": b"<b>333</b>"}
    assert set(outcome.failures) == {"as", "as-too"}
    failure = outcome.failures["as"]
    assert failure.code == "FR312" and "ZeroDivisionError: injected" in failure.message
    assert router.route(DOC) == {"b": b"<b>333</b>"}


def test_an_internal_error_while_building_a_result_fails_only_its_subscriptions(monkeypatch) -> None:
    router = Router.compile([("flwr", "for $a in //a return <x>{ $a/text() }</x>"), ("b", "//b")])
    item = _group_plan(router, "flwr").returns[0]

    def broken(ctx: DocumentContext, bound: int) -> list[int]:
        raise KeyError("lost node")

    monkeypatch.setattr(item, "select", broken)
    outcome = router.route_outcome(DOC)
    assert outcome.results == {"b": b"<b>333</b>"}
    assert outcome.failures["flwr"].code == "FR312" and "KeyError" in outcome.failures["flwr"].message


def test_a_document_error_inside_a_plan_still_fails_the_whole_document(monkeypatch) -> None:
    router = Router.compile([("as", "//a"), ("b", "//b")])

    def over_budget(ctx: DocumentContext) -> list[int]:
        raise error("FR205", "too much work")

    monkeypatch.setattr(_group_plan(router, "as"), "bindings", over_budget)
    with pytest.raises(DocumentError) as err:
        router.route_outcome(DOC)
    assert err.value.code == "FR205"
