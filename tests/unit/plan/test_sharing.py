"""Whole-plan sharing: identical plans (however spelled) are evaluated once and survive add/remove."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from hypothesis import given, settings
from hypothesis import strategies as st

from feedrouter import Router
from feedrouter.plan.results import SubscriptionPlan
from feedrouter.plan.sharing import SharedPlans
from tests.unit.support import BOOK_DOC, toggle

DOC = BOOK_DOC

# Three spellings of one subscription (variable name, white space, comments) and one that differs.
SAME = [
    ("a", "for $s in //section where $s/@id >= 2 return <s>{ $s/title }</s>"),
    ("b", "for $x in //section\n  where $x/@id >= 2\n  return <s>{$x/title}</s>"),
    ("c", "(: the deep ones :) for $sec in //section where $sec/@id >= 2 return <s>{ $sec/title }</s>"),
]
OTHER = ("d", "for $s in //section where $s/@id >= 3 return <s>{ $s/title }</s>")


def test_respelled_subscriptions_share_one_plan_and_one_result() -> None:
    router = Router.compile([*SAME, OTHER])
    assert router.stats()["shared_plans"] == 2
    results = router.route(DOC)
    assert results["a"] == b"<s><title>Deep</title></s><s><title>End</title></s>"
    assert results["a"] is results["b"] is results["c"]  # built once, handed to every member
    assert results["d"] == b"<s><title>End</title></s>"
    assert "shares its whole plan and result with 2 other subscription(s)" in router.explain("b")
    assert "shares its whole plan" not in router.explain("d")


def test_removing_the_member_that_stands_for_the_group_keeps_the_others_served() -> None:
    router = Router.compile([*SAME, OTHER])
    expected = router.route(DOC)["a"]
    router.remove("a")  # the group's representative plan
    assert router.route(DOC) == {"b": expected, "c": expected, "d": b"<s><title>End</title></s>"}
    router.remove("b")
    router.remove("c")
    assert router.stats()["shared_plans"] == 1
    assert set(router.route(DOC)) == {"d"}
    router.add("a", SAME[0][1])  # a group that emptied can form again
    assert router.route(DOC)["a"] == expected


@dataclass
class _Plan:  # the two attributes SharedPlans reads
    sid: str
    signature: str


def _plan(sid: str, signature: str) -> SubscriptionPlan:
    return cast(SubscriptionPlan, _Plan(sid, signature))


def test_a_group_hands_its_stand_in_role_to_a_live_member_and_drops_when_empty() -> None:
    shared = SharedPlans()
    a, b, c = _plan("a", "sig"), _plan("b", "sig"), _plan("c", "other")
    assert shared.join(a)[1] and not shared.join(b)[1] and shared.join(c)[1]
    assert len(shared) == 2 and list(shared.group_of(b).members) == ["a", "b"]
    group, emptied = shared.leave(a)
    assert not emptied and group.plan is b  # never a plan whose subscription is gone
    assert shared.leave(b) == (group, True) and len(shared) == 1


TWINS = [*SAME, OTHER, ("t", "//section/title"), ("u", "//section/title"), ("v", "//section[@id = 2]")]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(TWINS), min_size=1, max_size=25), st.sampled_from(["F", "FW", "FWR"]))
def test_any_sequence_of_adds_and_removes_of_twins_routes_like_a_fresh_compile(
    steps: list[tuple[str, str]], strategy: str
) -> None:
    router = Router(strategy=strategy)
    live = toggle(router, steps)
    fresh = Router.compile(list(live.items()), strategy=strategy)
    assert router.route(DOC) == fresh.route(DOC)
    assert router.stats()["shared_plans"] == fresh.stats()["shared_plans"]
