"""Resolve ``*`` child steps the DTD fixes to one element name (paper 003 §3)."""

from __future__ import annotations

from feedrouter.engine.nfa import WILDCARD, NavPath, NavStep
from feedrouter.lang.ast import Axis
from feedrouter.plan.dtd_names import dtd_name
from feedrouter.plan.optimize import RuleContext
from feedrouter.plan.patterns import Branch, PathPattern
from feedrouter.schema import DtdGraph


def resolve_wildcards(pattern: PathPattern, context: RuleContext) -> PathPattern:
    """``pattern`` with each ``*`` child step the DTD allows only one element for named after it."""
    if context.graph is None:
        return pattern
    return _resolve(pattern, context.graph, context, ())


def _resolve(pattern: PathPattern, graph: DtdGraph, context: RuleContext, at: tuple[int, ...]) -> PathPattern:
    nav, notes = _resolved_nav(pattern.nav, graph)
    for text in notes:
        context.note(at, text)
    # the steps keep their places: tests and branch fields stay as they are
    branches = tuple(
        Branch(b.field, _resolve(b.pattern, graph, context, (*at, k)), b.negated)
        for k, b in enumerate(pattern.branches)
    )
    return PathPattern(nav, pattern.base, pattern.tests, branches)


def _resolved_nav(nav: NavPath, graph: DtdGraph) -> tuple[NavPath, list[str]]:
    steps, notes = list(nav), []
    for i, step in enumerate(steps):
        if step.tag != WILDCARD or step.axis is not Axis.CHILD:
            continue
        if i == 0:
            candidates = frozenset({graph.root})
        else:
            parent = dtd_name(graph, steps[i - 1].tag)
            if parent is None:
                continue
            candidates = graph.children(parent)
        if len(candidates) == 1:
            (only,) = candidates
            if ":" not in only:
                steps[i] = NavStep(Axis.CHILD, only)
                notes.append(f"rewrite: /* -> /{only} (the only element the DTD allows there)")
    return tuple(steps), notes
