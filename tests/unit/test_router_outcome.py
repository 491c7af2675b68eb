"""Router.route_outcome: results and per-subscription failures; result limits and the invalid-document
policy are validated when the router is built."""

from __future__ import annotations

import pytest

from feedrouter import CompileError, ResultLimits, RouteOutcome, Router
from tests.unit.support import BOOK_DOC

GOOD = [("titles", "//section/title"), ("deep", "//section[@id >= 2]"), ("none", "//chapter")]


def test_route_outcome_holds_the_results_route_returns() -> None:
    router = Router.compile(GOOD)
    outcome = router.route_outcome(BOOK_DOC)
    assert isinstance(outcome, RouteOutcome)
    assert outcome.results == router.route(BOOK_DOC)
    assert set(outcome.results) == {"titles", "deep"} and outcome.failures == {}


@pytest.mark.parametrize("policy", ["fallback", "quarantine"])
def test_invalid_document_policies_are_accepted(policy: str) -> None:
    assert Router.compile(GOOD, invalid_documents=policy).invalid_documents == policy


def test_an_unknown_invalid_document_policy_is_refused_naming_the_choices() -> None:
    with pytest.raises(
        CompileError, match="invalid_documents must be 'fallback' or 'quarantine', not 'drop'"
    ):
        Router.compile(GOOD, invalid_documents="drop")


@pytest.mark.parametrize(
    "limits",
    [ResultLimits(per_subscription=0), ResultLimits(per_document=-1), ResultLimits(per_subscription=1.5)],  # type: ignore[arg-type]
)
def test_result_limits_must_be_positive_byte_counts(limits: ResultLimits) -> None:
    with pytest.raises(CompileError, match="result_limits"):
        Router(result_limits=limits)


def test_result_limits_must_be_a_result_limits() -> None:
    with pytest.raises(CompileError, match="must be a ResultLimits, not dict"):
        Router(result_limits={"per_subscription": 3})  # type: ignore[arg-type]


def test_result_limits_default_to_the_documented_bounds() -> None:
    assert Router().result_limits == ResultLimits()
    chosen = ResultLimits(per_subscription=10, per_document=20)
    assert Router.compile(GOOD, result_limits=chosen).result_limits == chosen
