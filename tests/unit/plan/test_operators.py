"""GroupBy for return paths: the parent-pointer shortcuts agree with grouping the path-tuples."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from feedrouter import Router
from feedrouter.engine.runtime import run
from feedrouter.plan.context import DocumentContext
from feedrouter.plan.operators import _group_by

RETURNS = [
    "for $v in //a return <r>{ $v//c }</r>",  # '//' right after the binding
    "for $v in //a return <r>{ $v//a/c }</r>",  # the '//' node may be the anchor's own tag
    "for $v in //a return <r>{ $v/b//c }</r>",  # child steps, then '//'
    "for $v in //a return <r>{ $v/*/b//c }</r>",  # a wildcard among them
    "for $v in //a return <r>{ $v/b/c }</r>",  # child steps only
    "for $v in //a/b return <r>{ $v/a//c }</r>",
    "for $v in /a//b return <r>{ $v//a/c }</r>",  # '//' in the binding path too
    "for $v in //a return <r>{ $v//b//c }</r>",  # two '//': the tuples decide
]

tags = st.sampled_from("abc")


@st.composite
def trees(draw: st.DrawFn, depth: int = 0) -> str:
    tag = draw(tags)
    children = draw(st.lists(trees(depth + 1), max_size=3)) if depth < 5 else []
    return f"<{tag}>{''.join(children)}</{tag}>"


ROUTER = Router.compile(list(enumerate(RETURNS)), strategy="FWR", optimize="none")


def context(document: bytes) -> DocumentContext:
    parser = ROUTER._parser
    return DocumentContext(run(ROUTER._dfa, parser.events(document, None), parser.limits.max_depth))


@settings(max_examples=150, deadline=None)
@given(trees())
def test_the_group_of_each_anchor_matches_grouping_the_tuples(document: str) -> None:
    ctx = context(document.encode())
    checked = 0
    for sid in ROUTER.subscription_ids:
        for item in ROUTER._plans[sid].returns:
            plan, field = item.plan, item.pattern.base - 1
            truth = _group_by(plan.tuples(ctx), field, dedupe=True)
            for anchor in range(len(ctx.nodes)):
                assert plan.group(ctx, field, anchor) == truth.get(anchor, []), (sid, anchor, document)
            checked += 1
    assert checked == len(RETURNS)


def test_selections_with_a_common_test_run_it_once_per_node() -> None:
    """Selections of different patterns sharing a test share its outcome for each node."""
    from feedrouter.lang import parse
    from feedrouter.plan.operators import Selection
    from feedrouter.plan.patterns import absolute_pattern

    ctx = context(b'<a><b id="1"/><b id="2"/><b id="1" x="y"/></a>')
    one = Selection(absolute_pattern(parse("//b[@id = 1]").body.path))  # type: ignore[union-attr]
    both = Selection(absolute_pattern(parse("//b[@id = 1][@x]").body.path))  # type: ignore[union-attr]
    tuples = [(1,), (2,), (3,)]  # the three b elements (a is node 0)
    assert one.apply(ctx, tuples) == [(1,), (3,)]
    shared = dict(ctx.outcomes)
    assert len(shared) == 3  # @id = 1 on each b
    assert both.apply(ctx, tuples) == [(3,)]
    assert all(ctx.outcomes[key] is outcome for key, outcome in shared.items())
    assert len(ctx.outcomes) == 5  # only @x was new, and only on the two b that passed @id = 1
