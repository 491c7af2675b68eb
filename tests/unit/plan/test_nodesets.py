"""Node-set evaluation of recursive '//' chains: the tuples' answers, in linear work (issue 18, item 2)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import feedrouter.plan.context as context_module
import feedrouter.plan.search as search_module
from feedrouter import Router
from feedrouter.engine.runtime import run
from feedrouter.errors import DocumentError
from feedrouter.output.factory import render_items
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.operators import _group_by

ISSUE_CASE = '//a[.//a//a//a = "z"]'
STRATEGIES = ("F", "FW", "FWR")


def nested(depth: int) -> bytes:
    return ("<a>" * depth + "z" + "</a>" * depth).encode()


def route_counting(
    router: Router, document: bytes, max_work: int | None = None
) -> tuple[dict, DocumentContext]:
    """Route as :meth:`Router.route` does, keeping the document's context to read its counters."""
    parser = router._parser
    matches = run(router._dfa, parser.events(document), parser.limits.max_depth)
    ctx = DocumentContext(matches) if max_work is None else DocumentContext(matches, max_work=max_work)
    results = {}
    for group in router._index.candidates(ctx):
        plan = group.plan
        bound = plan.bindings(ctx)
        if bound:
            result = plan.result(ctx, bound) if plan.is_flwr else render_items(bound, ctx)
            results.update(dict.fromkeys(group.members, result))
    return results, ctx


def largest_stream(ctx: DocumentContext) -> int:
    return max((len(t) for t in ctx.matches._tuples.values()), default=0)


@pytest.fixture
def forced(monkeypatch: pytest.MonkeyPatch) -> None:
    """Node sets for every path with two '//' or more, however few tuples it has."""
    monkeypatch.setattr(context_module, "TUPLES_PER_NODE", 0)
    monkeypatch.setattr(context_module, "TUPLES_SLACK", 0)
    monkeypatch.setattr(search_module, "SEARCH_STEPS_PER_NODE", 0)
    monkeypatch.setattr(search_module, "SEARCH_SLACK", 0)


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_the_issue_case_at_depth_150_costs_work_linear_in_the_depth(strategy: str) -> None:
    router = Router.compile([("s", ISSUE_CASE)], strategy=strategy)
    work = {}
    for depth in (50, 150):
        results, ctx = route_counting(router, nested(depth))
        assert set(results) == {"s"}
        # each a with three a below it, serialized with its subtree: 4 + 5 + ... + depth start tags
        assert results["s"].count(b"<a>") == sum(range(4, depth + 1))
        # the tuples of .//a//a//a from every a: C(150, 4) = 20 million; here a few per element
        assert largest_stream(ctx) <= context_module.TUPLES_PER_NODE * depth + context_module.TUPLES_SLACK
        assert ctx.work <= 60 * depth, (strategy, depth, ctx.work)
        work[depth] = ctx.work
    assert work[150] <= 4 * work[50], work  # linear: three times the elements, about three times the work


@pytest.mark.parametrize("strategy", STRATEGIES)
def test_returns_and_filters_along_recursive_chains_stay_linear(strategy: str) -> None:
    texts = {
        "flwr": "for $x in //a//a//a where $x//a//a = 'z' return <r>{ $x/a/a/text() }</r>",
        "filter": "/a//a//a//a[a//a//a]",
        "returns": "for $x in /a/a return <r>{ $x//a//a//a/text() }</r>",
    }
    router = Router.compile(texts, strategy=strategy)
    work = {}
    for depth in (40, 120):
        results, ctx = route_counting(router, nested(depth))
        assert results == router.route(nested(depth))
        assert set(results) == set(texts)
        work[depth] = ctx.work
    assert work[120] <= 4 * work[40], work


def test_a_document_past_the_work_budget_is_refused_with_fr205() -> None:
    router = Router.compile([("s", ISSUE_CASE), ("t", "for $a in //a return $a/a")])
    _, ctx = route_counting(router, nested(30))
    assert ctx.work > 200
    with pytest.raises(DocumentError) as raised:
        route_counting(router, nested(30), max_work=200)
    assert raised.value.code == "FR205"
    assert "200" in str(raised.value)


def test_the_budget_stops_building_tuples_before_they_fill_the_memory() -> None:
    router = Router.compile([("s", "//a//a//a")], strategy="FW")
    matches = run(router._dfa, router._parser.events(nested(120)), 256)
    pid = router._plans["s"].main.pid
    assert matches.stream_within(pid, 1000) is None  # C(120, 3) = 280,840 tuples otherwise
    assert pid not in matches._tuples
    ctx = DocumentContext(matches, max_work=1000)
    with pytest.raises(DocumentError) as raised:
        ctx.stream(pid)
    assert raised.value.code == "FR205"


def test_a_search_along_two_descendant_steps_gives_up_for_node_sets() -> None:
    """PathSharing-F: the tree search of a recursive branch is bounded, then node sets take over."""
    router = Router.compile([("s", '//a[.//a//a//a = "y"]')], strategy="F")
    results, ctx = route_counting(router, nested(150))
    assert results == {}
    assert list(ctx.caches.branch_holders) == [router._plans["s"].main.pattern.branches[0].pattern]
    assert ctx.work <= 60 * 150, ctx.work


# -- node sets give the tuples' answers ------------------------------------------------------------

TAGS = ("a", "b", "c")
tags = st.sampled_from(TAGS)
texts = st.sampled_from(["", "z", "1", "3"])


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(tags)
    attribute = draw(st.sampled_from(["", ' n="1"', ' n="3"']))
    children = draw(st.lists(trees(depth + 1), max_size=3)) if depth < 7 else []
    inner = draw(texts) + "".join(children) + draw(texts)
    return f"<{tag}{attribute}>{inner}</{tag}>"


step = st.tuples(st.sampled_from(["/", "//", "//"]), st.sampled_from([*TAGS, "*"])).map("".join)
relative = st.lists(step, min_size=1, max_size=4).map(lambda steps: "." + "".join(steps))
condition = st.one_of(
    relative,
    st.tuples(relative, st.sampled_from(['= "z"', "> 2", "!= 'z'", "/@n = 1", "/text() = 'z'"])).map(
        lambda parts: " ".join(parts) if not parts[1].startswith("/") else "".join(parts)
    ),
)


@st.composite
def subscriptions(draw: st.DrawFn) -> str:
    steps = draw(st.lists(step, min_size=1, max_size=4))
    at = draw(st.integers(0, len(steps) - 1))
    for _ in range(draw(st.integers(0, 2))):
        steps[at] += f"[{draw(condition)}]"
    path = "".join(steps)
    if draw(st.booleans()):
        return path
    ret = draw(relative).lstrip(".")
    return f"for $x in {path} return <r>{{ $x{ret} }}</r>"


def routed(texts: list[str], document: bytes, strategy: str) -> dict:
    router = Router.compile(list(enumerate(texts)), strategy=strategy, on_error="collect")
    return router.route(document)


@settings(max_examples=60, deadline=None)
@given(trees(), st.lists(subscriptions(), min_size=1, max_size=6), st.sampled_from(STRATEGIES))
def test_node_sets_route_like_path_tuples(document: str, texts: list[str], strategy: str) -> None:
    data = document.encode()
    expected = routed(texts, data, strategy)  # small documents: few tuples, the tuple plans run
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(context_module, "TUPLES_PER_NODE", 0)
        patch.setattr(context_module, "TUPLES_SLACK", 0)
        patch.setattr(search_module, "SEARCH_STEPS_PER_NODE", 0)
        patch.setattr(search_module, "SEARCH_SLACK", 0)
        assert routed(texts, data, strategy) == expected, (texts, document)


@settings(max_examples=60, deadline=None)
@given(trees())
def test_each_fields_node_set_is_the_projection_of_the_tuples(document: str) -> None:
    """Key sets and groups of recursive plans by node sets, against the tuples they stand for."""
    router = Router.compile(
        {
            "pred": "//a[.//b//c = 'z']//b[.//*/@n = 1]",
            "ret": "for $x in //b return <r>{ $x//a//c[. = 'z'] }</r>",
            "deep": "//*//a[b]//b//*",
        },
        strategy="FWR",
        optimize="none",
        shared_selection=False,
    )
    parser = router._parser
    ctx = DocumentContext(run(router._dfa, parser.events(document.encode()), 256))
    plans = list(router._planner._plans.values())
    checked = 0
    for plan in plans:
        if not plan.recursive:
            continue
        tuples = plan.tuples(ctx)
        # a main plan's DupElim keeps one tuple per binding: only its last field is projected whole
        fields = [plan.pattern.last] if plan.main else range(len(plan.pattern.nav))
        for field in fields:
            assert plan.field_nodes(ctx, field) == sorted({t[field] for t in tuples}), plan.describe()
            groups = _group_by(tuples, field, dedupe=True)
            for anchor in range(len(ctx.nodes)):
                assert plan._group_by_sets(ctx, field, anchor) == groups.get(anchor, [])
        checked += 1
    assert checked >= 4


def test_the_router_refuses_a_document_past_its_limits_max_work() -> None:
    from feedrouter.limits import DocumentLimits

    router = Router.compile([("s", ISSUE_CASE)], limits=DocumentLimits(max_work=200))
    assert router.route(nested(10)) != {}
    with pytest.raises(DocumentError) as raised:
        router.route(nested(60), source="deep.xml")
    assert raised.value.code == "FR205"
    assert "deep.xml" in str(raised.value)
