"""Find subscriptions that can never match a document valid against the DTD (paper 003 §3).

Walks the pattern tree with the set of elements each step can bind; an empty set, or a test on an
attribute or text no such element can have, proves the pattern never matches. The subscription is
still accepted; the reason becomes a warning a user can act on.
"""

from __future__ import annotations

from feedrouter.engine.nfa import WILDCARD
from feedrouter.lang.ast import Axis
from feedrouter.plan.patterns import PathPattern, TestKind
from feedrouter.schema import DtdGraph

_DOCUMENT = "#document"


def never_matches(pattern: PathPattern, graph: DtdGraph) -> str | None:
    """Why ``pattern`` can never match under ``graph``, or None when it may."""
    return _walk(pattern, graph, 0, frozenset({_DOCUMENT}))


def _walk(pattern: PathPattern, graph: DtdGraph, start: int, context: frozenset[str]) -> str | None:
    for i in range(start, len(pattern.nav)):
        step = pattern.nav[i]
        if step.tag != WILDCARD and (step.tag.startswith("{") or ":" in step.tag):
            return None  # namespaced names: the DTD does not tell
        reachable = _below(graph, context, step.axis)
        selected = reachable if step.tag == WILDCARD else reachable & {step.tag}
        if not selected:
            where = "the document" if context == {_DOCUMENT} else "/".join(sorted(context))
            how = "a child" if step.axis is Axis.CHILD else "a descendant"
            return f"the DTD allows no '{step.tag}' as {how} of {where} (step {i + 1})"
        reason = _tests_impossible(pattern, graph, i, selected) or _branches_impossible(
            pattern, graph, i, selected
        )
        if reason:
            return reason
        context = selected
    return None


def _below(graph: DtdGraph, context: frozenset[str], axis: Axis) -> frozenset[str]:
    out: set[str] = set()
    for name in context:
        if name == _DOCUMENT:
            out |= {graph.root} if axis is Axis.CHILD else {graph.root} | graph.reachable(graph.root)
        else:
            out |= graph.children(name) if axis is Axis.CHILD else graph.reachable(name)
    return frozenset(out)


def _tests_impossible(pattern: PathPattern, graph: DtdGraph, i: int, names: frozenset[str]) -> str | None:
    for test in pattern.tests[i]:
        if test.kind in (TestKind.ATTR_CMP, TestKind.ATTR_EXISTS):
            if test.attribute.startswith("{") or ":" in test.attribute:
                continue
            if not any(test.attribute in graph.attributes(n) for n in names):
                return f"the DTD declares no attribute '{test.attribute}' on {'/'.join(sorted(names))}"
        elif test.kind in (TestKind.TEXT_CMP, TestKind.TEXT_EXISTS) and not any(
            graph.has_text(n) for n in names
        ):
            return f"the DTD gives {'/'.join(sorted(names))} no text content"
    return None


def _branches_impossible(pattern: PathPattern, graph: DtdGraph, i: int, names: frozenset[str]) -> str | None:
    for branch in pattern.branches:
        if branch.field == i and not branch.negated:  # a negation never requires anything
            reason = _walk(branch.pattern, graph, i + 1, names)
            if reason:
                return reason
    return None
